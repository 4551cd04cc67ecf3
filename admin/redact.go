package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/redact"
)

// redactLine is one line of POST /redact's answer: progress, then the
// result or an error.
type redactLine struct {
	Done   int                        `json:"done,omitempty"`
	Total  int                        `json:"total,omitempty"`
	Result *ingest.RedactStoredResult `json:"result,omitempty"`
	Error  string                     `json:"error,omitempty"`
}

// serveRedact runs a redaction of the stored records in the server and
// streams its progress as JSON lines. The run stops when the client goes
// away; it resumes at the next request.
func serveRedact(w http.ResponseWriter, r *http.Request, red Redacter) {
	var req struct{ DryRun bool }
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "the admin request body is not a JSON object"})
		return
	}
	if red == nil {
		w.WriteHeader(http.StatusConflict)
		json.NewEncoder(w).Encode(map[string]string{"error": "the running server does not redact (HINDSIGHT_REDACT=off): restart it with redaction on, or stop it and run this command"})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	last := time.Time{}
	res, err := red(r.Context(), ingest.RedactStoredOptions{DryRun: req.DryRun, Progress: func(done, total int) {
		if done == total || time.Since(last) > 200*time.Millisecond {
			last = time.Now()
			enc.Encode(redactLine{Done: done, Total: total})
			flush()
		}
	}})
	if err != nil {
		enc.Encode(redactLine{Error: err.Error()})
		return
	}
	enc.Encode(redactLine{Result: &res})
}

// Redact applies red to the records stored in dir (hindsight redact):
// directly when no server holds them, else through the running server's
// admin socket, where the server's own redactor and rules apply. via says
// which. progress, when set, is called with (done, total) sessions.
func Redact(ctx context.Context, dir string, red *redact.Redactor, dryRun bool, progress func(done, total int)) (res ingest.RedactStoredResult, via string, err error) {
	st, err := kv.Open(dir, kv.Options{LockTimeout: time.Second})
	if err == nil {
		defer st.Close()
		if red == nil {
			return res, "", errors.New("redaction is off (HINDSIGHT_REDACT=off or --redact=off): nothing to redact with")
		}
		svc := ingest.NewService(st, nil)
		svc.Redact(red)
		res, err = svc.RedactStored(ctx, ingest.RedactStoredOptions{DryRun: dryRun, Progress: progress})
		return res, "directly", err
	}
	if !errors.Is(err, kv.ErrLocked) {
		return res, "", err
	}
	c := newRemote(filepath.Join(dir, Socket)).c
	c.Timeout = 0 // as long as the records take
	body, _ := json.Marshal(map[string]bool{"dryRun": dryRun})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://admin/redact", strings.NewReader(string(body)))
	resp, err := c.Do(req)
	if err != nil {
		return res, "", fmt.Errorf("data directory %s is held by another process whose admin socket does not answer (%v)", dir, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&e)
		if e.Error == "" {
			return res, "", fmt.Errorf("the running server's admin socket answered %q to POST /redact; is it an older hindsight? Upgrade it, or stop it and run this again", resp.Status)
		}
		return res, "", errors.New(e.Error)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l redactLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return res, "", fmt.Errorf("the server's answer to POST /redact: %w", err)
		}
		switch {
		case l.Error != "":
			return res, "", fmt.Errorf("the running server: %s", l.Error)
		case l.Result != nil:
			return *l.Result, "through the running server", nil
		case progress != nil:
			progress(l.Done, l.Total)
		}
	}
	if err := sc.Err(); err != nil {
		return res, "", err
	}
	return res, "", errors.New("the running server's answer to POST /redact ended early; run the command again to resume")
}
