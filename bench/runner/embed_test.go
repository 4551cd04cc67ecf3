package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/bench"
)

// TestBenchEmbed runs bench embed briefly on the offline model and checks
// what it writes: every setting measured in every round, the ratios taken
// from those medians, the windows full. It asserts no speed.
func TestBenchEmbed(t *testing.T) {
	dir := os.Getenv("HINDSIGHT_MODEL_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", ".cache", "models", "use-lite")
	}
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		if os.Getenv("HINDSIGHT_REQUIRE_MODEL") == "1" {
			t.Fatalf("HINDSIGHT_REQUIRE_MODEL=1 but the model is not in %s: %v", dir, err)
		}
		t.Skipf("SKIPPING: the offline model is not in %s (run `make model`; HINDSIGHT_REQUIRE_MODEL=1 makes this a failure)", dir)
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	c := EmbedConfig{ModelDir: dir, Windows: 3, Rounds: 2, Seed: 1, Out: out, Command: "hindsight bench embed --windows 3 --rounds 2"}
	if err := Embed(context.Background(), c, &stdout, &stderr); err != nil {
		t.Fatalf("bench embed: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, bench.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var r EmbedResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.TextsPerRound != 3 || r.Tokens != 128 || r.GemmFLOPs <= 0 {
		t.Errorf("windows %d, tokens %d, flops %g", r.TextsPerRound, r.Tokens, r.GemmFLOPs)
	}
	byName := map[string]*EmbedSetting{}
	for _, s := range r.Runs {
		if len(s.WindowsPerS) != 2 || s.Median <= 0 {
			t.Errorf("%s on %d cores: rounds %v, median %g", s.Name, s.Cores, s.WindowsPerS, s.Median)
		}
		byName[fmt.Sprintf("%s@%d", s.Name, s.Cores)] = s
	}
	one, sg := byName["embed@1"], byName["sgemm@1"]
	if one == nil || sg == nil {
		t.Fatalf("runs %v: want embed and sgemm on one core", byName)
	}
	all := byName[fmt.Sprintf("embed@%d", r.NumCPU)]
	if all == nil || r.Scaling != all.Median/one.Median {
		t.Errorf("scaling %g does not come from the medians of embed on 1 and %d cores", r.Scaling, r.NumCPU)
	}
	if r.WindowsOneCore != one.Median || all != nil && r.WindowsAll != all.Median {
		t.Errorf("windows/s on 1 core %g and on all %g are not the embed runs' medians", r.WindowsOneCore, r.WindowsAll)
	}
	// The fields issue 29 names, as they read in result.json.
	var named map[string]any
	if err := json.Unmarshal(b, &named); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cores", "windows_per_s_1core", "windows_per_s_all", "sgemm_share"} {
		if _, ok := named[k]; !ok {
			t.Errorf("result.json lacks %q", k)
		}
	}
	if r.ShareOneCore != one.Median/sg.Median {
		t.Errorf("share on one core %g, medians give %g", r.ShareOneCore, one.Median/sg.Median)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| embed | 1 |", "| sgemm | 1 |", "goal ≥ 1.8", "goal ≥ 0.7"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}
