package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// TestBenchVectorsSmall runs bench vectors end to end on a small set: the
// sign codes (3,000 vectors, past the default CodesFrom) against the exact
// scan of the same file, recall and scores checked, and a bad flag is a
// usage error.
func TestBenchVectorsSmall(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"vectors", "--vectors", "3000", "--dims", "96", "--queries", "30", "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench vectors: %v\n%s", err, stderr.String())
	}
	var res struct {
		Vectors      int     `json:"vectors"`
		Dims         int     `json:"dims"`
		Recall       float64 `json:"recall_at_10"`
		ScoreMaxDiff float64 `json:"score_max_abs_diff"`
		P99          float64 `json:"p99_ms"`
		ExactP99     float64 `json:"exact_p99_ms"`
		Runs         []struct {
			Name       string `json:"name"`
			StoreBytes int64  `json:"store_bytes"`
		} `json:"runs"`
		Settings map[string]string `json:"settings"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("result: %v\n%s", err, stdout.String())
	}
	if res.Vectors != 3000 || res.Dims != 96 || len(res.Runs) != 2 || res.P99 <= 0 || res.ExactP99 <= 0 || res.Settings["commit"] == "" {
		t.Fatalf("result = %+v, want both runs of 3,000 96-d vectors timed, and the commit", res)
	}
	if res.Recall < 0.98 || res.ScoreMaxDiff > 1e-5 {
		t.Errorf("recall@10 %.3f (want >= 0.98), score difference %g (want ~0)", res.Recall, res.ScoreMaxDiff)
	}
	// 96/8 + 8 bytes a vector against 4×96 in the exact scan's slab.
	if codes, slab := res.Runs[0].StoreBytes, res.Runs[1].StoreBytes; codes <= 0 || codes*4 > slab {
		t.Errorf("store bytes: codes %d, slab %d; want the codes under a quarter of the slab", codes, slab)
	}
	if err := run(context.Background(), []string{"vectors", "--vectors", "5"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || exitCode(err) != 2 {
		t.Errorf("--vectors 5: err = %v, want a usage error", err)
	}
}
