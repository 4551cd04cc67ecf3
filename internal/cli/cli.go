// Package cli is what hindsight's two commands (hindsight and
// hindsight-bench) share on their command lines: flag sets whose errors
// are usage errors (exit status 2), flags allowed after positional
// arguments, and the help both print.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// UsageError marks a mistake in the command line (exit status 2).
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Usage returns a UsageError saying msg.
func Usage(msg string) error { return &UsageError{msg: msg} }

// Usagef returns a UsageError saying the formatted message.
func Usagef(format string, args ...any) error { return Usage(fmt.Sprintf(format, args...)) }

// IsUsage reports whether err is (or wraps) a UsageError.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}

// NewFlags returns a flag set that reports errors as usage errors and
// prints its help ("Usage: hindsight " + synopsis, then the flags) to
// stderr.
func NewFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: hindsight %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses flags, allowing them before and after positional arguments
// (hindsight users create alice --data DIR), and returns the positional
// ones. A bad flag is a UsageError; -h and --help give flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, Usage(err.Error())
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
