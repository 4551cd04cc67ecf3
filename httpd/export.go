package httpd

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/hindsight-dev/hindsight/evals"
	"github.com/hindsight-dev/hindsight/exporter"
	"github.com/hindsight-dev/hindsight/kv"
)

// Exports stream: the body is written as it is made and never built in
// memory, and the store is read in short transactions.
//
// Why short transactions: a bbolt read transaction holds the mmap lock, and a
// write that has to grow the file waits for every open read transaction, and
// every new one waits behind that write. An export that read its whole
// selection in one transaction while a slow client drained the response could
// stall every sync write and read of the service. So an export reads session
// records one transaction each and messages in chunks of at most
// exportChunkMessages messages or about exportChunkBytes (one transaction per
// chunk), and writes to the client only with no transaction open.
//
// Consistency: the first pass fixes the selection and, for each session, the
// last message sequence number to export (messages synced after it are left
// out), so the body matches X-Export-Sessions and X-Export-TestCases unless a
// message is re-sent with different content during the download.
//
// Errors: headers are set before the first byte. Until the first byte reaches
// the client an error is an ordinary JSON error response. After that the
// status cannot change: if the client went away there is nobody to tell; any
// other failure is logged with the request id and the connection is aborted
// (http.ErrAbortHandler), so the client sees a broken transfer rather than a
// complete-looking truncated file.
// maxExportIDs bounds the ids of one eval export request.
const maxExportIDs = 5000

// storedMessages reads a session's messages below end in short transactions
// (see exporter.StoredMessages).
func (s *Server) storedMessages(ctx context.Context, uid, sid string, end uint64) exporter.Messages {
	return exporter.StoredMessages(ctx, s.cfg.Records, uid, sid, end)
}

// boolParam parses an optional boolean query parameter (true/false/1/0).
func boolParam(q url.Values, name string, def bool) (bool, error) {
	raw := strings.TrimSpace(q.Get(name))
	if raw == "" {
		return def, nil
	}
	v, err := strconv.ParseBool(raw)
	if err != nil {
		return false, errBadRequest(fmt.Sprintf("%s must be true or false, got %q", name, raw))
	}
	return v, nil
}

// exportOptions reads anonymize (default true) and include_tools (default
// tools: true for one session, which is a full record, false for datasets,
// which evaluate the conversation).
func exportOptions(q url.Values, tools bool) (exporter.Options, error) {
	anon, err := boolParam(q, "anonymize", true)
	if err != nil {
		return exporter.Options{}, err
	}
	if tools, err = boolParam(q, "include_tools", tools); err != nil {
		return exporter.Options{}, err
	}
	return exporter.Options{KeepHomeDirs: !anon, IncludeTools: tools}, nil
}

// exportSession: GET /api/export?id=&format=&anonymize=&include_tools=.
// format json (default, inline application/json), markdown (text/markdown
// attachment) or jsonl (application/x-ndjson attachment), named after the
// title. Another user's id is a 404.
func (s *Server) exportSession(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	id := q.Get("id")
	if id == "" {
		return errBadRequest("id is required: pass the session's id from /api/sessions")
	}
	f, err := exporter.ParseSessionFormat(q.Get("format"))
	if err != nil {
		return errBadRequest(err.Error())
	}
	opts, err := exportOptions(q, true)
	if err != nil {
		return err
	}
	uid := UserID(r.Context())
	var sess kv.Session
	err = s.cfg.Records.View(r.Context(), func(tx *kv.Tx) error {
		var err error
		sess, err = tx.Session(uid, id)
		return err
	})
	if isNotFound(err) {
		return errNotFound("no session with id " + strconv.Quote(id) + " in this account")
	} else if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType())
	h.Set("Cache-Control", "no-store")
	if f != exporter.JSON {
		title := sess.Title
		if !opts.KeepHomeDirs {
			title = exporter.Anonymize(title)
		}
		h.Set("Content-Disposition", exporter.Attachment(exporter.FileName(title, sess.ID)+"."+f.Ext()))
	}
	st := exporter.NewDownload(w)
	err = exporter.WriteSession(st, f, sess, s.storedMessages(r.Context(), uid, id, sess.NextSeq), opts)
	return st.Finish(r, err)
}

// exportEvals: GET /api/export/evals?format=&ids=&status=&tags=&source=
// &model=&date_from=&date_to=&anonymize=&include_tools= streams an eval
// dataset (formats: exporter.WriteEval; default deepeval) as an attachment
// hindsight-evals-<format>-<YYYY-MM-DD>.<ext>, with X-Export-Sessions and
// X-Export-TestCases.
//
// Selection: with ids (comma-separated), exactly those sessions, in that
// order, whether or not they are eval-ready (the caller named them); every id
// must be the caller's or the request is a 404. Without ids, the caller's
// eval-ready sessions, most recently reviewed first (the Evals view). The
// filters narrow either: status (any of, comma-separated), tags (all of,
// comma-separated), source, model, and date_from / date_to on createdAt
// (YYYY-MM-DD in UTC, both days included, or millisecond timestamps). An
// empty selection is a 404 with a message.
func (s *Server) exportEvals(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f, err := exporter.ParseEvalFormat(q.Get("format"))
	if err != nil {
		return errBadRequest(err.Error())
	}
	opts, err := exportOptions(q, false)
	if err != nil {
		return err
	}
	filter, err := parseEvalFilter(q)
	if err != nil {
		return err
	}
	ids := splitList(q.Get("ids"))
	if len(ids) > maxExportIDs {
		return errBadRequest(fmt.Sprintf("at most %d ids per export, got %d: filter instead, or export in parts", maxExportIDs, len(ids)))
	}
	uid := UserID(r.Context())

	// First pass: the selection, then the counts the headers need.
	var picks []kv.Session // ID, NextSeq and the sort keys only
	err = s.cfg.Records.View(r.Context(), func(tx *kv.Tx) error {
		picks = picks[:0]
		pick := func(ss kv.Session) {
			picks = append(picks, kv.Session{ID: ss.ID, UpdatedAt: ss.UpdatedAt, NextSeq: ss.NextSeq, Eval: kv.Eval{ReviewedAt: ss.ReviewedAt}})
		}
		if len(ids) == 0 {
			return tx.Sessions(uid, func(ss kv.Session) error {
				if ss.Ready && filter.Match(ss) {
					pick(ss)
				}
				return nil
			})
		}
		for _, id := range ids {
			ss, err := tx.Session(uid, id)
			if isNotFound(err) {
				return errNotFound("no session with id " + strconv.Quote(id) + " in this account")
			} else if err != nil {
				return err
			}
			if filter.Match(ss) {
				pick(ss)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(picks) == 0 {
		if len(ids) > 0 {
			return errNotFound("none of the requested sessions matches the filters")
		}
		return errNotFound("no eval-ready session matches the selection: mark sessions with PATCH /api/sessions/eval {\"ids\": [...], \"evalReady\": true}, or loosen the filters")
	}
	if len(ids) == 0 {
		slices.SortFunc(picks, evals.ByReview)
	}
	return exporter.ServeEvals(w, r, s.cfg.Records, uid, picks, f, opts, s.cfg.Now())
}
