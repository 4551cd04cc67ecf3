package config_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/redact"
)

// checks are the checks serve passes (server.ConfigChecks).
func checks() config.Checks {
	return config.Checks{
		ProjectGlobs: func(list string) error { _, err := ingest.ParseProjectGlobs(list); return err },
		RedactRules:  redact.CheckRules,
	}
}

// load binds serve's settings, parses args and returns the Config and Err.
func load(env map[string]string, args ...string) (config.Config, error) {
	c := config.Default()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ld := config.NewLoader(fs, config.MapEnv(env), checks())
	ld.Serve(&c)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, ld.Err()
}

func TestBadValuesAreErrors(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		name string // what the error must name
		want string // and what it must say is accepted
	}{
		{env: map[string]string{"HINDSIGHT_RATE_LIMIT": "2OO"}, name: "HINDSIGHT_RATE_LIMIT", want: "a number of requests per second"},
		{env: map[string]string{"HINDSIGHT_RATE_LIMIT": "-1"}, name: "HINDSIGHT_RATE_LIMIT", want: "0 (off) or more"},
		{env: map[string]string{"HINDSIGHT_RATE_BURST": "1e3"}, name: "HINDSIGHT_RATE_BURST", want: "whole number"},
		{env: map[string]string{"HINDSIGHT_MAX_BODY_BYTES": "16MiB"}, name: "HINDSIGHT_MAX_BODY_BYTES", want: "at least 1024"},
		{env: map[string]string{"HINDSIGHT_MAX_BODY_BYTES": "100"}, name: "HINDSIGHT_MAX_BODY_BYTES", want: "at least 1024"},
		{env: map[string]string{"HINDSIGHT_MAX_BATCH_ENTRIES": "0"}, name: "HINDSIGHT_MAX_BATCH_ENTRIES", want: "at least 1"},
		{env: map[string]string{"HINDSIGHT_MAX_PART_BYTES": "x"}, name: "HINDSIGHT_MAX_PART_BYTES", want: "whole number"},
		{env: map[string]string{"HINDSIGHT_MAX_FIELD_BYTES": "1.5"}, name: "HINDSIGHT_MAX_FIELD_BYTES", want: "whole number"},
		{env: map[string]string{"HINDSIGHT_LOG_FORMAT": "xml"}, name: "HINDSIGHT_LOG_FORMAT", want: "console, json"},
		{env: map[string]string{"HINDSIGHT_LOG_LEVEL": "loud"}, name: "HINDSIGHT_LOG_LEVEL", want: "debug"},
		{env: map[string]string{"HINDSIGHT_EMBEDDER": "bert"}, name: "HINDSIGHT_EMBEDDER", want: "openai, local, none"},
		{env: map[string]string{"HINDSIGHT_OPENAI_DIM": "big"}, name: "HINDSIGHT_OPENAI_DIM", want: "dimensions"},
		{env: map[string]string{"HINDSIGHT_RRF_K": "sixty"}, name: "HINDSIGHT_RRF_K", want: "positive number"},
		{env: map[string]string{"HINDSIGHT_RRF_SEMANTIC_WEIGHT": "-0.2"}, name: "HINDSIGHT_RRF_SEMANTIC_WEIGHT", want: "positive number"},
		{env: map[string]string{"WEAVIATE_URL": "localhost:8080"}, name: "WEAVIATE_URL", want: "http:// or https://"},
		{args: []string{"--rate-limit", "2OO"}, name: "-rate-limit", want: "a number of requests per second"},
		{args: []string{"--max-body-bytes", "10"}, name: "-max-body-bytes", want: "at least 1024"},
		{args: []string{"--rate-burst", "many"}, name: "-rate-burst", want: "whole number"},
		{args: []string{"--log-level", ""}, name: "-log-level", want: "debug"},
		{args: []string{"--embedder", "auto"}, name: "-embedder", want: "openai, local, none"},
		{env: map[string]string{"HINDSIGHT_TEXT_INDEX": "lucene"}, name: "HINDSIGHT_TEXT_INDEX", want: "bleve, weaviate"},
		{env: map[string]string{"HINDSIGHT_TEXT_INDEX": "weaviate"}, name: "HINDSIGHT_TEXT_INDEX", want: "WEAVIATE_URL"},
		{env: map[string]string{"HINDSIGHT_WEAVIATE_REPLICATION": "0"}, name: "HINDSIGHT_WEAVIATE_REPLICATION", want: "at least 1"},
		{args: []string{"--text-index", "weaviate"}, name: "HINDSIGHT_TEXT_INDEX", want: "WEAVIATE_URL"},
		{args: []string{"--text-index", "solr"}, name: "-text-index", want: "bleve, weaviate"},
		{env: map[string]string{"HINDSIGHT_EXCLUDE_PROJECTS": "/ok/**,/bad/[a-"}, name: "HINDSIGHT_EXCLUDE_PROJECTS", want: `malformed pattern "/bad/[a-"`},
		{env: map[string]string{"HINDSIGHT_EXCLUDE_PROJECTS": "{unclosed"}, name: "HINDSIGHT_EXCLUDE_PROJECTS", want: "glob patterns"},
		{args: []string{"--exclude-projects", "x[y"}, name: "-exclude-projects", want: "glob patterns"},
		{env: map[string]string{"HINDSIGHT_REDACT": "yes"}, name: "HINDSIGHT_REDACT", want: "on or off"},
		{args: []string{"--redact", "0"}, name: "-redact", want: "on or off"},
		{env: map[string]string{"HINDSIGHT_REDACT_RULES": "/nonexistent/rules.toml"}, name: "HINDSIGHT_REDACT_RULES", want: "readable file"},
	} {
		_, err := load(tc.env, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("env %v args %q: err = %v, want one naming %s and saying %q", tc.env, tc.args, err, tc.name, tc.want)
		}
		var ce *config.Error
		if tc.env != nil && !errors.As(err, &ce) {
			t.Errorf("env %v: err %v is not a *config.Error", tc.env, err)
		}
	}
}

