package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/server"
)

// The cluster compose file, checked without a Docker engine: three Weaviate
// nodes of the pinned version forming one Raft cluster with replication,
// and Hindsight in Weaviate mode reading settings the config package
// accepts.
func TestComposeClusterFile(t *testing.T) {
	c := readCompose(t, "docker-compose.cluster.yml")
	script, err := os.ReadFile("../../scripts/weaviate.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`WEAVIATE_VERSION=\$\{WEAVIATE_VERSION:-v?([0-9.]+)\}`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/weaviate.sh does not pin WEAVIATE_VERSION")
	}
	var nodes []string
	for name, s := range c.Services {
		if strings.HasPrefix(name, "weaviate") {
			nodes = append(nodes, name)
			if want := "semitechnologies/weaviate:" + string(m[1]); s.Image != want {
				t.Errorf("%s image %q, want %q", name, s.Image, want)
			}
		}
	}
	slices.Sort(nodes)
	if len(nodes) != 3 {
		t.Fatalf("weaviate nodes %v, want 3", nodes)
	}
	var join []string
	for _, n := range nodes {
		join = append(join, c.Services[n].Environment["CLUSTER_HOSTNAME"]+":"+c.Services[n].Environment["RAFT_PORT"])
	}
	for i, n := range nodes {
		e := c.Services[n].Environment
		if e["CLUSTER_HOSTNAME"] != n || c.Services[n].Hostname != n {
			t.Errorf("%s: CLUSTER_HOSTNAME %q hostname %q, want the service name", n, e["CLUSTER_HOSTNAME"], c.Services[n].Hostname)
		}
		if e["RAFT_BOOTSTRAP_EXPECT"] != "3" || e["RAFT_JOIN"] != strings.Join(join, ",") {
			t.Errorf("%s: RAFT_BOOTSTRAP_EXPECT %q RAFT_JOIN %q, want 3 and %s", n, e["RAFT_BOOTSTRAP_EXPECT"], e["RAFT_JOIN"], strings.Join(join, ","))
		}
		if want := nodes[0] + ":" + c.Services[nodes[0]].Environment["CLUSTER_GOSSIP_BIND_PORT"]; i > 0 && e["CLUSTER_JOIN"] != want {
			t.Errorf("%s: CLUSTER_JOIN %q, want %s", n, e["CLUSTER_JOIN"], want)
		}
		if e["REPLICATION_MINIMUM_FACTOR"] != "3" || e["DEFAULT_VECTORIZER_MODULE"] != "none" {
			t.Errorf("%s: environment %v", n, e)
		}
		if len(c.Services[n].Ports) != 0 {
			t.Errorf("%s publishes ports %v: it must stay on the compose network", n, c.Services[n].Ports)
		}
	}
	h := c.Services["hindsight"]
	if h.Build == nil {
		t.Fatal("no hindsight service built from the Dockerfile")
	}
	for _, n := range nodes {
		if h.DependsOn[n]["condition"] != "service_healthy" {
			t.Errorf("hindsight should wait for a healthy %s: %v", n, h.DependsOn)
		}
	}
	for name, s := range c.Services {
		if len(s.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no health check", name)
		}
		if len(s.Volumes) == 0 {
			t.Errorf("service %s keeps no data in a volume", name)
		}
		for _, v := range s.Volumes {
			if vol, _, _ := strings.Cut(v, ":"); !contains(c.Volumes, vol) {
				t.Errorf("service %s mounts %q, which is not a named volume", name, vol)
			}
		}
	}
	// Hindsight's settings are ones serve accepts, and mean Weaviate mode
	// with three replicas on one of the nodes.
	env := map[string]string{}
	for k, v := range h.Environment {
		if !strings.Contains(v, "${") {
			env[k] = v
		}
	}
	cfg := config.Default()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ld := config.NewLoader(fs, config.MapEnv(env), server.ConfigChecks())
	ld.Serve(&cfg)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := ld.Err(); err != nil {
		t.Fatalf("hindsight's environment is not a valid configuration: %v", err)
	}
	if cfg.TextIndex != "weaviate" || cfg.WeaviateReplication != 3 || !strings.HasPrefix(cfg.Semantic.WeaviateURL, "http://"+nodes[0]+":") {
		t.Errorf("hindsight: text index %q, replication %d, WEAVIATE_URL %q", cfg.TextIndex, cfg.WeaviateReplication, cfg.Semantic.WeaviateURL)
	}
}

func contains(m map[string]any, k string) bool { _, ok := m[k]; return ok }
