package kv_test

import (
	"testing"

	"github.com/hindsight-dev/hindsight/kv"
)

// TestDisplayTitleAndProjectLabel: the one rule for what a session is called
// and filed under, which every front end, export and context answer shows.
func TestDisplayTitleAndProjectLabel(t *testing.T) {
	tests := []struct {
		name           string
		s              kv.Session
		title, project string
	}{
		{"title and name", kv.Session{Title: "Fix login", ProjectName: "web", ProjectPath: "/src/web"}, "Fix login", "web"},
		{"path when no name", kv.Session{Title: "Fix login", ProjectPath: "/src/web"}, "Fix login", "/src/web"},
		{"no title", kv.Session{}, "Untitled session", ""},
		{"white space is no title", kv.Session{Title: " \t\n"}, "Untitled session", ""},
		{"outer white space trimmed", kv.Session{Title: "  Fix  login \n"}, "Fix  login", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.DisplayTitle(); got != tt.title {
				t.Errorf("DisplayTitle() = %q, want %q", got, tt.title)
			}
			if got := tt.s.ProjectLabel(); got != tt.project {
				t.Errorf("ProjectLabel() = %q, want %q", got, tt.project)
			}
		})
	}
}
