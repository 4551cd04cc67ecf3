package dashboard

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/exporter"
	"github.com/hindsight-dev/hindsight/kv"
)

// Downloads make the same exporter calls as the REST API's GET /api/export
// and GET /api/export/evals, and stream the same way: the body is written as
// it is made, and the store is read in short transactions (session records
// one each, messages in chunks), never while writing to the client, so a slow
// download cannot hold a bbolt read transaction open and stall writers.
// (httpd keeps its own copy of this reader, unexported; if a third user
// appears it belongs in a shared package.)
const (
	exportChunkMessages = 256
	exportChunkBytes    = 1 << 20
	exportFlushBytes    = 256 << 10
)

var errChunkFull = errors.New("chunk full")

// storedMessages iterates over the messages of a session with sequence
// numbers below end, one short read transaction per chunk. It may be called
// more than once (the counting pass, then the writing pass).
func (s *Server) storedMessages(ctx context.Context, uid, sid string, end uint64) exporter.Messages {
	return func(yield func(kv.Message) error) error {
		chunk := make([]kv.Message, 0, exportChunkMessages)
		for next := uint64(0); next < end; {
			err := s.cfg.Store.View(ctx, func(tx *kv.Tx) error {
				chunk = chunk[:0]
				size := 0
				err := tx.MessagesFrom(uid, sid, next, func(m kv.Message) error {
					if m.Seq >= end || len(chunk) == exportChunkMessages || len(chunk) > 0 && size >= exportChunkBytes {
						return errChunkFull
					}
					chunk = append(chunk, m)
					size += 256 + len(m.Parts)*64 + textSize(m)
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
				chunk[i] = kv.Message{}
			}
		}
		return nil
	}
}

func textSize(m kv.Message) int {
	n := 0
	if m.TextContent != nil {
		n += len(*m.TextContent)
	}
	for _, p := range m.Parts {
		n += len(p.Content) + len(p.Args) + len(p.Raw)
	}
	return n
}

// download is the body writer of an export: it flushes every
// exportFlushBytes and remembers whether anything reached the client.
type download struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	wrote   bool
	pending int
	err     error // the first write error: the client went away
}

func newDownload(w http.ResponseWriter) *download {
	return &download{w: w, rc: http.NewResponseController(w)}
}

func (d *download) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.w.Write(p)
	d.wrote = d.wrote || n > 0
	if err != nil {
		d.err = err
		return n, err
	}
	if d.pending += n; d.pending >= exportFlushBytes {
		d.pending = 0
		if err := d.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			d.err = err
			return n, err
		}
	}
	return n, nil
}

// finish turns an export error into the handler's result: before the first
// byte it is an ordinary error page; after it, a client that left needs no
// answer, and any other failure aborts the connection, so the browser shows
// a failed download rather than a complete-looking truncated file.
func (d *download) finish(w http.ResponseWriter, r *http.Request, err error) error {
	switch {
	case err == nil:
		return nil
	case !d.wrote:
		for _, k := range []string{"Content-Disposition", "X-Export-Sessions", "X-Export-TestCases", "Content-Type"} {
			w.Header().Del(k)
		}
		return err
	case d.err != nil || r.Context().Err() != nil:
		return nil
	}
	zerolog.Ctx(r.Context()).Error().Err(err).Str("path", r.URL.Path).Msg("dashboard: export failed after the download began; aborting it")
	panic(http.ErrAbortHandler)
}

func attachment(name string) string {
	return mime.FormatMediaType("attachment", map[string]string{"filename": name})
}

// exportSession: GET /sessions/{id}/export?format=json|markdown|jsonl — the
// export of GET /api/export with its defaults (home directories anonymised,
// tool calls included), as a download named after the title.
func (s *Server) exportSession(w http.ResponseWriter, r *http.Request, v *viewer) error {
	f, err := exporter.ParseSessionFormat(r.URL.Query().Get("format"))
	if err != nil {
		return errBadRequest("Unknown export format: choose json, markdown or jsonl.")
	}
	ss, _, err := s.loadSession(r, v, false)
	if err != nil {
		return err
	}
	opts := exporter.Options{IncludeTools: true}
	h := w.Header()
	h.Set("Content-Type", f.ContentType())
	h.Set("Content-Disposition", attachment(exporter.FileName(exporter.Anonymize(ss.Title), ss.ID)+"."+f.Ext()))
	d := newDownload(w)
	err = exporter.WriteSession(d, f, ss, s.storedMessages(r.Context(), v.user.ID, ss.ID, ss.NextSeq), opts)
	return d.finish(w, r, err)
}

// exportEvals: POST /evals/export — the selected eval-ready sessions (or all
// in the filtered view) as a dataset download, like GET /api/export/evals:
// hindsight-evals-<format>-<date>.<ext>, with X-Export-Sessions and
// X-Export-TestCases, tool calls left out, home directories anonymised.
func (s *Server) exportEvals(w http.ResponseWriter, r *http.Request, v *viewer) error {
	f, err := exporter.ParseEvalFormat(r.PostFormValue("format"))
	if err != nil {
		return errBadRequest("Unknown dataset format.")
	}
	opts := exporter.Options{}
	uid := v.user.ID
	// First pass: fix the selection and each session's last message.
	var picks []kv.Session
	err = s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		sel, err := s.selection(r, tx, v)
		picks = slices.DeleteFunc(sel, func(ss kv.Session) bool { return !ss.Ready })
		return err
	})
	if err != nil {
		return err
	}
	if len(picks) == 0 {
		return errBadRequest("No eval-ready session was selected: tick the sessions to export (or \"all in this view\") and try again.")
	}
	cases := 0
	for _, p := range picks {
		n, err := exporter.CountEval(f, exporter.Session{Session: p, Messages: s.storedMessages(r.Context(), uid, p.ID, p.NextSeq)}, opts)
		if err != nil {
			return err
		}
		cases += n
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType())
	h.Set("Content-Disposition", attachment(fmt.Sprintf("hindsight-evals-%s-%s.%s", f, s.cfg.Now().UTC().Format(time.DateOnly), f.Ext())))
	h.Set("X-Export-Sessions", strconv.Itoa(len(picks)))
	h.Set("X-Export-TestCases", strconv.Itoa(cases))
	// Second pass: stream, re-reading each record (labels may have changed).
	sessions := func(yield func(exporter.Session) error) error {
		for _, p := range picks {
			var ss kv.Session
			err := s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
				var err error
				ss, err = tx.Session(uid, p.ID)
				return err
			})
			if errors.Is(err, kv.ErrNotFound) {
				continue // deleted since the first pass
			} else if err != nil {
				return err
			}
			if err := yield(exporter.Session{Session: ss, Messages: s.storedMessages(r.Context(), uid, p.ID, p.NextSeq)}); err != nil {
				return err
			}
		}
		return nil
	}
	d := newDownload(w)
	err = exporter.WriteEval(d, f, sessions, opts)
	return d.finish(w, r, err)
}
