package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		pos     []string
		data    string
		usage   bool
		helpErr bool
	}{
		{args: []string{"create", "alice", "--data", "D"}, pos: []string{"create", "alice"}, data: "D"},
		{args: []string{"--data", "D", "create"}, pos: []string{"create"}, data: "D"},
		{args: []string{"create", "--nope"}, usage: true},
		{args: []string{"--data"}, usage: true},
		{args: []string{"-h"}, helpErr: true},
		{args: nil, pos: nil},
	} {
		fs := NewFlags("users", "users create NAME [flags]", io.Discard)
		data := fs.String("data", "", "data directory")
		pos, err := Parse(fs, tt.args)
		switch {
		case tt.helpErr:
			if !errors.Is(err, flag.ErrHelp) {
				t.Errorf("%q: err %v, want flag.ErrHelp", tt.args, err)
			}
		case tt.usage:
			if !IsUsage(err) || !IsUsage(fmt.Errorf("wrapped: %w", err)) {
				t.Errorf("%q: err %v, want a usage error", tt.args, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.args, err)
		case !slices.Equal(pos, tt.pos) || *data != tt.data:
			t.Errorf("%q: positional %q data %q, want %q %q", tt.args, pos, *data, tt.pos, tt.data)
		}
	}
	if IsUsage(errors.New("other")) {
		t.Error("a plain error is not a usage error")
	}
	if err := Usagef("unknown command %q", "x"); !IsUsage(err) || err.Error() != `unknown command "x"` {
		t.Errorf("Usagef: %v", err)
	}
}
