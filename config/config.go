// Package config is Hindsight's configuration: every setting a command reads
// from its flags and the environment, with its default declared once.
//
// A command binds the settings it uses to its flag set with a [Loader]; each
// flag's default is its environment variable when set, else the default of
// [Default]. Flags win over the environment, which wins over the defaults.
// A malformed value, in a flag or in the environment, is an error that names
// the flag or variable and says what it accepts; it never falls back to the
// default.
//
// It depends on the standard library only: its values are plain numbers,
// strings and durations, and package server turns them into the types of
// the packages that use them (ingest.Limits, ingest.ProjectGlobs, the
// embedder's settings). A check that needs one of those packages (the glob
// syntax, the redaction rules) is passed in by the command ([Checks]).
package config

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Config is everything the commands read from flags and the environment.
type Config struct {
	Addr string // HINDSIGHT_ADDR, --addr
	Data string // HINDSIGHT_DATA, --data
	// Records is where users, keys, sessions and messages are kept:
	// "" for the bbolt file in Data, or a PostgreSQL address
	// (postgres://...). Package kv checks it (kv.RecordsInPostgres).
	Records   string `json:"-"` // HINDSIGHT_RECORDS, --records: may hold a password
	Limits    Limits
	Rate      float64 // HINDSIGHT_RATE_LIMIT, --rate-limit: per key per second; 0 = off
	Burst     int     // HINDSIGHT_RATE_BURST, --rate-burst
	LogFormat string  // HINDSIGHT_LOG_FORMAT, --log-format: console or json
	LogLevel  string  // HINDSIGHT_LOG_LEVEL, --log-level
	Semantic  Semantic
	// TextIndex is where the full-text index lives: "bleve" (embedded, in
	// Data/index) or "weaviate" (at Semantic.WeaviateURL).
	TextIndex string // HINDSIGHT_TEXT_INDEX, --text-index
	// WeaviateReplication is the replication factor of the text index's
	// collections when Hindsight creates them (HINDSIGHT_WEAVIATE_REPLICATION).
	WeaviateReplication int
	// ExcludeProjects: sessions of these projects are never kept
	// (HINDSIGHT_EXCLUDE_PROJECTS, --exclude-projects): comma-separated
	// globs as given, parsed by ingest.ParseProjectGlobs.
	ExcludeProjects string
	// WeaviateTextPrefix names the text index's collections ("" = the
	// default, HindsightText). No flag or variable sets it: the benchmarks
	// use a fresh one so they never touch a deployment's collections.
	WeaviateTextPrefix string
	// Redact is secret redaction at ingest; the zero value is on.
	Redact Redact

	// The client side (hindsight import).
	ServerURL   string // HINDSIGHT_URL, --server; default http://Addr
	APIKey      string `json:"-"` // HINDSIGHT_API_KEY, --key: a secret
	XDGDataHome string // XDG_DATA_HOME: where opencode keeps its history

	// BcryptCost is the dashboard's password work factor; 0 = bcrypt's
	// default. No flag or variable sets it: tests lower it.
	BcryptCost int
}

// Limits bound what one request may carry. They are ingest.Limits field for
// field (server converts); the defaults in [Default] are ingest's
// (server's TestConfigDefaults holds them equal).
type Limits struct {
	MaxBody         int64 // bytes per request body
	MaxBatchEntries int   // sessions + messages in one /sync/batch
	MaxPartBytes    int   // bytes of one part's content (and of textContent)
	MaxFieldBytes   int   // bytes of a title, path or other string field
	MaxParts        int   // parts of one message
}

// Semantic selects the embedder and the vector store. These are deployment
// settings, read from the environment (--embedder aside).
type Semantic struct {
	Embedder      string  // HINDSIGHT_EMBEDDER: openai, local, none, or "" (automatic)
	OpenAIKey     string  `json:"-"` // OPENAI_API_KEY: a secret
	OpenAIBaseURL string  // OPENAI_BASE_URL
	OpenAIModel   string  // HINDSIGHT_OPENAI_MODEL; default vectors.OpenAIModel
	OpenAIDim     int     // HINDSIGHT_OPENAI_DIM; 0 = the model's own
	OpenAITimeout float64 // HINDSIGHT_OPENAI_TIMEOUT: seconds per request to the provider; 0 = 60
	ModelDir      string  // HINDSIGHT_MODEL_DIR
	WeaviateURL   string  // WEAVIATE_URL; "" = the embedded store
	WeaviateKey   string  `json:"-"` // WEAVIATE_API_KEY: a secret
	RRFK          float64 // HINDSIGHT_RRF_K; 0 = the embedder's default
	RRFWeight     float64 // HINDSIGHT_RRF_SEMANTIC_WEIGHT; 0 = the embedder's default
	// EmbedCache is a file that keeps the vectors the embedding stage
	// computes, by model and text, across runs (vectors.Cache); "" = none.
	// No flag or variable sets it: the benchmarks use it, so a second run
	// over the same corpus does not embed it again.
	EmbedCache string
}

