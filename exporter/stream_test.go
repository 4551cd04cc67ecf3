package exporter_test

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/exporter"
	"github.com/hindsight-dev/hindsight/kv"
)

// generated yields n messages made on the fly (about 450 bytes each: user,
// assistant with a tool call, tool result, assistant), so the iterator itself
// holds none of them.
func generated(n int, consumed *int) exporter.Messages {
	return func(yield func(kv.Message) error) error {
		for i := range n {
			m := kv.Message{ID: fmt.Sprintf("m%015d", i), SessionID: "sessg00000000000", Seq: uint64(i), CreatedAt: t0 + int64(i)}
			body := fmt.Sprintf("message %d in /home/alice/p: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 15))
			switch i % 4 {
			case 0:
				m.Role, m.TextContent = "user", &body
			case 1:
				m.Role, m.Parts = "assistant", []kv.Part{text(body), call("Bash", `{"command":"ls /home/alice"}`)}
			case 2:
				m.Role, m.Parts = "tool", []kv.Part{result("Bash", body)}
			default:
				m.Role, m.Parts = "assistant", []kv.Part{text(body)}
			}
			if consumed != nil {
				*consumed++
			}
			if err := yield(m); err != nil {
				return err
			}
		}
		return nil
	}
}

// heapProbe is an io.Writer that discards what it gets and, every `every`
// bytes, collects garbage and records the live heap: if a writer built its
// output (or kept its input) in memory, the peak would grow with the export.
type heapProbe struct {
	n, next, every int64
	base, peak     uint64
}

func newHeapProbe(every int64) *heapProbe {
	p := &heapProbe{every: every, next: every}
	p.base = liveHeap()
	return p
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // the second empties sync.Pools kept by the first
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func (p *heapProbe) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.n >= p.next {
		p.peak = max(p.peak, liveHeap())
		p.next += p.every
	}
	return len(b), nil
}

func (p *heapProbe) growth() int64 { return int64(p.peak) - int64(p.base) }

// TestStreamingMemory exports 50,000 messages in each streaming shape and
// checks that the live heap stays flat while tens of megabytes go out.
func TestStreamingMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("exports 50,000 messages per format")
	}
	const n = 50_000
	const limit = 8 << 20 // the messages alone are over 20 MiB
	session := kv.Session{ID: "sessg00000000000", Title: "big", Eval: kv.Eval{ExpectedOutput: "ideal"}}
	tests := []struct {
		name  string
		write func(w io.Writer) error
	}{
		{"json", func(w io.Writer) error {
			return exporter.WriteSession(w, exporter.JSON, session, generated(n, nil), exporter.Options{IncludeTools: true})
		}},
		{"markdown", func(w io.Writer) error {
			return exporter.WriteSession(w, exporter.Markdown, session, generated(n, nil), exporter.Options{IncludeTools: true})
		}},
		{"chat-jsonl", func(w io.Writer) error {
			return exporter.WriteEval(w, exporter.ChatJSONL, one(session, generated(n, nil)), exporter.Options{IncludeTools: true})
		}},
		{"deepeval", func(w io.Writer) error {
			// Small context: the format repeats it per exchange, and the test
			// is about memory, not about writing gigabytes.
			return exporter.WriteEval(w, exporter.DeepEval, one(session, generated(n, nil)), exporter.Options{MaxContextMessages: 4})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newHeapProbe(2 << 20)
			if err := tt.write(p); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d messages, %.1f MiB written, live heap growth %.2f MiB (baseline %.2f MiB)",
				n, float64(p.n)/(1<<20), float64(p.growth())/(1<<20), float64(p.base)/(1<<20))
			if p.n < 16<<20 {
				t.Fatalf("only %d bytes written: the probe never sampled enough", p.n)
			}
			if p.growth() > limit {
				t.Errorf("live heap grew by %d bytes during the export; want < %d (output must stream)", p.growth(), limit)
			}
		})
	}
}

func one(s kv.Session, msgs exporter.Messages) exporter.Sessions {
	return func(yield func(exporter.Session) error) error {
		return yield(exporter.Session{Session: s, Messages: msgs})
	}
}

type failingWriter struct{ left int }

var errBroken = errors.New("broken pipe")

func (w *failingWriter) Write(b []byte) (int, error) {
	if w.left < len(b) {
		return 0, errBroken
	}
	w.left -= len(b)
	return len(b), nil
}

// TestWriteErrorStopsReading: when the client goes away the export stops
// reading messages instead of formatting the rest for nobody.
func TestWriteErrorStopsReading(t *testing.T) {
	const n = 20_000
	for _, f := range exporter.EvalFormats {
		t.Run(string(f), func(t *testing.T) {
			consumed := 0
			err := exporter.WriteEval(&failingWriter{left: 200 << 10}, f, one(kv.Session{ID: "sessg00000000000"}, generated(n, &consumed)), exporter.Options{})
			if !errors.Is(err, errBroken) {
				t.Fatalf("err = %v, want the writer's error", err)
			}
			if consumed >= n {
				t.Errorf("read all %d messages after the writer failed", consumed)
			}
		})
	}
	consumed := 0
	err := exporter.WriteSession(&failingWriter{left: 200 << 10}, exporter.Markdown, kv.Session{ID: "sessg00000000000"}, generated(n, &consumed), exporter.Options{})
	if !errors.Is(err, errBroken) || consumed >= n {
		t.Errorf("markdown: err %v after %d of %d messages", err, consumed, n)
	}
}
