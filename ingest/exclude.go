package ingest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ProjectGlobs are the projects whose sessions the server never keeps
// (HINDSIGHT_EXCLUDE_PROJECTS). A session write whose project path or
// project name matches one of the patterns is dropped; a stored session it
// names is deleted; either way the session gets a tombstone with reason
// "excluded", so its later messages (which carry no project) are dropped
// too.
//
// Patterns are globs in doublestar's syntax: * and ? within one path
// element, [abc] and [a-z] classes, {a,b} alternatives, and ** for any
// number of elements, so /home/me/clients/** is that directory and
// everything under it, and **/secret-* is any project whose last element
// starts with secret-. A pattern matches the whole path or the whole name:
// secret-* matches the project name secret-api, not the path
// /src/secret-api. Paths are matched with / as the separator; a Windows
// path's backslashes are read as / (so write patterns with /; a backslash
// in a pattern escapes the character after it).
//
// The zero value excludes nothing.
type ProjectGlobs struct {
	patterns []string
}

// ParseProjectGlobs parses a comma-separated list of patterns (commas
// inside {a,b} belong to the pattern). Blank entries are ignored; a
// malformed pattern is an error naming it.
func ParseProjectGlobs(list string) (ProjectGlobs, error) {
	var g ProjectGlobs
	for _, p := range splitPatterns(list) {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !doublestar.ValidatePattern(p) {
			return ProjectGlobs{}, fmt.Errorf("malformed pattern %q", p)
		}
		if !slices.Contains(g.patterns, p) {
			g.patterns = append(g.patterns, p)
		}
	}
	return g, nil
}

// splitPatterns splits list at the commas outside braces and brackets.
func splitPatterns(list string) []string {
	var out []string
	depth, start := 0, 0
	inClass := false
	for i := 0; i < len(list); i++ {
		switch c := list[i]; {
		case c == '\\':
			i++ // the escaped character is never a separator
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '{':
			depth++
		case c == '}' && depth > 0:
			depth--
		case c == ',' && depth == 0:
			out = append(out, list[start:i])
			start = i + 1
		}
	}
	return append(out, list[start:])
}

// Empty reports whether g excludes nothing.
func (g ProjectGlobs) Empty() bool { return len(g.patterns) == 0 }

// Patterns returns the patterns, in the order given.
func (g ProjectGlobs) Patterns() []string { return slices.Clone(g.patterns) }

// String is the list as it was given (normalised: trimmed, no blanks).
func (g ProjectGlobs) String() string { return strings.Join(g.patterns, ",") }

// Has reports whether pattern is one of g's.
func (g ProjectGlobs) Has(pattern string) bool { return slices.Contains(g.patterns, pattern) }

// Match returns the first pattern that matches the project path or the
// project name; ok is false when none does (and for a session with
// neither).
func (g ProjectGlobs) Match(projectPath, projectName string) (pattern string, ok bool) {
	if len(g.patterns) == 0 || projectPath == "" && projectName == "" {
		return "", false
	}
	projectPath = strings.ReplaceAll(projectPath, `\`, "/")
	for _, p := range g.patterns {
		for _, name := range []string{projectPath, projectName} {
			if name != "" && doublestar.MatchUnvalidated(p, name) {
				return p, true
			}
		}
	}
	return "", false
}
