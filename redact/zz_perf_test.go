package redact

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func loadCorpus(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, _ := gzip.NewReader(f)
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 64<<20)
	var out []string
	for sc.Scan() {
		var d struct{ Title, Text string }
		json.Unmarshal(sc.Bytes(), &d)
		out = append(out, d.Title, d.Text)
	}
	return out
}

func TestPerf(t *testing.T) {
	r, _ := New(Options{})
	for _, name := range []string{"coding-sessions", "cosqa-dev", "scifact-train"} {
		docs := loadCorpus(t, "/work/shared/datasets/"+name+"/corpus.jsonl.gz")
		n := 0
		for _, d := range docs {
			n += len(d)
		}
		runtime.LockOSThread()
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(1, &ru0)
		start := time.Now()
		for _, d := range docs {
			r.String(d)
		}
		syscall.Getrusage(1, &ru1)
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		runtime.UnlockOSThread()
		fmt.Printf("%s: %.1f MB cpu %v = %.1f MB/s (wall %v)\n", name, float64(n)/1e6, cpu, float64(n)/1e6/cpu.Seconds(), time.Since(start))
		var total Counts
		seen := map[string]int{}
		var fps []string
		for _, d := range docs {
			out, c := r.String(d)
			total.Add(c)
			if len(c) == 0 {
				continue
			}
			// align: walk markers in out vs d
			di := 0
			oi := 0
			for _, m := range Markers(out) {
				// text before marker is identical
				di += m.Start - oi
				// find end in d: next char after marker in out
				rest := out[m.End:]
				k := len(rest)
				if k > 20 {
					k = 20
				}
				j := len(d)
				if k > 0 {
					if x := strings.Index(d[di:], rest[:k]); x >= 0 {
						j = di + x
					}
				}
				val := d[di:j]
				key := m.Rule + " " + val
				if seen[key] == 0 {
					a := max(0, di-50)
					fps = append(fps, fmt.Sprintf("%s %q [[%q]]", m.Rule, d[a:di], val))
				}
				seen[key]++
				di = j
				oi = m.End
			}
		}
		sort.Strings(fps)
		for _, f := range fps {
			fmt.Println("   ", f)
		}
	}
}

func BenchmarkCS(b *testing.B) {
	r, _ := New(Options{})
	docs := loadCorpus(nil, "/work/shared/datasets/coding-sessions/corpus.jsonl.gz")
	n := 0
	for _, d := range docs {
		n += len(d)
	}
	b.SetBytes(int64(n))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, d := range docs {
			r.String(d)
		}
	}
}
