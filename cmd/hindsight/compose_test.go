package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The compose file and Dockerfile are checked without a Docker engine: parse
// them and assert what self-hosting depends on. `make compose-test` runs the
// real stack where an engine answers.
func TestComposeFile(t *testing.T) {
	c := readCompose(t, "docker-compose.yml")
	w, h := c.Services["weaviate"], c.Services["hindsight"]
	if w.Image == "" || h.Build == nil {
		t.Fatalf("services: want weaviate (image) and hindsight (build), got %v", c.Services)
	}
	// Weaviate is pinned to the version the tests install.
	script, err := os.ReadFile("../../scripts/weaviate.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`WEAVIATE_VERSION=\$\{WEAVIATE_VERSION:-v?([0-9.]+)\}`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/weaviate.sh does not pin WEAVIATE_VERSION")
	}
	if want := "semitechnologies/weaviate:" + string(m[1]); w.Image != want {
		t.Errorf("weaviate image %q, want %q (the version the tests use)", w.Image, want)
	}
	if len(w.Ports) != 0 {
		t.Errorf("weaviate publishes ports %v: it must stay on the compose network", w.Ports)
	}
	for name, s := range c.Services {
		if len(s.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no health check", name)
		}
		for _, v := range s.Volumes {
			vol, _, _ := strings.Cut(v, ":")
			if _, ok := c.Volumes[vol]; !ok {
				t.Errorf("service %s mounts %q, which is not a named volume", name, vol)
			}
		}
		if len(s.Volumes) == 0 {
			t.Errorf("service %s keeps no data in a volume", name)
		}
	}
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL"} {
		if v, ok := h.Environment[k]; !ok || !strings.Contains(v, "${"+k) {
			t.Errorf("hindsight does not pass %s through (got %q)", k, v)
		}
	}
	if !strings.HasPrefix(h.Environment["WEAVIATE_URL"], "http://weaviate:") {
		t.Errorf("WEAVIATE_URL = %q, want the weaviate service", h.Environment["WEAVIATE_URL"])
	}
	if h.DependsOn["weaviate"]["condition"] != "service_healthy" {
		t.Errorf("hindsight should wait for a healthy weaviate: %v", h.DependsOn)
	}
	if w.Environment["DEFAULT_VECTORIZER_MODULE"] != "none" || w.Environment["PERSISTENCE_DATA_PATH"] == "" {
		t.Errorf("weaviate environment: %v", w.Environment)
	}
}

func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	for _, want := range []string{"CGO_ENABLED=0", "HEALTHCHECK", "/hindsight\", \"healthcheck\"", "USER 65532", "FROM scratch"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if n := strings.Count(df, "\nFROM "); n < 2 {
		t.Errorf("Dockerfile has %d stages, want a multi-stage build", n+1)
	}
	if strings.Contains(df, "USER root") || strings.Contains(df, "USER 0") {
		t.Error("Dockerfile runs as root")
	}
}

func TestHealthcheckCommand(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	addr := strings.TrimPrefix(ta.srv.URL, "http://")
	if out, err := runCmd(t, "healthcheck", "--addr", addr); err != nil || !strings.Contains(out, "healthy") {
		t.Errorf("healthcheck against a live server: %q %v", out, err)
	}
	ta.close()
	if _, err := runCmd(t, "healthcheck", "--addr", addr); err == nil {
		t.Error("healthcheck against a stopped server succeeded")
	}
}

// composeService is what the compose tests read of a service.
type composeService struct {
	Image       string
	Build       any
	Command     []string
	Hostname    string
	Environment map[string]string
	Ports       []string
	Expose      []string
	Volumes     []string
	DependsOn   map[string]map[string]string `yaml:"depends_on"`
	Healthcheck struct{ Test []string }
}

type composeFile struct {
	Services map[string]composeService
	Volumes  map[string]any
}

// readCompose parses a compose file at the repository root.
func readCompose(t *testing.T, name string) composeFile {
	t.Helper()
	raw, err := os.ReadFile("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s does not parse: %v", name, err)
	}
	return c
}
