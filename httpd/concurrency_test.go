package httpd_test

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentWriters: 32 clients each POST 50 single messages, half to one
// shared session (pairs of clients sending the very same messages) and half
// to a session of their own. Every request succeeds, every message is stored
// exactly once, and messageCount matches; kvtest's Check at cleanup verifies
// the indexes.
func TestConcurrentWriters(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	const writers, perWriter = 32, 50
	var wg sync.WaitGroup
	errs := make(chan string, writers*perWriter)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perWriter {
				var body string
				if j%2 == 0 {
					// Writers w and w+16 send identical messages to the shared session.
					body = fmt.Sprintf(`{"sessionExternalId":"shared","externalId":"m-%d-%d","role":"user","source":"pi","textContent":"hello %d %d"}`, w%16, j, w%16, j)
				} else {
					body = fmt.Sprintf(`{"sessionExternalId":"own-%d","externalId":"m-%d","role":"assistant","source":"pi","parts":[{"type":"text","content":"reply %d"}]}`, w, j, j)
				}
				r, err := a.do("POST", "/sync/message", key, body)
				if err != nil {
					errs <- err.Error()
				} else if r.status != 200 {
					errs <- fmt.Sprintf("writer %d request %d: %d %s", w, j, r.status, r.body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		return
	}
	l := a.list(key, "?limit=500")
	if len(l.Sessions) != 1+writers {
		t.Fatalf("%d sessions, want %d (one shared, one per writer)", len(l.Sessions), 1+writers)
	}
	want := map[string]int{"shared": 16 * perWriter / 2}
	for w := range writers {
		want[fmt.Sprintf("own-%d", w)] = perWriter / 2
	}
	for _, s := range l.Sessions {
		g := a.get(key, s.ID)
		seen := map[string]bool{}
		for _, m := range g.Messages {
			if seen[m.ExternalID] {
				t.Errorf("%s: message %s stored twice", s.ExternalID, m.ExternalID)
			}
			seen[m.ExternalID] = true
		}
		if len(g.Messages) != want[s.ExternalID] || s.MessageCount != int64(want[s.ExternalID]) {
			t.Errorf("%s: %d messages, messageCount %d; want %d", s.ExternalID, len(g.Messages), s.MessageCount, want[s.ExternalID])
		}
	}
	st := a.ok("GET", "/api/stats", key, nil)
	if total := float64(16*perWriter/2 + writers*perWriter/2); st["messageCount"] != total {
		t.Errorf("stats messageCount %v, want %v", st["messageCount"], total)
	}
}

// TestConcurrentBatchesAndSessions mixes batches, session upserts and reads
// of the same sessions from many clients.
func TestConcurrentBatchesAndSessions(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	const clients = 16
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				switch j % 3 {
				case 0:
					r, err := a.do("POST", "/sync/batch", key, fmt.Sprintf(`{"sessions":[{"externalId":"s%d","title":"t%d"}],
					  "messages":[{"sessionExternalId":"s%d","externalId":"b-%d-%d","role":"user"},{"sessionExternalId":"common","externalId":"c-%d","role":"user"}]}`,
						j, c, j, c, j, j))
					if err != nil {
						t.Error(err)
					} else if r.status != 200 {
						t.Errorf("batch: %d %s", r.status, r.body)
					}
				case 1:
					if r, err := a.do("POST", "/sync/session", key, fmt.Sprintf(`{"externalId":"s%d","promptTokens":%d}`, j-1, c)); err != nil || r.status != 200 {
						t.Errorf("session: %v %+v", err, r)
					}
				case 2:
					if r, err := a.do("GET", "/api/sessions?limit=5", key, nil); err != nil || r.status != 200 {
						t.Errorf("list: %v %+v", err, r)
					}
				}
			}
		}()
	}
	wg.Wait()
	// Messages b-<client>-<j> for j in {0,3,6,9}: 4 sessions x 16 clients;
	// "common" holds c-0, c-3, c-6, c-9 exactly once each.
	for _, s := range a.list(key, "?limit=500").Sessions {
		want := int64(clients)
		if s.ExternalID == "common" {
			want = 4
		}
		if s.MessageCount != want {
			t.Errorf("%s: messageCount %d, want %d", s.ExternalID, s.MessageCount, want)
		}
	}
}