func TestPrecedence(t *testing.T) {
	env := map[string]string{"HINDSIGHT_RATE_LIMIT": "5", "HINDSIGHT_ADDR": "0.0.0.0:1", "HINDSIGHT_DATA": "  ",
		"HINDSIGHT_MAX_BATCH_ENTRIES": "7", "OPENAI_API_KEY": "sk", "HINDSIGHT_RRF_K": "30"}
	c, err := load(env, "--addr", "127.0.0.1:9", "--max-batch-entries", "9")
	if err != nil {
		t.Fatal(err)
	}
	d := config.Default()
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"rate (env over default)", c.Rate, 5.0},
		{"addr (flag over env)", c.Addr, "127.0.0.1:9"},
		{"data (a blank variable is unset)", c.Data, config.DefaultData},
		{"batch entries (flag over env)", c.Limits.MaxBatchEntries, 9},
		{"part bytes (default)", c.Limits.MaxPartBytes, d.Limits.MaxPartBytes},
		{"burst (default)", c.Burst, 1000},
		{"openai key (env only)", c.Semantic.OpenAIKey, "sk"},
		{"rrf k (env only)", c.Semantic.RRFK, 30.0},
		{"model (default)", c.Semantic.OpenAIModel, "text-embedding-3-small"},
		{"text index (default)", c.TextIndex, "bleve"},
		{"replication (default)", c.WeaviateReplication, 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// --help shows each flag's variable and its default, never a secret.
func TestHelpNamesVariables(t *testing.T) {
	c := config.Default()
	var out bytes.Buffer
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(&out)
	ld := config.NewLoader(fs, config.MapEnv(map[string]string{"OPENAI_API_KEY": "sk-secret"}), checks())
	ld.Serve(&c)
	if err := fs.Parse([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"env HINDSIGHT_RATE_LIMIT", "(default 200)", "env HINDSIGHT_DATA", `(default "./hindsight-data")`, "env HINDSIGHT_EMBEDDER"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "sk-secret") {
		t.Error("help shows the OpenAI key")
	}
}

// --records comes from HINDSIGHT_RECORDS unless the flag is given; --help
// never shows the address (it may hold a password), Redacted hides its
// password.
func TestRecords(t *testing.T) {
	const dsn = "postgres://hs:pw-secret@db.example:5432/hindsight"
	env := map[string]string{"HINDSIGHT_RECORDS": dsn}
	if c, err := load(env); err != nil || c.Records != dsn {
		t.Errorf("env: Records = %q, %v; want %q", c.Records, err, dsn)
	}
	if c, err := load(env, "--records", "postgres://other/db"); err != nil || c.Records != "postgres://other/db" {
		t.Errorf("flag over env: Records = %q, %v", c.Records, err)
	}
	if c, err := load(nil); err != nil || c.Records != "" {
		t.Errorf("default: Records = %q, %v; want empty (the bbolt file)", c.Records, err)
	}
	c := config.Default()
	var out bytes.Buffer
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(&out)
	config.NewLoader(fs, config.MapEnv(env), checks()).Serve(&c)
	if err := fs.Parse([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if !strings.Contains(out.String(), "env HINDSIGHT_RECORDS") || strings.Contains(out.String(), "pw-secret") {
		t.Errorf("help must name HINDSIGHT_RECORDS and never show its password:\n%s", out.String())
	}
	c.Records = dsn
	if r := c.Redacted(); strings.Contains(r.Records, "pw-secret") || !strings.Contains(r.Records, "db.example") {
		t.Errorf("Redacted().Records = %q", r.Records)
	}
}

func TestRedacted(t *testing.T) {
	c := config.Default()
	c.Semantic.OpenAIKey = "sk-live-123"
	c.Semantic.WeaviateKey = "wv-456"
	c.Semantic.WeaviateURL = "https://admin:pw789@weaviate.example"
	c.APIKey = "osk_abc"
	r := c.Redacted()
	if r.Semantic.OpenAIKey != "[redacted]" || r.Semantic.WeaviateKey != "[redacted]" || r.APIKey != "[redacted]" ||
		r.Semantic.WeaviateURL != "https://admin:xxxxx@weaviate.example" || r.Rate != c.Rate {
		t.Errorf("redacted: %+v", r)
	}
	// An unset secret stays empty, so "set or not" stays visible.
	if r := config.Default().Redacted(); r.Semantic.OpenAIKey != "" || r.APIKey != "" {
		t.Errorf("unset secrets: %+v", r)
	}
}

func TestTextIndexWeaviate(t *testing.T) {
	c, err := load(map[string]string{"WEAVIATE_URL": "http://127.0.0.1:8080", "HINDSIGHT_WEAVIATE_REPLICATION": "3"}, "--text-index", "weaviate")
	if err != nil {
		t.Fatal(err)
	}
	if c.TextIndex != "weaviate" || c.WeaviateReplication != 3 {
		t.Errorf("text index %q replication %d, want weaviate 3", c.TextIndex, c.WeaviateReplication)
	}
}

// HINDSIGHT_EXCLUDE_PROJECTS is a comma-separated list; commas inside
// {a,b} belong to the pattern; the flag wins.
func TestExcludeProjects(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want []string
	}{
		{env: "", want: nil},
		{env: " /home/me/clients/** , secret-*,,", want: []string{"/home/me/clients/**", "secret-*"}},
		{env: "{alpha,beta}-*,/x/**", want: []string{"{alpha,beta}-*", "/x/**"}},
		{env: "a", args: []string{"--exclude-projects", "b,c"}, want: []string{"b", "c"}},
	} {
		env := map[string]string{}
		if tc.env != "" {
			env["HINDSIGHT_EXCLUDE_PROJECTS"] = tc.env
		}
		c, err := load(env, tc.args...)
		if err != nil {
			t.Fatalf("env %q args %q: %v", tc.env, tc.args, err)
		}
		g, err := ingest.ParseProjectGlobs(c.ExcludeProjects)
		if err != nil {
			t.Fatalf("env %q args %q: %q: %v", tc.env, tc.args, c.ExcludeProjects, err)
		}
		if got := g.Patterns(); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("env %q args %q: patterns %q, want %q", tc.env, tc.args, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	c, err := load(nil)
	if err != nil || c.Redact.Off || c.Redact.Rules != "" {
		t.Fatalf("default: %+v %v, want on with the default rules", c.Redact, err)
	}
	if c, err = load(map[string]string{"HINDSIGHT_REDACT": "off"}); err != nil || !c.Redact.Off {
		t.Fatalf("HINDSIGHT_REDACT=off: %+v %v", c.Redact, err)
	}
	if c, err = load(map[string]string{"HINDSIGHT_REDACT": "off"}, "--redact=on"); err != nil || c.Redact.Off {
		t.Fatalf("--redact=on over the variable: %+v %v", c.Redact, err)
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.toml"), filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(good, []byte("[[rules]]\nid = \"acme\"\nregex = '''acme_[a-z0-9]{20}'''\nkeywords = [\"acme_\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("[[rules]]\nid = \"acme\"\nregex = '''acme_(['''\nkeywords = [\"acme_\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err = load(nil, "--redact-rules", good); err != nil || c.Redact.Rules != good {
		t.Fatalf("--redact-rules %s: %+v %v", good, c.Redact, err)
	}
	if _, err = load(map[string]string{"HINDSIGHT_REDACT_RULES": bad}); err == nil ||
		!strings.Contains(err.Error(), "HINDSIGHT_REDACT_RULES") || !strings.Contains(err.Error(), "rule acme") {
		t.Fatalf("a rules file with a bad expression: %v", err)
	}
}