// Redact configures the redaction of secrets before anything is stored
// (package redact). Its zero value redacts with the default rules, so a
// Config built in code is as safe as one read from flags.
type Redact struct {
	Off   bool   // HINDSIGHT_REDACT=off, --redact=off
	Rules string // HINDSIGHT_REDACT_RULES, --redact-rules: a file of extra rules in gitleaks' TOML format
}

// Defaults that other settings derive from.
const (
	DefaultAddr = "127.0.0.1:7420"
	DefaultData = "./hindsight-data"
)

// Default returns the configuration with every default.
func Default() Config {
	return Config{
		Addr: DefaultAddr,
		Data: DefaultData,
		Limits: Limits{
			MaxBody:         16 << 20,
			MaxBatchEntries: 10_000,
			MaxPartBytes:    1 << 20,
			MaxFieldBytes:   512 << 10,
			MaxParts:        1000,
		},
		Rate:                200,
		Burst:               1000,
		LogFormat:           "console",
		LogLevel:            "info",
		TextIndex:           "bleve",
		WeaviateReplication: 1,
		Semantic: Semantic{
			OpenAIModel: "text-embedding-3-small",
			ModelDir:    filepath.Join(".cache", "models", "use-lite"),
		},
	}
}

// Env looks up an environment variable (os.LookupEnv; a map in tests).
type Env func(name string) (string, bool)

// MapEnv is an Env over a map.
func MapEnv(m map[string]string) Env {
	return func(name string) (string, bool) { v, ok := m[name]; return v, ok }
}

// Error is a malformed or out-of-range setting.
type Error struct {
	Name  string // the flag (--rate-limit) or variable (HINDSIGHT_RATE_LIMIT)
	Value string
	Want  string // what it accepts
}

func (e *Error) Error() string { return fmt.Sprintf("%s=%q: want %s", e.Name, e.Value, e.Want) }

// Checks validate settings whose syntax belongs to another package, so
// that a malformed value is still an error naming its flag or variable
// when the command loads it. A nil check accepts every value (the package
// that reads the value then refuses it when the server starts).
type Checks struct {
	// ProjectGlobs checks --exclude-projects (ingest.ParseProjectGlobs).
	ProjectGlobs func(list string) error
	// RedactRules checks the contents of the --redact-rules file
	// (redact.CheckRules).
	RedactRules func(toml []byte) error
}

// Loader binds settings to a flag set and reads their environment
// variables. Bind the settings, parse the flag set, then call Err.
type Loader struct {
	fs     *flag.FlagSet
	env    Env
	check  Checks
	errs   []error
	checks []func() error // checks that span settings, run by Err after parsing
}

// NewLoader returns a loader for fs reading the environment through env,
// validating with check.
func NewLoader(fs *flag.FlagSet, env Env, check Checks) *Loader {
	return &Loader{fs: fs, env: env, check: check}
}

