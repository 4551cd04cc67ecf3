package server

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/vectors"
)

// config declares its defaults with the standard library only; the
// packages that use them declare theirs too. They must agree.
func TestConfigDefaults(t *testing.T) {
	d := config.Default()
	if got, want := ingest.Limits(d.Limits), ingest.DefaultLimits(); got != want {
		t.Errorf("config's default limits %+v, ingest's %+v", got, want)
	}
	if d.Semantic.OpenAIModel != vectors.OpenAIModel {
		t.Errorf("config's default OpenAI model %q, vectors' %q", d.Semantic.OpenAIModel, vectors.OpenAIModel)
	}
}

func TestLogRedactsSecrets(t *testing.T) {
	c := config.Default()
	c.Semantic.OpenAIKey = "sk-live-123"
	c.Semantic.WeaviateKey = "wv-456"
	c.Semantic.WeaviateURL = "https://admin:pw789@weaviate.example"
	c.APIKey = "osk_abc"
	c.ExcludeProjects = "{a,b}-*, /x/**"
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().Object("config", loggedConfig(c)).Msg("")
	for _, secret := range []string{"sk-live-123", "wv-456", "pw789", "osk_abc"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("logged config holds %q: %s", secret, buf.String())
		}
	}
	for _, want := range []string{`"openai_api_key":"[redacted]"`, `"weaviate_api_key":"[redacted]"`, `"weaviate_url":"https://admin:xxxxx@weaviate.example"`,
		`"rate_limit":200`, `"exclude_projects":2`, `"max_body_bytes":16777216`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("logged config lacks %s: %s", want, buf.String())
		}
	}
	// An unset secret is logged as empty, so "set or not" stays visible.
	buf.Reset()
	log.Info().Object("config", loggedConfig(config.Default())).Msg("")
	if !strings.Contains(buf.String(), `"openai_api_key":""`) {
		t.Errorf("unset key not logged as empty: %s", buf.String())
	}
}

// A command that skips the checks still cannot start a server with a
// malformed pattern: New refuses it, naming the setting.
func TestNewRefusesMalformedExclusion(t *testing.T) {
	c := config.Default()
	c.Data = t.TempDir()
	c.ExcludeProjects = "x[y"
	_, err := New(t.Context(), c, zerolog.Nop())
	var ce *config.Error
	if err == nil || !strings.Contains(err.Error(), "HINDSIGHT_EXCLUDE_PROJECTS") || !errors.As(err, &ce) {
		t.Fatalf("New with a malformed pattern: %v", err)
	}
}
