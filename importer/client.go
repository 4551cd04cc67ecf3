package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/internal/retry"
)

// Client talks to one Hindsight server with one API key. It is safe for
// concurrent use.
//
// A request that fails with 429, 408, a 5xx or a network error is retried up
// to Backoff.Attempts times in all. The wait before retry n is a random
// duration between half and all of Base·2ⁿ⁻¹ (capped at Max), or what the
// server's Retry-After asks for when it sends one (Backoff.schedule). Other statuses are returned
// at once as a *StatusError.
type Client struct {
	URL   string       // base URL, e.g. http://127.0.0.1:7420
	Key   string       // osk_ API key
	HTTP  *http.Client // nil: a client with a 2-minute timeout
	Retry Backoff

	sleep func(context.Context, time.Duration) error // tests replace the wait
}

// Backoff bounds retries. The zero value takes the defaults.
type Backoff struct {
	Attempts int           // tries per request, the first included; 0 = 6
	Base     time.Duration // wait before the first retry; 0 = 500 ms
	Max      time.Duration // longest computed wait; 0 = 30 s
}

// maxRetryAfter caps how long a server's Retry-After can hold one request.
const maxRetryAfter = 5 * time.Minute

func (b Backoff) withDefaults() Backoff {
	if b.Attempts <= 0 {
		b.Attempts = 6
	}
	if b.Base <= 0 {
		b.Base = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	return b
}

// schedule is the waits between tries: the n-th a random duration between
// half and all of Base·2ⁿ⁻¹, which stops growing at Max, without end (the
// caller counts attempts). It is the one retry schedule of the importer: the
// Client's requests and the Watcher's retries of what the server has not
// acknowledged both take it.
func (b Backoff) schedule() backoff.BackOff { return retry.Jittered(b.Base, b.Max) }

// wait is the pause before the next retry of sched, or what the server's
// Retry-After asked for (capped at maxRetryAfter).
func wait(sched backoff.BackOff, retryAfter time.Duration) time.Duration {
	d := sched.NextBackOff()
	if retryAfter > 0 {
		return min(retryAfter, maxRetryAfter)
	}
	return d
}

// StatusError is a response that retrying would not change (or a retryable
// one after the last attempt).
type StatusError struct {
	Method, Path string
	Status       int
	Message      string // the server's error and message
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
}

// Unauthorized reports whether err is the server refusing the API key.
func Unauthorized(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == http.StatusUnauthorized
}

func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 2 * time.Minute}
}

func (c *Client) pause(ctx context.Context, d time.Duration) error {
	if c.sleep != nil {
		return c.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// do sends one request with retries and decodes a 2xx JSON body into out
// (when out is not nil).
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	b := c.Retry.withDefaults()
	sched := b.schedule()
	base := strings.TrimRight(c.URL, "/")
	var last error
	for attempt := 1; ; attempt++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.Key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("User-Agent", "hindsight-import")
		var retryAfter time.Duration
		resp, err := c.httpClient().Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			last = fmt.Errorf("%s %s: %w", method, path, err)
		} else {
			data, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case rerr != nil:
				last = fmt.Errorf("%s %s: read response: %w", method, path, rerr)
			case resp.StatusCode >= 200 && resp.StatusCode < 300:
				if out == nil {
					return nil
				}
				if err := json.Unmarshal(data, out); err != nil {
					return fmt.Errorf("%s %s: response is not the JSON expected: %v", method, path, err)
				}
				return nil
			default:
				se := &StatusError{Method: method, Path: path, Status: resp.StatusCode, Message: errorMessage(data)}
				if !retryable(resp.StatusCode) {
					return se
				}
				last, retryAfter = se, retry.After(resp.Header, time.Now())
			}
		}
		if attempt >= b.Attempts {
			return fmt.Errorf("gave up after %d attempts: %w", attempt, last)
		}
		if err := c.pause(ctx, wait(sched, retryAfter)); err != nil {
			return err
		}
	}
}

