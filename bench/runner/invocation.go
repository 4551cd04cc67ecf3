package runner

import (
	"fmt"
	"io"
	"os"
)

// Invocation is how a bench that runs hindsight as processes of its own
// (import, watch, longsession, nodes) is run: what it runs, where it
// works and where its result goes.
type Invocation struct {
	// Self runs hindsight: the binary, or a test binary that re-runs main;
	// Env is added to the environment of what it runs.
	Self    []string
	Env     []string
	Dir     string // where to make the scratch directory; "" = the system's temporary directory
	Out     string // directory for the report and result.json; "" = none
	JSON    bool   // print only the JSON result, no progress
	Command string // the command line, for the report
}

// start checks that there is a hindsight to run and makes the scratch
// directory of the bench named name under Dir; the caller removes it.
// progress is where the bench's progress goes: stderr, or nowhere with
// JSON.
func (v Invocation) start(name string, stderr io.Writer) (scratch string, progress io.Writer, err error) {
	if len(v.Self) == 0 {
		return "", nil, fmt.Errorf("bench %s: no hindsight command to run", name)
	}
	scratch, err = os.MkdirTemp(v.Dir, "hindsight-bench-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	progress = stderr
	if v.JSON {
		progress = io.Discard
	}
	return scratch, progress, nil
}