// Err returns the errors of the environment variables read so far and of
// the checks that span settings, joined; nil when every value is good. Call
// it after parsing the flags.
func (l *Loader) Err() error {
	errs := l.errs
	for _, c := range l.checks {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// lookup returns a variable's value; a blank one counts as unset.
func (l *Loader) lookup(name string) (string, bool) {
	v, ok := l.env(name)
	if !ok || strings.TrimSpace(v) == "" {
		return "", false
	}
	return v, true
}

// value is a flag.Value whose Set parses with set and, on failure, says
// what the flag accepts.
type value struct {
	set  func(string) error
	get  func() string
	want string
}

func (v value) String() string {
	if v.get == nil { // the zero value flag.PrintDefaults makes
		return ""
	}
	return v.get()
}

func (v value) Set(s string) error {
	if err := v.set(s); err != nil {
		return errors.New("want " + v.want)
	}
	return nil
}

// bind sets the setting from env (when set) and registers flag name (when
// not ""). set parses a value into the setting.
func (l *Loader) bind(name, env, usage, want string, set func(string) error, get func() string) {
	if env != "" {
		if v, ok := l.lookup(env); ok {
			if err := set(v); err != nil {
				l.errs = append(l.errs, &Error{Name: env, Value: v, Want: want})
			}
		}
	}
	if name != "" {
		if env != "" {
			usage += " (env " + env + ")"
		}
		l.fs.Var(value{set: set, get: get, want: want}, name, usage)
	}
}

// str binds a string setting; a plain flag.StringVar, so that --help shows
// it as before ("-addr string").
func (l *Loader) str(p *string, name, env, usage string) {
	l.bind("", env, "", "", func(s string) error { *p = s; return nil }, nil)
	if name != "" {
		l.fs.StringVar(p, name, *p, usage+" (env "+env+")")
	}
}

func (l *Loader) oneOf(p *string, name, env, usage string, choices ...string) {
	want := "one of " + strings.Join(choices, ", ")
	l.bind(name, env, usage, want, func(s string) error {
		for _, c := range choices {
			if s == c {
				*p = s
				return nil
			}
		}
		return errors.New(want)
	}, func() string { return *p })
}

func (l *Loader) integer(p *int64, name, env, usage string, min int64, want string) {
	l.bind(name, env, usage, want, func(s string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < min {
			return errors.New(want)
		}
		*p = n
		return nil
	}, func() string { return strconv.FormatInt(*p, 10) })
}

func (l *Loader) intField(p *int, name, env, usage string, min int64, want string) {
	l.bind(name, env, usage, want, func(s string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 0)
		if err != nil || n < min {
			return errors.New(want)
		}
		*p = int(n)
		return nil
	}, func() string { return strconv.Itoa(*p) })
}

func (l *Loader) number(p *float64, name, env, usage string, min float64, want string) {
	l.bind(name, env, usage, want, func(s string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || f < min || f != f || f > 1e308 {
			return errors.New(want)
		}
		*p = f
		return nil
	}, func() string { return strconv.FormatFloat(*p, 'g', -1, 64) })
}

// Data binds --data (HINDSIGHT_DATA), which every command that opens the
// data directory takes.
func (l *Loader) Data(c *Config) {
	l.str(&c.Data, "data", "HINDSIGHT_DATA", "data directory")
}

// Records binds --records (HINDSIGHT_RECORDS), which the commands that
// read or write users, keys and sessions take.
// The flag's default is shown empty in --help even when the variable is
// set: the address may hold a password.
func (l *Loader) Records(c *Config) {
	l.fs.StringVar(&c.Records, "records", "", "where users, keys and sessions are kept: a PostgreSQL address, postgres://user:password@host:port/db; unset: the bbolt file in the data directory (env HINDSIGHT_RECORDS)")
	if v, ok := l.lookup("HINDSIGHT_RECORDS"); ok {
		c.Records = v
	}
}

// Addr binds --addr (HINDSIGHT_ADDR) with the given help text.
func (l *Loader) Addr(c *Config, usage string) {
	l.str(&c.Addr, "addr", "HINDSIGHT_ADDR", usage)
}

// Serve binds everything serve reads: the listen address, data directory,
// limits, rate limit, logging, --embedder and the semantic settings.
func (l *Loader) Serve(c *Config) {
	l.Addr(c, "listen address")
	l.Data(c)
	l.Records(c)
	l.integer(&c.Limits.MaxBody, "max-body-bytes", "HINDSIGHT_MAX_BODY_BYTES", "largest request body; larger ones get 413", 1024, "a whole number of bytes, at least 1024")
	l.intField(&c.Limits.MaxBatchEntries, "max-batch-entries", "HINDSIGHT_MAX_BATCH_ENTRIES", "most sessions+messages in one /sync/batch", 1, "a whole number, at least 1")
	l.intField(&c.Limits.MaxPartBytes, "max-part-bytes", "HINDSIGHT_MAX_PART_BYTES", "largest message part or textContent", 1, "a whole number of bytes, at least 1")
	l.intField(&c.Limits.MaxFieldBytes, "max-field-bytes", "HINDSIGHT_MAX_FIELD_BYTES", "largest title, path or other string field", 1, "a whole number of bytes, at least 1")
	l.intField(&c.Limits.MaxParts, "max-parts", "HINDSIGHT_MAX_PARTS", "most parts in one message; more get 400", 1, "a whole number, at least 1")
	l.number(&c.Rate, "rate-limit", "HINDSIGHT_RATE_LIMIT", "requests per second per API key, sustained; 0 disables", 0, "a number of requests per second, 0 (off) or more")
	l.intField(&c.Burst, "rate-burst", "HINDSIGHT_RATE_BURST", "requests per API key allowed in a burst", 1, "a whole number of requests, at least 1")
	l.oneOf(&c.LogFormat, "log-format", "HINDSIGHT_LOG_FORMAT", "log format: console or json", "console", "json")
	l.LogLevel(c)
	l.Semantic(c)
	l.Embedder(c, "openai, local or none; default: openai when OPENAI_API_KEY is set, else local when the model is present")
	l.TextIndex(c)
	l.ExcludeProjects(c)
	l.Redact(c)
}

// ExcludeProjects binds --exclude-projects (HINDSIGHT_EXCLUDE_PROJECTS):
// comma-separated globs matched against each session's projectPath and
// projectName; matching sessions are dropped. A malformed pattern is an
// error that names it.
func (l *Loader) ExcludeProjects(c *Config) {
	const env = "HINDSIGHT_EXCLUDE_PROJECTS"
	want := "comma-separated glob patterns (*, ?, [a-z], {a,b}, and ** across directories)"
	set := func(s string) error {
		if l.check.ProjectGlobs != nil {
			if err := l.check.ProjectGlobs(s); err != nil {
				return err
			}
		}
		c.ExcludeProjects = s
		return nil
	}
	if v, ok := l.lookup(env); ok {
		if err := set(v); err != nil {
			l.errs = append(l.errs, &Error{Name: env, Value: v, Want: want + "; " + err.Error()})
		}
	}
	l.bind("exclude-projects", "", "comma-separated globs of projects whose sessions are never kept, matched against "+
		"projectPath and projectName, e.g. '/home/me/clients/**,secret-*' (env "+env+")", want, set,
		func() string { return c.ExcludeProjects })
}

// Redact binds --redact (HINDSIGHT_REDACT: on or off) and --redact-rules
// (HINDSIGHT_REDACT_RULES). Err checks that the rules file can be read and
// holds valid rules.
func (l *Loader) Redact(c *Config) {
	l.bind("redact", "HINDSIGHT_REDACT", "redact secrets before anything is stored or sent: on or off", "on or off", func(s string) error {
		switch strings.TrimSpace(s) {
		case "on":
			c.Redact.Off = false
		case "off":
			c.Redact.Off = true
		default:
			return errors.New("on or off")
		}
		return nil
	}, func() string {
		if c.Redact.Off {
			return "off"
		}
		return "on"
	})
	l.str(&c.Redact.Rules, "redact-rules", "HINDSIGHT_REDACT_RULES", "file of extra redaction rules in gitleaks' TOML format, added to the defaults")
	l.checks = append(l.checks, func() error {
		if c.Redact.Rules == "" {
			return nil
		}
		data, err := os.ReadFile(c.Redact.Rules)
		if err == nil && l.check.RedactRules != nil {
			err = l.check.RedactRules(data)
		}
		if err != nil {
			return &Error{Name: "HINDSIGHT_REDACT_RULES (--redact-rules)", Value: c.Redact.Rules, Want: "a readable file of rules in gitleaks' TOML format: " + err.Error()}
		}
		return nil
	})
}

// TextIndex binds --text-index (HINDSIGHT_TEXT_INDEX: bleve or weaviate)
// and HINDSIGHT_WEAVIATE_REPLICATION. Weaviate needs WEAVIATE_URL, which
// Semantic reads; Err checks that it is set.
func (l *Loader) TextIndex(c *Config) {
	l.oneOf(&c.TextIndex, "text-index", "HINDSIGHT_TEXT_INDEX", "where the full-text index lives: bleve (embedded) or weaviate (at WEAVIATE_URL)", "bleve", "weaviate")
	l.intField(&c.WeaviateReplication, "", "HINDSIGHT_WEAVIATE_REPLICATION", "", 1, "a whole number of replicas, at least 1")
	l.checks = append(l.checks, func() error {
		if c.TextIndex == "weaviate" && c.Semantic.WeaviateURL == "" {
			return &Error{Name: "HINDSIGHT_TEXT_INDEX", Value: c.TextIndex, Want: "WEAVIATE_URL set too: the text index lives on that Weaviate server"}
		}
		return nil
	})
}

// LogLevel binds --log-level (HINDSIGHT_LOG_LEVEL); c.LogLevel is its
// default when the variable is unset.
func (l *Loader) LogLevel(c *Config) {
	l.oneOf(&c.LogLevel, "log-level", "HINDSIGHT_LOG_LEVEL", "log level: debug, info, warn, error",
		"trace", "debug", "info", "warn", "error", "fatal", "panic", "disabled")
}

// Semantic reads the semantic-search settings from the environment. They
// have no flags; --embedder is bound by Embedder.
func (l *Loader) Semantic(c *Config) {
	s := &c.Semantic
	l.oneOf(&s.Embedder, "", "HINDSIGHT_EMBEDDER", "", "openai", "local", "none")
	l.str(&s.OpenAIKey, "", "OPENAI_API_KEY", "")
	l.str(&s.OpenAIBaseURL, "", "OPENAI_BASE_URL", "")
	l.str(&s.OpenAIModel, "", "HINDSIGHT_OPENAI_MODEL", "")
	l.intField(&s.OpenAIDim, "", "HINDSIGHT_OPENAI_DIM", "", 0, "a whole number of dimensions (0: the model's own)")
	l.number(&s.OpenAITimeout, "", "HINDSIGHT_OPENAI_TIMEOUT", "", 0, "a number of seconds (0: 60)")
	l.str(&s.ModelDir, "", "HINDSIGHT_MODEL_DIR", "")
	l.str(&s.WeaviateURL, "", "WEAVIATE_URL", "")
	l.str(&s.WeaviateKey, "", "WEAVIATE_API_KEY", "")
	l.number(&s.RRFK, "", "HINDSIGHT_RRF_K", "", 0, "a positive number (0: the embedder's default)")
	l.number(&s.RRFWeight, "", "HINDSIGHT_RRF_SEMANTIC_WEIGHT", "", 0, "a positive number (0: the embedder's default)")
	if u := s.WeaviateURL; u != "" {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			l.errs = append(l.errs, &Error{Name: "WEAVIATE_URL", Value: redactURL(u), Want: "an http:// or https:// URL"})
		}
	}
}

