package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/kv"
)

// postBatches posts numbered batches until stop is closed and records which
// were acknowledged and when.
type poster struct {
	url, key string
	mu       sync.Mutex
	ackedAt  map[int]time.Time
}

func (p *poster) run(stop <-chan struct{}, wg *sync.WaitGroup, first int) {
	defer wg.Done()
	client := &http.Client{Timeout: 10 * time.Second}
	for n := first; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		body := crashBatch(first, n, 10)
		req, _ := http.NewRequest(http.MethodPost, p.url+"/sync/batch", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.key)
		resp, err := client.Do(req)
		if err != nil {
			return
		}
		var res struct{ Errors []string }
		json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && len(res.Errors) == 0 {
			p.mu.Lock()
			p.ackedAt[n] = time.Now()
			p.mu.Unlock()
		}
	}
}

// A backup taken while writes continue holds every write acknowledged before
// it began; restored and started, it answers searches as the original did.
func TestBackupDuringWritesAndRestore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := newKey(t, dir, "crash") // crashBatch sessions are checked under this user
	srv := startServe(t, dir, "--rate-limit", "0")
	p := &poster{url: srv.URL, key: key, ackedAt: map[int]time.Time{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go p.run(stop, &wg, 0)
	go p.run(stop, &wg, 1_000_000)
	time.Sleep(500 * time.Millisecond)

	began := time.Now()
	file := filepath.Join(t.TempDir(), "backup.db")
	out, err := runCmd(t, "backup", "--out", file, "--data", dir)
	if err != nil {
		t.Fatalf("backup while serving: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // writes go on after the backup
	close(stop)
	wg.Wait()
	t.Logf("%s", out)

	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := runCmd(t, "restore", file, "--data", restored); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "restore", file, "--data", restored); err == nil {
		t.Error("restoring over an existing store succeeded")
	}
	st, err := kv.Open(restored, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := 0
	st.View(context.Background(), func(tx *kv.Tx) error {
		u, err := tx.UserByName("crash")
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for n, at := range p.ackedAt {
			if !at.Before(began) {
				continue
			}
			before++
			writer := 0
			if n >= 1_000_000 {
				writer = 1_000_000
			}
			sid, ok := tx.SessionIDByExternal(u.ID, fmt.Sprintf("crash-%d-%d", writer, n))
			if !ok {
				t.Errorf("batch %d acknowledged before the backup began is missing", n)
				continue
			}
			s, _ := tx.Session(u.ID, sid)
			if s.MessageCount != 10 {
				t.Errorf("batch %d has %d of 10 messages", n, s.MessageCount)
			}
		}
		return nil
	})
	st.Close()
	if before == 0 {
		t.Fatal("no write was acknowledged before the backup began")
	}

	// Same searches on the original (stopped writers) and a server on the restore.
	final := filepath.Join(t.TempDir(), "final.db")
	if _, err := runCmd(t, "backup", "--out", final, "--data", dir); err != nil {
		t.Fatal(err)
	}
	restored2 := filepath.Join(t.TempDir(), "restored2")
	if _, err := runCmd(t, "restore", final, "--data", restored2); err != nil {
		t.Fatal(err)
	}
	srv2 := startServe(t, restored2)
	search := func(base, q string) []string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/api/search?limit=100&q="+url.QueryEscape(q), nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res struct{ Results []struct{ ExternalID string } }
		json.NewDecoder(resp.Body).Decode(&res)
		var ids []string
		for _, r := range res.Results {
			ids = append(ids, r.ExternalID)
		}
		slices.Sort(ids)
		return ids
	}
	// The restored server rebuilds its index from the records; until then it
	// finds less. Then every query finds the same sessions as the original.
	p.mu.Lock()
	var probes []string
	for n := range p.ackedAt {
		w := n / 1_000_000 * 1_000_000
		probes = append(probes, fmt.Sprintf("%q", fmt.Sprintf("batch %d/%d", w, n)))
		if len(probes) == 8 {
			break
		}
	}
	p.mu.Unlock()
	// (A query matching more than the page shows is left out: its top 100 may
	// break score ties differently in a rebuilt index.)
	// A bound on liveness, not a timing: under -race on 2 cores shared with
	// other tests, indexing the writers' backlog has taken over 30 s.
	deadline := deadline(t)
	for _, q := range probes {
		// The original may still be indexing the last writes.
		var want []string
		for want = search(srv.URL, q); len(want) == 0; want = search(srv.URL, q) {
			if time.Now().After(deadline) {
				t.Fatalf("the original server finds nothing for %s; its log:\n%s", q, srv.stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for {
			got := search(srv2.URL, q)
			if slices.Equal(got, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("query %s: restored server finds %d sessions, original %d", q, len(got), len(want))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// SIGTERM while batches are in flight: every acknowledged batch survives.
func TestSigtermLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := newKey(t, dir, "crash")
	srv := startServe(t, dir, "--rate-limit", "0")
	p := &poster{url: srv.URL, key: key, ackedAt: map[int]time.Time{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go p.run(stop, &wg, w*1_000_000)
	}
	// SIGTERM once writes are landing (they go on until stop).
	waitUntil(t, "a batch acknowledged", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.ackedAt) > 0
	})
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitErr := srv.cmd.Wait()
	close(stop)
	wg.Wait()
	if waitErr != nil {
		t.Errorf("serve did not exit cleanly on SIGTERM: %v\n%s", waitErr, srv.stderr)
	}
	if !bytes.Contains(srv.stderr.Bytes(), []byte("stopped cleanly")) {
		t.Errorf("no clean-stop log line:\n%s", srv.stderr)
	}
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	st.View(context.Background(), func(tx *kv.Tx) error {
		u, _ := tx.UserByName("crash")
		p.mu.Lock()
		defer p.mu.Unlock()
		for n := range p.ackedAt {
			w := n / 1_000_000 * 1_000_000
			if _, ok := tx.SessionIDByExternal(u.ID, fmt.Sprintf("crash-%d-%d", w, n)); !ok {
				t.Errorf("acknowledged batch %d lost on SIGTERM", n)
			}
		}
		if len(p.ackedAt) == 0 {
			t.Error("nothing was acknowledged before SIGTERM")
		}
		return nil
	})
	_ = os.Remove
}

// runChild runs `hindsight args...` in a child process, so that a crash
// (SIGSEGV, SIGBUS, a panic) is an exit status rather than the end of the
// test binary, and returns its stderr and exit code (-1: killed by a signal).
func runChild(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "HINDSIGHT_TEST_RUN_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stderr.String(), 0
	case errors.As(err, &ee):
		return stderr.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", 0
}

// TestRestoreRefusesBadFiles: restore of an empty file (what a killed
// backup leaves as FILE.partial), of a truncated or of a damaged backup
// exits 1 with a message that names the file, and leaves the data
// directory as it was (absent, or empty: no .restore-* directories).
func TestRestoreRefusesBadFiles(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	newKey(t, data, "alice")
	file := filepath.Join(t.TempDir(), "backup.db")
	if _, err := runCmd(t, "backup", "--out", file, "--data", data); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n := len(good)
	cases := map[string][]byte{"empty": nil}
	for _, cut := range []int{1, 100, 4096, 4097, 3 * 4096, n / 2, n - 4096, n - 1} {
		if cut > 0 && cut < n {
			cases[fmt.Sprintf("truncated to %d of %d bytes", cut, n)] = good[:cut]
		}
	}
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 3))
		d := slices.Clone(good)
		d[r.IntN(len(d))] ^= byte(1 + r.IntN(255))
		cases[fmt.Sprintf("corrupted (seed %d)", seed)] = d
	}
	i := 0
	for name, b := range cases {
		i++
		src := filepath.Join(t.TempDir(), "backup.db")
		if name == "empty" {
			src += ".partial" // exactly what a killed backup leaves
		}
		if err := os.WriteFile(src, b, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "restored")
		exists := i%2 == 0
		if exists {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		stderr, code := runChild(t, "restore", src, "--data", dir)
		if code != 1 || !strings.HasPrefix(stderr, "hindsight: restore: ") || !strings.Contains(stderr, src) {
			t.Errorf("%s: exit %d, stderr:\n%s", name, code, stderr)
		}
		ents, serr := os.ReadDir(dir)
		if exists && (serr != nil || len(ents) != 0) || !exists && !os.IsNotExist(serr) {
			t.Errorf("%s: data directory after a refused restore: %d entries, %v", name, len(ents), serr)
		}
	}
}

// TestBackupAfterKilledBackup: a FILE.partial left by a killed backup does
// not block the next backup to FILE, which replaces it; a backup still
// writing FILE.partial is not disturbed.
func TestBackupAfterKilledBackup(t *testing.T) {
	data := t.TempDir()
	newKey(t, data, "alice")
	file := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(file+".partial", []byte("half a backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "backup", "--out", file, "--data", data); err != nil {
		t.Fatalf("backup over a leftover .partial: %v", err)
	}
	if _, err := os.Stat(file + ".partial"); !os.IsNotExist(err) {
		t.Errorf("FILE.partial still there: %v", err)
	}
	if err := kv.VerifyBackup(file); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "restore", file, "--data", filepath.Join(t.TempDir(), "r")); err != nil {
		t.Fatal(err)
	}

	// A backup in progress holds a lock on its FILE.partial.
	other := filepath.Join(t.TempDir(), "other.db")
	f, err := os.OpenFile(other+".partial", os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	f.WriteString("in progress")
	if _, err := runCmd(t, "backup", "--out", other, "--data", data); err == nil || !strings.Contains(err.Error(), "another backup") {
		t.Errorf("backup beside a running one: %v", err)
	}
	if b, _ := os.ReadFile(other + ".partial"); string(b) != "in progress" {
		t.Errorf("the running backup's file was changed: %q", b)
	}
}
