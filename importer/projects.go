package importer

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Some assistants keep their history inside each project (aider's
// .aider.chat.history.md, SpecStory's .specstory/history), so their default
// root is the home directory and finding the histories means looking through
// the user's projects. walkProjects bounds that search: it visits root and
// the directories at most projectDepth levels below it (~/code/org/repo is
// three), never follows symbolic links, skips hidden directories and the
// directories that hold dependencies, builds or system data rather than
// projects, and stops after projectDirs directories.
const (
	projectDepth = 4
	projectDirs  = 50_000
)

// notProjects are directory names walkProjects never enters.
var notProjects = map[string]bool{
	"node_modules": true, "vendor": true, "target": true, "dist": true, "build": true,
	"__pycache__": true, "venv": true, "site-packages": true, "Library": true, "AppData": true,
	"Applications": true, "snap": true, "proc": true, "sys": true,
}

// walkProjects calls visit for root and each directory below it within the
// bounds above. A directory visit reports done for is not entered.
func walkProjects(root string, visit func(dir string) (done bool)) {
	root = filepath.Clean(root)
	seen := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // unreadable directories and files are not projects
		}
		if p != root {
			name := d.Name()
			if strings.HasPrefix(name, ".") || notProjects[name] || isGoModuleCache(p) {
				return filepath.SkipDir
			}
			if rel, err := filepath.Rel(root, p); err == nil && strings.Count(rel, string(filepath.Separator)) >= projectDepth {
				return filepath.SkipDir
			}
		}
		seen++
		if seen > projectDirs {
			return filepath.SkipAll
		}
		if visit(p) {
			return filepath.SkipDir
		}
		return nil
	})
}

// isGoModuleCache: GOPATH's pkg directory holds downloaded modules, some of
// which commit assistants' histories of their own.
func isGoModuleCache(p string) bool {
	return filepath.Base(p) == "pkg" && isDir(filepath.Join(p, "mod", "cache"))
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
