package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TranscriptFile is one real transcript of the transcripts dataset
// (../shared/datasets/transcripts): a row of its manifest.tsv.
type TranscriptFile struct {
	Agent string // the dataset directory, the importer's agent name
	Name  string // the file's name in that directory
	Repo  string // the public repository it was copied from
	Path  string // its path in that repository: where the assistant keeps it under $HOME
	Bytes int64
}

// ReadTranscripts reads dir/manifest.tsv.
func ReadTranscripts(dir string) ([]TranscriptFile, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.tsv"))
	if err != nil {
		return nil, err
	}
	var out []TranscriptFile
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		col := strings.Split(line, "\t")
		if i == 0 && len(col) > 0 && col[0] == "agent" {
			continue // a header
		}
		if len(col) < 4 {
			return nil, fmt.Errorf("manifest.tsv:%d: want agent, file, repo, path[, commit, bytes], got %q", i+1, line)
		}
		f := TranscriptFile{Agent: col[0], Name: col[1], Repo: col[2], Path: col[3]}
		if len(col) >= 6 {
			f.Bytes, _ = strconv.ParseInt(col[5], 10, 64)
		}
		out = append(out, f)
	}
	return out, nil
}

// RebuildTranscripts copies files from the dataset at dir to their original
// paths under home (place, when not nil, chooses another path relative to
// home) and returns where each went.
func RebuildTranscripts(dir, home string, files []TranscriptFile, place func(TranscriptFile) string) ([]string, error) {
	out := make([]string, len(files))
	for i, f := range files {
		rel := f.Path
		if place != nil {
			rel = place(f)
		}
		dst := filepath.Join(home, filepath.FromSlash(rel))
		data, err := os.ReadFile(filepath.Join(dir, f.Agent, f.Name))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return nil, err
		}
		out[i] = dst
	}
	return out, nil
}

// RepoPlace puts each file under a directory of its repository's own,
// <owner>__<repo>/<path>: for files whose original paths collide, such as
// the .aider.chat.history.md at the root of every repository.
func RepoPlace(f TranscriptFile) string {
	return strings.ReplaceAll(f.Repo, "/", "__") + "/" + f.Path
}
