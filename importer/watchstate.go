package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The Watcher's state file records, per file, what the server has
// acknowledged, so that a restarted watcher sends only what came after. It
// is small JSON, rewritten whole through a temporary file and a rename (a
// crash leaves the old file or the new one, never half of one):
//
//	{"version": 1,
//	 "files": {"/home/u/.claude/projects/-p/<id>.jsonl":
//	   {"agent": "claude-code", "dev": 2049, "inode": 1311, "offset": 52133, "line": 41,
//	    "size": 52133, "mtime": "2026-05-02T10:00:01.5Z"}},
//	 "snapshots": {"/home/u/.local/share/opencode/opencode.db":
//	   {"agent": "opencode", "stamp": "...", "sessions": {"ses_1": "9f86d081884c7d65"}}}}
//
// files are followed JSONL files: offset and line are where the lines the
// server acknowledged end (a line boundary; the next line's number), dev and
// inode say which file that was (a file replaced under the same name starts
// again from 0), size and mtime what it was like then. snapshots are files
// re-read whole (SQLite databases, Markdown, JSON documents): stamp is their
// size and time (with the WAL's), sessions the digest of each session the
// server acknowledged. Offsets and digests only move once the server has
// acknowledged what they cover, so a crash or an outage re-sends, never
// skips; the server's upserts make a re-send harmless.
type watchState struct {
	Version   int                       `json:"version"`
	Files     map[string]*fileState     `json:"files"`
	Snapshots map[string]*snapshotState `json:"snapshots"`
}

const watchStateVersion = 1

type fileState struct {
	Agent  string    `json:"agent"`
	Dev    uint64    `json:"dev,omitempty"`
	Inode  uint64    `json:"inode,omitempty"`
	Offset int64     `json:"offset"`
	Line   int       `json:"line"`
	Size   int64     `json:"size"`
	MTime  time.Time `json:"mtime"`
}

type snapshotState struct {
	Agent    string            `json:"agent"`
	Stamp    string            `json:"stamp"`
	Sessions map[string]string `json:"sessions"` // external id -> digest (hex)
}

func newWatchState() *watchState {
	return &watchState{Version: watchStateVersion, Files: map[string]*fileState{}, Snapshots: map[string]*snapshotState{}}
}

// loadWatchState reads the state file at path; a missing file is an empty
// state. A file this version cannot read is an error, not a fresh start:
// starting over would send every session again.
func loadWatchState(path string) (*watchState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newWatchState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the watch state: %w", err)
	}
	st := newWatchState()
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("the watch state %s is not readable JSON (%s); move it away to start over", path, jsonError(err))
	}
	if st.Version != watchStateVersion {
		return nil, fmt.Errorf("the watch state %s has version %d, this hindsight reads %d", path, st.Version, watchStateVersion)
	}
	if st.Files == nil {
		st.Files = map[string]*fileState{}
	}
	if st.Snapshots == nil {
		st.Snapshots = map[string]*snapshotState{}
	}
	return st, nil
}

// save writes the state to path atomically: a temporary file beside it,
// synced, then renamed over it.
func (st *watchState) save(path string) error {
	b, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save the watch state: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save the watch state: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save the watch state: %w", err)
	}
	return nil
}

// DefaultWatchState is where the Watcher keeps its state:
// $XDG_STATE_HOME/hindsight/import-state.json, ~/.local/state/hindsight/...
// when XDG_STATE_HOME is not set.
func DefaultWatchState(home string, getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "hindsight", "import-state.json")
	}
	return filepath.Join(home, ".local", "state", "hindsight", "import-state.json")
}

// fileID names a file across renames: its device and inode (zero where the
// system has none to give, and then only size and time tell files apart).
type fileID struct{ dev, ino uint64 }

func (st *fileState) id() fileID { return fileID{st.Dev, st.Inode} }
