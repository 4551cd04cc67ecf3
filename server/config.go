package server

import (
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/redact"
)

// ConfigChecks returns the validations config leaves to the packages whose
// syntax a setting uses: a command passes them to config.NewLoader, so a
// malformed --exclude-projects or --redact-rules is a usage error naming
// it when the command starts.
func ConfigChecks() config.Checks {
	return config.Checks{
		ProjectGlobs: func(list string) error { _, err := ingest.ParseProjectGlobs(list); return err },
		RedactRules:  redact.CheckRules,
	}
}

// loggedConfig logs the effective configuration with its secrets (API
// keys, URL passwords) replaced by "[redacted]" (config.Config.Redacted).
type loggedConfig config.Config

func (lc loggedConfig) MarshalZerologObject(e *zerolog.Event) {
	c := config.Config(lc).Redacted()
	globs, _ := ingest.ParseProjectGlobs(c.ExcludeProjects)
	e.Str("addr", c.Addr).Str("data", c.Data).
		Int64("max_body_bytes", c.Limits.MaxBody).Int("max_batch_entries", c.Limits.MaxBatchEntries).
		Int("max_part_bytes", c.Limits.MaxPartBytes).Int("max_field_bytes", c.Limits.MaxFieldBytes).
		Int("max_parts", c.Limits.MaxParts).
		Float64("rate_limit", c.Rate).Int("rate_burst", c.Burst).
		Str("log_format", c.LogFormat).Str("log_level", c.LogLevel).
		Str("text_index", c.TextIndex).Int("weaviate_replication", c.WeaviateReplication).
		Int("exclude_projects", len(globs.Patterns())).
		Bool("redact", !c.Redact.Off).Str("redact_rules", c.Redact.Rules)
	s := c.Semantic
	e.Str("embedder", s.Embedder).Str("openai_api_key", s.OpenAIKey).
		Str("openai_base_url", s.OpenAIBaseURL).Str("openai_model", s.OpenAIModel).
		Int("openai_dim", s.OpenAIDim).Float64("openai_timeout", s.OpenAITimeout).Str("model_dir", s.ModelDir).
		Str("weaviate_url", s.WeaviateURL).Str("weaviate_api_key", s.WeaviateKey).
		Float64("rrf_k", s.RRFK).Float64("rrf_semantic_weight", s.RRFWeight)
}
