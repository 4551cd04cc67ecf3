package kv_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/hindsight-dev/hindsight/kv"
)

// backupOf fills a store (several users, sessions over many pages, a message
// large enough for overflow pages) and returns its backup, as Store.Backup
// writes it, and the same records as a plain bbolt copy (what an older
// version's backup, or a copy of a stopped server's file, is).
func backupOf(t *testing.T) (backup, plain []byte) {
	t.Helper()
	dir := t.TempDir()
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	users := createUsers(t, st, 3)
	for i, u := range users {
		for j := range 12 {
			putSession(t, st, u.ID, 6, func(k int) string { return prose(100*i + 10*j + k) })
		}
	}
	putSession(t, st, users[0].ID, 1, func(int) string { return strings.Repeat("large ", 4000) })
	var buf bytes.Buffer
	if _, err := st.Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, kv.FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var raw bytes.Buffer
	if err := db.View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(&raw); return err }); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), raw.Bytes()
}

// restoreRefused restores data (written to a file) into a data directory
// that either does not exist or exists empty, requires an error that names
// the file and, if want is set, contains it, and that the directory is as
// it was: absent, or empty (no .restore-* left behind).
func restoreRefused(t *testing.T, name string, data []byte, want string, dirExists bool) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	if dirExists {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	err := kv.Restore(src, dir)
	if err == nil {
		t.Errorf("%s: restore succeeded", name)
	} else {
		if !strings.Contains(err.Error(), src) {
			t.Errorf("%s: error does not name the file: %v", name, err)
		}
		if want != "" && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q, want it to say %q", name, err, want)
		}
	}
	ents, statErr := os.ReadDir(dir)
	switch {
	case !dirExists && !os.IsNotExist(statErr):
		t.Errorf("%s: the data directory was created (%v, %d entries)", name, statErr, len(ents))
	case dirExists && (statErr != nil || len(ents) != 0):
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("%s: the data directory holds %v (%v) after a refused restore", name, names, statErr)
	}
}

// restoredOK restores data and requires a store that opens and passes Check.
func restoredOK(t *testing.T, name string, data []byte) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := kv.Restore(src, dir); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatalf("%s: open the restored store: %v", name, err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("%s: restored store fails Check: %v", name, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%s: restored directory holds %d entries, want the store alone", name, len(ents))
	}
}

// TestRestoreRefusesBadBackups: an empty file (what a killed backup
// leaves), a truncated one, a damaged one or one that is no backup at all
// is refused with a message, before anything is written, and never crashes
// the process.
func TestRestoreRefusesBadBackups(t *testing.T) {
	backup, plain := backupOf(t)
	restoredOK(t, "intact backup", backup)
	restoredOK(t, "plain bbolt copy", plain)
	if len(plain) < 16*4096 {
		t.Fatalf("test store too small: %d bytes", len(plain))
	}

	restoreRefused(t, "empty", nil, "empty", false)
	restoreRefused(t, "empty, directory exists", nil, "empty", true)
	restoreRefused(t, "text", []byte("not a backup\n"), "not a Hindsight backup", false)
	restoreRefused(t, "random", bytes.Repeat([]byte{0xa5, 0x13, 0x77}, 30000), "not a Hindsight backup", true)

	for _, tc := range []struct {
		name string
		data []byte
	}{{"backup", backup}, {"plain copy", plain}} {
		n := len(tc.data)
		for i, cut := range []int{1, 15, 16, 100, 4095, 4096, 4097, 8191, 8192, 8193, 3 * 4096, n / 3, n / 2, n - 4096 - 1, n - 4096, n - 1} {
			if cut <= 0 || cut >= n || tc.name == "backup" && cut == len(plain) {
				continue // (the backup cut to its records alone is a whole plain copy)
			}
			restoreRefused(t, fmt.Sprintf("%s truncated to %d of %d bytes", tc.name, cut, n), tc.data[:cut], "", i%2 == 0)
		}
	}

	// A backup as written is protected end to end: any changed byte is found.
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		data := slices.Clone(backup)
		for range 1 + r.IntN(4) {
			data[r.IntN(len(data))] ^= byte(1 + r.IntN(255))
		}
		restoreRefused(t, fmt.Sprintf("backup corrupted (seed %d)", seed), data, "", seed%2 == 0)
	}
}

// TestRestoreDamagedPlainCopies: a plain bbolt copy carries no checksum, so
// some damage (a byte in a page's unused tail) is harmless and cannot be
// seen. Whatever the damage, restore must not crash or panic: it either
// refuses, leaving the directory as it was, or installs a store that opens
// and passes Check. Damage aims at page headers and element headers, where
// bbolt trusts the file most.
func TestRestoreDamagedPlainCopies(t *testing.T) {
	_, plain := backupOf(t)
	const page = 4096
	pages := len(plain) / page
	refused := 0
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 11))
		data := slices.Clone(plain)
		for range 1 + r.IntN(3) {
			var off int
			switch r.IntN(3) {
			case 0: // a page header or the first elements
				off = r.IntN(pages)*page + r.IntN(64)
			case 1: // anywhere
				off = r.IntN(len(data))
			default: // the meta pages
				off = r.IntN(2)*page + r.IntN(80)
			}
			data[off] ^= byte(1 + r.IntN(255))
		}
		src := filepath.Join(t.TempDir(), "backup.db")
		if err := os.WriteFile(src, data, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "data")
		err := kv.Restore(src, dir)
		if err != nil {
			refused++
			if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
				t.Errorf("seed %d: refused (%v) but the data directory was created", seed, err)
			}
			continue
		}
		st, err := kv.Open(dir, kv.Options{})
		if err != nil {
			t.Fatalf("seed %d: restore accepted a file that does not open: %v", seed, err)
		}
		if err := st.Check(); err != nil {
			t.Errorf("seed %d: restore accepted a file that fails Check: %v", seed, err)
		}
		st.Close()
	}
	if refused == 0 {
		t.Error("no damaged copy was refused")
	}
	t.Logf("%d of 100 damaged plain copies refused", refused)
}
