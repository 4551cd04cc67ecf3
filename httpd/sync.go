package httpd

import (
	"io"
	"net/http"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// readBody reads the (size-capped) body; an empty body is a 400.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err // *http.MaxBytesError maps to 413
	}
	if len(body) == 0 {
		return nil, errBadRequest("request body is empty: send a JSON object")
	}
	return body, nil
}

func (s *Server) syncSession(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	in, err := ingest.DecodeSession(body, s.cfg.Limits)
	if err != nil {
		return err
	}
	res, err := s.cfg.Ingest.Session(r.Context(), UserID(r.Context()), in)
	if err != nil {
		return err
	}
	return writeSynced(w, "sessionId", res)
}

// writeSynced answers a single-entry sync: the stored entry's id under
// idField, or, for an entry of a deleted session or an excluded project,
// 200 with "ignored" and why (decisions.md), so the plugin does not retry.
func writeSynced(w http.ResponseWriter, idField string, res ingest.Result) error {
	if res.Ignored != "" {
		return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "ignored": res.Ignored})
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ok": true, idField: res.ID})
}

func (s *Server) syncMessage(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	in, err := ingest.DecodeMessage(body, s.cfg.Limits)
	if err != nil {
		return err
	}
	res, err := s.cfg.Ingest.Message(r.Context(), UserID(r.Context()), in)
	if err != nil {
		return err
	}
	return writeSynced(w, "messageId", res)
}

type batchResponse struct {
	OK       bool          `json:"ok"`
	Sessions ingest.Counts `json:"sessions"`
	Messages ingest.Counts `json:"messages"`
	Errors   []string      `json:"errors"`
	// Ignored: entries of deleted sessions or excluded projects,
	// acknowledged and dropped ([] when none, like Errors).
	Ignored []api.SyncIgnored `json:"ignored"`
	// KeepDates echoes ?keepDates=1, so a client knows the dates were kept
	// (a server without the option ignores the parameter and omits this).
	KeepDates bool `json:"keepDates,omitempty"`
}

func (s *Server) syncBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	decode := ingest.DecodeBatch
	if r.URL.Query().Get("keepDates") == "1" {
		decode = ingest.DecodeBatchKeepingDates
	}
	b, err := decode(body, s.cfg.Limits)
	if err != nil {
		return err
	}
	res, err := s.cfg.Ingest.Batch(r.Context(), UserID(r.Context()), b)
	if err != nil {
		return err
	}
	errs := b.Errors
	if errs == nil {
		errs = []string{}
	}
	return writeJSON(w, http.StatusOK, batchResponse{OK: true, Sessions: res.Sessions, Messages: res.Messages, Errors: errs,
		Ignored: res.Ignored, KeepDates: b.KeepDates})
}

// syncSessionsList: GET /sync/sessions/list, the external ids of the
// caller's sessions and, in deletedIds, of their tombstones (importers skip
// those).
func (s *Server) syncSessionsList(w http.ResponseWriter, r *http.Request) error {
	var list api.SyncSessionList
	err := s.cfg.Records.View(r.Context(), func(tx *kv.Tx) error {
		list.SessionIDs = tx.ExternalSessionIDs(UserID(r.Context()))
		list.DeletedIDs = tx.TombstoneIDs(UserID(r.Context()))
		return nil
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list)
}
