package dashboard

import (
	"context"
	"net/http"
	"slices"

	"github.com/hindsight-dev/hindsight/exporter"
	"github.com/hindsight-dev/hindsight/kv"
)

// Downloads make the same exporter calls as the REST API's GET /api/export
// and GET /api/export/evals, and stream the same way: the body is written as
// it is made, and the store is read in short transactions (session records
// one each, messages in chunks), never while writing to the client, so a slow
// download cannot hold a bbolt read transaction open and stall writers.
// // storedMessages reads a session's messages below end in short transactions
// (see exporter.StoredMessages).
func (s *Server) storedMessages(ctx context.Context, uid, sid string, end uint64) exporter.Messages {
	return exporter.StoredMessages(ctx, s.cfg.Store, uid, sid, end)
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
	h.Set("Content-Disposition", exporter.Attachment(exporter.FileName(exporter.Anonymize(ss.Title), ss.ID)+"."+f.Ext()))
	d := exporter.NewDownload(w)
	err = exporter.WriteSession(d, f, ss, s.storedMessages(r.Context(), v.user.ID, ss.ID, ss.NextSeq), opts)
	return d.Finish(r, err)
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
	return exporter.ServeEvals(w, r, s.cfg.Store, uid, picks, f, opts, s.cfg.Now())
}
