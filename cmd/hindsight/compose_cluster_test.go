package main

import (
	"flag"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/server"
)

// The cluster compose file, checked without a Docker engine: three Weaviate
// nodes of the pinned version forming one Raft cluster with replication,
// PostgreSQL with a required password, two Hindsight nodes in Weaviate mode
// keeping their records in that database, with settings the config package
// accepts, and a proxy over both nodes, the only published port.
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
	var hnodes []string
	for name := range c.Services {
		if strings.HasPrefix(name, "hindsight") {
			hnodes = append(hnodes, name)
		}
	}
	slices.Sort(hnodes)
	if len(hnodes) != 2 {
		t.Fatalf("hindsight nodes %v, want 2", hnodes)
	}
	for _, hn := range hnodes {
		h := c.Services[hn]
		if h.Build == nil {
			t.Errorf("%s is not built from the Dockerfile", hn)
		}
		for _, n := range append([]string{"postgres"}, nodes...) {
			if hn == hnodes[0] && h.DependsOn[n]["condition"] != "service_healthy" {
				t.Errorf("%s should wait for a healthy %s: %v", hn, n, h.DependsOn)
			}
		}
		if len(h.Ports) != 0 {
			t.Errorf("%s publishes ports %v: only the proxy is published", hn, h.Ports)
		}
	}
	// The second node starts once the first is healthy: one node, not
	// two at once, creates the collections and builds the index.
	if c.Services[hnodes[1]].DependsOn[hnodes[0]]["condition"] != "service_healthy" {
		t.Errorf("%s should wait for a healthy %s: %v", hnodes[1], hnodes[0], c.Services[hnodes[1]].DependsOn)
	}
	for name, s := range c.Services {
		if len(s.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no health check", name)
		}
		if len(s.Volumes) == 0 {
			t.Errorf("service %s keeps no data in a volume", name)
		}
		for _, v := range s.Volumes {
			vol, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(vol, "./") {
				// A configuration file of the repository, read-only.
				if _, err := os.Stat("../../" + vol); err != nil || !strings.HasSuffix(v, ":ro") {
					t.Errorf("service %s mounts %q: want a file of the repository, read-only (%v)", name, v, err)
				}
				continue
			}
			if !contains(c.Volumes, vol) {
				t.Errorf("service %s mounts %q, which is not a named volume", name, vol)
			}
		}
	}

	// PostgreSQL: on the compose network only, its password from the
	// environment of compose (no default), checked ready.
	pg := c.Services["postgres"]
	if !strings.HasPrefix(pg.Image, "postgres:") || len(pg.Ports) != 0 {
		t.Errorf("postgres: image %q ports %v, want postgres's image, unpublished", pg.Image, pg.Ports)
	}
	if got := pg.Healthcheck.Test; !slices.Contains(got, "pg_isready") {
		t.Errorf("postgres health check %v, want pg_isready", got)
	}
	const pgPassword = "${HINDSIGHT_PG_PASSWORD:?set HINDSIGHT_PG_PASSWORD}"
	if pg.Environment["POSTGRES_PASSWORD"] != pgPassword {
		t.Errorf("POSTGRES_PASSWORD %q, want %s: required, never a default", pg.Environment["POSTGRES_PASSWORD"], pgPassword)
	}

	// Every node's settings are ones serve accepts (compose's variables
	// filled with placeholders), and mean: records in that database, the
	// text index in Weaviate with three replicas, on one of the nodes.
	var records []string
	for _, hn := range hnodes {
		env := map[string]string{}
		for k, v := range c.Services[hn].Environment {
			v = strings.ReplaceAll(v, pgPassword, "pw")
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
			t.Fatalf("%s's environment is not a valid configuration: %v", hn, err)
		}
		if cfg.TextIndex != "weaviate" || cfg.WeaviateReplication != 3 || !strings.HasPrefix(cfg.Semantic.WeaviateURL, "http://"+nodes[0]+":") {
			t.Errorf("%s: text index %q, replication %d, WEAVIATE_URL %q", hn, cfg.TextIndex, cfg.WeaviateReplication, cfg.Semantic.WeaviateURL)
		}
		u, err := url.Parse(cfg.Records)
		if pgOn, _ := kv.RecordsInPostgres(cfg.Records); err != nil || !pgOn || u.Hostname() != "postgres" ||
			u.User.Username() != pg.Environment["POSTGRES_USER"] || strings.TrimPrefix(u.Path, "/") != pg.Environment["POSTGRES_DB"] {
			t.Errorf("%s: HINDSIGHT_RECORDS %q, want the postgres service's database as its user", hn, cfg.Records)
		}
		records = append(records, cfg.Records)
	}
	if records[0] != records[1] {
		t.Errorf("the nodes keep their records in different places: %v", records)
	}

	// The proxy: the one published port, spreading requests over every
	// node, which it checks by /health.
	px := c.Services["proxy"]
	if len(px.Ports) != 1 || !strings.HasSuffix(px.Ports[0], ":7420") {
		t.Errorf("proxy ports %v, want 7420 published", px.Ports)
	}
	for _, hn := range hnodes {
		if _, ok := px.DependsOn[hn]; !ok {
			t.Errorf("the proxy does not wait for %s: %v", hn, px.DependsOn)
		}
	}
	caddy, err := os.ReadFile("../../Caddyfile.cluster")
	if err != nil {
		t.Fatal(err)
	}
	var upstreams []string
	for _, hn := range hnodes {
		upstreams = append(upstreams, hn+":7420")
	}
	for _, want := range []string{":7420 {", "reverse_proxy " + strings.Join(upstreams, " ") + " {", "health_uri /health", "lb_try_duration"} {
		if !strings.Contains(string(caddy), want) {
			t.Errorf("Caddyfile.cluster lacks %q", want)
		}
	}
}

func contains(m map[string]any, k string) bool { _, ok := m[k]; return ok }