// Embedder binds --embedder: openai, local or none, or unset for the
// automatic choice. Its variable, HINDSIGHT_EMBEDDER, is read by Semantic.
func (l *Loader) Embedder(c *Config, usage string) {
	l.oneOf(&c.Semantic.Embedder, "embedder", "", usage+" (env HINDSIGHT_EMBEDDER)", "openai", "local", "none")
}

// Client binds what a client of a running server reads (hindsight import):
// --server (HINDSIGHT_URL, default http:// and HINDSIGHT_ADDR) and
// XDG_DATA_HOME. The API key is read by APIKey after parsing, so that
// --help never prints it.
func (l *Loader) Client(c *Config) {
	if v, ok := l.lookup("HINDSIGHT_ADDR"); ok {
		c.Addr = v
	}
	c.ServerURL = "http://" + c.Addr
	l.str(&c.ServerURL, "server", "HINDSIGHT_URL", "Hindsight server URL")
	l.str(&c.XDGDataHome, "", "XDG_DATA_HOME", "")
	l.fs.StringVar(&c.APIKey, "key", "", "API key, osk_... (env HINDSIGHT_API_KEY)")
}

// APIKey fills c.APIKey from HINDSIGHT_API_KEY when --key was not given.
func (l *Loader) APIKey(c *Config) {
	if c.APIKey == "" {
		c.APIKey, _ = l.lookup("HINDSIGHT_API_KEY")
	}
}

// redacted stands for a secret that is set.
const redacted = "[redacted]"

func secret(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// redactURL hides a URL's password.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return redacted
}

// Redacted returns c with its secrets (API keys, URL passwords) replaced by
// "[redacted]", for logging; an unset secret stays empty, so "set or not"
// stays visible.
func (c Config) Redacted() Config {
	c.APIKey = secret(c.APIKey)
	c.Semantic.OpenAIKey = secret(c.Semantic.OpenAIKey)
	c.Semantic.WeaviateKey = secret(c.Semantic.WeaviateKey)
	c.Semantic.OpenAIBaseURL = redactURL(c.Semantic.OpenAIBaseURL)
	c.Semantic.WeaviateURL = redactURL(c.Semantic.WeaviateURL)
	c.ServerURL = redactURL(c.ServerURL)
	c.Records = redactURL(c.Records)
	return c
}
