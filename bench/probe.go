package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// LiveProbe is the live-sync probe of bench ingest and bench load: while a
// bulk upload runs, one client syncs one message a second the way a plugin
// does (POST /sync/session once, then POST /sync/message) and polls
// full-text search over HTTP (GET /api/search?type=fulltext) until the
// message's session is found. Delay is from sending the message until the
// first search that finds it: the write, the indexer and the search, as a
// user of the plugin sees them.
type LiveProbe struct {
	N      int     `json:"n"`
	P50ms  float64 `json:"p50_ms"`
	P99ms  float64 `json:"p99_ms"`
	Maxms  float64 `json:"max_ms"`
	Missed int     `json:"missed,omitempty"` // messages not found within probeTimeout (counted at that delay)
	// The part of the delay spent on the POST /sync/message itself (until
	// its 200: the write is committed), the rest being indexing and search.
	WriteP50ms float64 `json:"write_p50_ms"`
	WriteP99ms float64 `json:"write_p99_ms"`
}

const (
	probeEvery   = time.Second
	probePoll    = 20 * time.Millisecond
	probeTimeout = 60 * time.Second
)

// StartProbe starts probing as c's user, on connections of its own, into
// the session with external id sessionID, and returns a function that
// stops it and returns the delays measured. A failing request ends the
// probe; stop returns its error.
func StartProbe(ctx context.Context, c *Client, sessionID string) (stop func() (LiveProbe, error)) {
	ctx, cancel := context.WithCancel(ctx)
	c = &Client{URL: c.URL, Key: c.Key, HTTP: &http.Client{Timeout: probeTimeout}}
	var (
		wg     sync.WaitGroup
		delays []time.Duration
		writes []time.Duration
		missed int
		err    error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		err = c.Post(ctx, "/sync/session", fmt.Appendf(nil, `{"externalId":%q,"source":"claude-code","title":"live probe"}`, sessionID))
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		for i := 0; err == nil; i++ {
			word := probeWord(i)
			body, _ := json.Marshal(map[string]any{"sessionExternalId": sessionID, "externalId": fmt.Sprintf("%s-%d", sessionID, i),
				"role": "user", "source": "claude-code", "textContent": "please check the " + word + " handler again"})
			start := time.Now()
			if err = c.Post(ctx, "/sync/message", body); err != nil {
				break
			}
			writes = append(writes, time.Since(start))
			var found bool
			for !found {
				if found, err = c.FullTextFinds(ctx, word); err != nil {
					break
				}
				if !found && time.Since(start) >= probeTimeout {
					missed++
					break
				}
				if !found {
					select {
					case <-time.After(probePoll):
					case <-ctx.Done():
						err = ctx.Err()
					}
				}
			}
			if err != nil {
				break
			}
			delays = append(delays, time.Since(start))
			select {
			case <-tick.C:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
	}()
	return func() (LiveProbe, error) {
		cancel()
		wg.Wait()
		if errors.Is(err, context.Canceled) {
			err = nil // stopped, not failed
		}
		return LiveProbe{N: len(delays), P50ms: millis(Percentile(delays, 50)), P99ms: millis(Percentile(delays, 99)),
			Maxms: millis(Percentile(delays, 100)), Missed: missed,
			WriteP50ms: millis(Percentile(writes, 50)), WriteP99ms: millis(Percentile(writes, 99))}, err
	}
}

// probeWord is a word no generated session contains, a new one per
// message: "zqv" and i in letters (digits would be split off by the
// analyzer).
func probeWord(i int) string {
	b := []byte("zqv")
	for {
		b = append(b, byte('a'+i%26))
		i /= 26
		if i == 0 {
			return string(b) + "x"
		}
	}
}

// FullTextFinds reports whether a full-text search for q returns a result.
func (c *Client) FullTextFinds(ctx context.Context, q string) (bool, error) {
	u := fmt.Sprintf("%s/api/search?type=fulltext&limit=1&q=%s", c.URL, url.QueryEscape(q))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("search: status %d", resp.StatusCode)
	}
	var res struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return false, fmt.Errorf("search: %w", err)
	}
	return len(res.Results) > 0, nil
}
