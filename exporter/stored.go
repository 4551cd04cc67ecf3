package exporter

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/kv"
)

// Streaming exports read the store in short transactions (session records one
// each, messages in chunks) and write to the client only with no transaction
// open: in bbolt a write that grows the file waits for every open read
// transaction, so a slow download holding one would stall the service.
const (
	chunkMessages = 256
	chunkBytes    = 1 << 20
	flushBytes    = 256 << 10 // flush to the client at least this often
)

// Viewer is the read side of the store; *kv.Store satisfies it.
type Viewer interface {
	View(ctx context.Context, fn func(*kv.Tx) error) error
}

var errChunkFull = errors.New("chunk full")

// StoredMessages iterates over the messages of a session with sequence
// numbers below end (fixed by the caller's first pass, so messages synced
// during a download are left out), reading them in chunks of chunkMessages
// messages or about chunkBytes, one read transaction per chunk. It may be
// called more than once (a counting pass, then the writing pass).
func StoredMessages(ctx context.Context, st Viewer, uid, sid string, end uint64) Messages {
	return func(yield func(kv.Message) error) error {
		chunk := make([]kv.Message, 0, chunkMessages)
		for next := uint64(0); next < end; {
			err := st.View(ctx, func(tx *kv.Tx) error {
				chunk = chunk[:0]
				size := 0
				err := tx.MessagesFrom(uid, sid, next, func(m kv.Message) error {
					if m.Seq >= end || len(chunk) == chunkMessages || (len(chunk) > 0 && size >= chunkBytes) {
						return errChunkFull
					}
					chunk = append(chunk, m)
					size += messageSize(m)
					return nil
				})
				if errors.Is(err, errChunkFull) {
					err = nil
				}
				return err
			})
			if err != nil {
				return err
			}
			if len(chunk) == 0 {
				return nil
			}
			next = chunk[len(chunk)-1].Seq + 1
			for i := range chunk {
				if err := yield(chunk[i]); err != nil {
					return err
				}
				chunk[i] = kv.Message{} // let the exported message go
			}
		}
		return nil
	}
}

func messageSize(m kv.Message) int {
	n := 256
	if m.TextContent != nil {
		n += len(*m.TextContent)
	}
	for _, p := range m.Parts {
		n += len(p.Content) + len(p.Args) + len(p.Raw)
	}
	return n
}

// Download is the body writer of an export over HTTP: it flushes every
// flushBytes and records whether anything reached the client and the first
// write error (the client went away).
type Download struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	wrote   bool
	pending int
	err     error
}

// NewDownload wraps w. Set the headers before the first Write.
func NewDownload(w http.ResponseWriter) *Download {
	return &Download{w: w, rc: http.NewResponseController(w)}
}

func (d *Download) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.w.Write(p)
	d.wrote = d.wrote || n > 0
	if err != nil {
		d.err = err
		return n, err
	}
	if d.pending += n; d.pending >= flushBytes {
		d.pending = 0
		if err := d.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			d.err = err
			return n, err
		}
	}
	return n, nil
}

// Finish turns an export error into the handler's result. Before the first
// byte it is returned (the caller answers with an ordinary error response;
// the download headers are removed). After it the status cannot change: if
// the client went away there is nobody to tell; any other failure is logged
// with the request's logger and the connection is aborted
// (http.ErrAbortHandler), so the client sees a broken transfer rather than a
// complete-looking truncated file.
func (d *Download) Finish(r *http.Request, err error) error {
	switch {
	case err == nil:
		return nil
	case !d.wrote:
		h := d.w.Header()
		for _, k := range []string{"Content-Disposition", "X-Export-Sessions", "X-Export-TestCases", "Content-Type"} {
			h.Del(k)
		}
		return err
	case d.err != nil || r.Context().Err() != nil:
		zerolog.Ctx(r.Context()).Debug().Err(err).Msg("export: client went away")
		return nil
	}
	zerolog.Ctx(r.Context()).Error().Err(err).Str("path", r.URL.Path).Msg("export failed after the response began; aborting the connection")
	panic(http.ErrAbortHandler)
}

// Attachment is a Content-Disposition value for a download named name.
func Attachment(name string) string {
	return mime.FormatMediaType("attachment", map[string]string{"filename": name})
}

// ServeEvals answers with the eval dataset of picks (the selection the
// caller's first pass fixed, see StoredEvals) as GET /api/export/evals and
// the dashboard's export both do: the headers (evalHeaders), then the body
// as it is made (Download). An error before the first byte is returned for
// the caller's ordinary error response.
func ServeEvals(w http.ResponseWriter, r *http.Request, st Viewer, uid string, picks []kv.Session, f EvalFormat, opts Options, now time.Time) error {
	sessions, cases, err := StoredEvals(r.Context(), st, uid, picks, f, opts)
	if err != nil {
		return err
	}
	evalHeaders(w.Header(), f, now, len(picks), cases)
	d := NewDownload(w)
	return d.Finish(r, WriteEval(d, f, sessions, opts))
}

// evalHeaders sets the headers of an eval dataset download: the format's
// type, no caching (the body is the user's data), the attachment
// hindsight-evals-<format>-<YYYY-MM-DD, UTC>.<ext>, and the counts
// X-Export-Sessions and X-Export-TestCases.
func evalHeaders(h http.Header, f EvalFormat, now time.Time, sessions, cases int) {
	h.Set("Content-Type", f.ContentType())
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Disposition", Attachment(fmt.Sprintf("hindsight-evals-%s-%s.%s", f, now.UTC().Format(time.DateOnly), f.Ext())))
	h.Set("X-Export-Sessions", strconv.Itoa(sessions))
	h.Set("X-Export-TestCases", strconv.Itoa(cases))
}

// StoredEvals prepares the download of an eval dataset of the sessions picks
// (fixed by the caller's first pass, each with the NextSeq it had then): it
// counts the test cases now, so the caller can send them in headers before
// the body, and returns the stream WriteEval takes. The stream re-reads each
// session record when it reaches it (labels may have changed; a session
// deleted meanwhile is left out) and its messages in short transactions.
func StoredEvals(ctx context.Context, st Viewer, uid string, picks []kv.Session, f EvalFormat, opts Options) (Sessions, int, error) {
	cases := 0
	for _, p := range picks {
		n, err := CountEval(f, Session{Session: p, Messages: StoredMessages(ctx, st, uid, p.ID, p.NextSeq)}, opts)
		if err != nil {
			return nil, 0, err
		}
		cases += n
	}
	sessions := func(yield func(Session) error) error {
		for _, p := range picks {
			var ss kv.Session
			err := st.View(ctx, func(tx *kv.Tx) error {
				var err error
				ss, err = tx.Session(uid, p.ID)
				return err
			})
			if errors.Is(err, kv.ErrNotFound) {
				continue // deleted since the first pass
			} else if err != nil {
				return err
			}
			if err := yield(Session{Session: ss, Messages: StoredMessages(ctx, st, uid, p.ID, p.NextSeq)}); err != nil {
				return err
			}
		}
		return nil
	}
	return sessions, cases, nil
}