// errorMessage extracts {"error","message"} from an error body.
func errorMessage(data []byte) string {
	var e struct{ Error, Message string }
	if json.Unmarshal(data, &e) == nil && (e.Error != "" || e.Message != "") {
		return strings.TrimSpace(e.Error + ": " + e.Message)
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func toMillis(t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	return new(float64(t.UnixMilli()))
}

// nonEmpty is s as an optional field: absent when empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// newSessionPayload is s as a session write. Tokens and cost are always
// sent; empty strings, a zero duration and an unknown start are not.
func newSessionPayload(s *Session) api.SyncSession {
	p := api.SyncSession{
		ExternalID: &s.ExternalID, Source: &s.Source, Title: nonEmpty(s.Title), ProjectPath: nonEmpty(s.ProjectPath),
		ProjectName: nonEmpty(s.ProjectName), GitBranch: nonEmpty(s.GitBranch), Model: nonEmpty(s.Model), Provider: nonEmpty(s.Provider),
		PromptTokens: new(float64(s.PromptTokens)), CompletionTokens: new(float64(s.CompletionTokens)), Cost: &s.Cost,
		CreatedAt: toMillis(s.CreatedAt),
	}
	if s.DurationMs != 0 {
		p.DurationMs = new(float64(s.DurationMs))
	}
	return p
}

func count(n *int64) *float64 {
	if n == nil {
		return nil
	}
	return new(float64(*n))
}

// newMessagePayload is m of s as a message write.
func newMessagePayload(s *Session, m *Message) (api.SyncMessage, error) {
	p := api.SyncMessage{
		SessionExternalID: &s.ExternalID, ExternalID: &m.ExternalID, Role: &m.Role, Source: nonEmpty(s.Source),
		Model: nonEmpty(m.Model), PromptTokens: count(m.PromptTokens), CompletionTokens: count(m.CompletionTokens),
		DurationMs: count(m.DurationMs), CreatedAt: toMillis(m.CreatedAt), Parts: make(api.Parts, 0, len(m.Parts)+1),
	}
	for _, part := range m.Parts {
		b, err := json.Marshal(part)
		if err != nil {
			return p, fmt.Errorf("message %s: %w", m.ExternalID, err)
		}
		p.Parts = append(p.Parts, b)
	}
	if m.SubAgent != nil {
		b, err := json.Marshal(struct {
			Type string `json:"type"`
			*SubAgent
		}{PartSubAgent, m.SubAgent})
		if err != nil {
			return p, fmt.Errorf("message %s: %w", m.ExternalID, err)
		}
		p.Parts = append(p.Parts, b)
	}
	return p, nil
}

// postSession upserts a session and returns its service id.
func (c *Client) postSession(ctx context.Context, p api.SyncSession) (string, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	var res struct{ SessionID string }
	if err := c.do(ctx, http.MethodPost, "/sync/session", body, &res); err != nil {
		return "", err
	}
	return res.SessionID, nil
}

// postMessage upserts one message.
func (c *Client) postMessage(ctx context.Context, body []byte) error {
	return c.do(ctx, http.MethodPost, "/sync/message", body, nil)
}

// postBatch sends an encoded /sync/batch body with keepDates=1.
func (c *Client) postBatch(ctx context.Context, body []byte) (api.SyncBatchResult, error) {
	var res api.SyncBatchResult
	err := c.do(ctx, http.MethodPost, "/sync/batch?keepDates=1", body, &res)
	return res, err
}

// keepsDatesInBatches asks the server, with an empty batch (a no-op), whether
// it honours createdAt in /sync/batch when asked to with keepDates=1. Servers
// that do say so in the response; others ignore the parameter.
func (c *Client) keepsDatesInBatches(ctx context.Context) (bool, error) {
	res, err := c.postBatch(ctx, []byte(`{"sessions":[],"messages":[]}`))
	return res.KeepDates, err
}

// sessions lists every session of the key's user, by external id.
func (c *Client) sessions(ctx context.Context) (map[string]api.Session, error) {
	out := map[string]api.Session{}
	cursor := ""
	for {
		path := "/api/sessions?limit=500"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page api.SessionList
		if err := c.do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return nil, err
		}
		for _, s := range page.Sessions {
			out[s.ExternalID] = s
		}
		if page.NextCursor == "" || page.NextCursor == cursor || len(page.Sessions) == 0 {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

// deletedIDs returns the external ids of the sessions the key's user
// deleted on the server (GET /sync/sessions/list's deletedIds; a server
// without tombstones sends none). The server drops their syncs; the
// importer does not send them.
func (c *Client) deletedIDs(ctx context.Context) (map[string]bool, error) {
	var list api.SyncSessionList
	if err := c.do(ctx, http.MethodGet, "/sync/sessions/list", nil, &list); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(list.DeletedIDs))
	for _, id := range list.DeletedIDs {
		out[id] = true
	}
	return out, nil
}

// storedText is what the server searches for a stored message: its text
// parts, or its textContent when it has none.
func storedText(m api.Message) string {
	var texts []string
	for _, raw := range m.Parts {
		var p struct{ Type, Content string }
		if json.Unmarshal(raw, &p) == nil && p.Type == PartText {
			texts = append(texts, p.Content)
		}
	}
	if len(texts) == 0 && m.TextContent != nil {
		return *m.TextContent
	}
	return strings.Join(texts, "\n\n")
}

// storedResults counts a stored message's tool-result parts.
func storedResults(m api.Message) int {
	n := 0
	for _, raw := range m.Parts {
		var p struct{ Type string }
		if json.Unmarshal(raw, &p) == nil && p.Type == PartToolResult {
			n++
		}
	}
	return n
}

// messages returns a stored session's messages.
func (c *Client) messages(ctx context.Context, id string) ([]api.Message, error) {
	var res api.SessionDetail
	err := c.do(ctx, http.MethodGet, "/api/sessions/get?id="+url.QueryEscape(id), nil, &res)
	return res.Messages, err
}
