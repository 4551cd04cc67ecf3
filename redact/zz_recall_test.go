package redact_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/redact"
)

func TestRecallTry(t *testing.T) {
	r, _ := redact.New(redact.Options{})
	miss := map[string]int{}
	tot := map[string]int{}
	shown := map[string]int{}
	for _, s := range bench.SecretCorpus(3, 20) {
		out, _ := r.String(s.Text)
		tot[s.Kind]++
		if strings.Contains(out, s.Secret) {
			miss[s.Kind]++
			if shown[s.Kind] < 2 {
				shown[s.Kind]++
				fmt.Printf("MISS %s: %q\n   -> %q\n", s.Kind, s.Text, out)
			}
		}
	}
	fmt.Println(len(tot), "kinds")
	for k, n := range miss {
		fmt.Println(k, n, "/", tot[k])
	}
}
