package importer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// eachLine feeds fn every non-blank line of r, numbered from first (the
// number of the first line r holds; 1 for a whole file). It returns how many
// bytes of r it consumed and how many lines, so a follower can save the pair
// and later feed only what was appended: open the file, seek to the offset,
// and call eachLine again with the next line number and a reader that keeps
// its state (the readers' per-file state machines are built for that).
//
// With final, a last line without a newline is fed too: an import reads the
// file as it is. Without final it is left unconsumed, since a writer may be
// in the middle of it.
func eachLine(r io.Reader, first int, final bool, fn func(n int, line []byte)) (consumed int64, lines int, err error) {
	br := bufio.NewReaderSize(r, 1<<20)
	n := first
	for {
		line, err := br.ReadBytes('\n')
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		if complete || (final && len(line) > 0) {
			if len(bytes.TrimSpace(line)) > 0 {
				fn(n, line)
			}
			n++
			lines++
			consumed += int64(len(line))
		}
		if errors.Is(err, io.EOF) {
			return consumed, lines, nil
		}
		if err != nil {
			return consumed, lines, err
		}
	}
}

// readLines feeds fn every non-blank line of the file at path, numbered
// from 1.
func readLines(path string, fn func(n int, line []byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, _, err := eachLine(f, 1, true, fn); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
