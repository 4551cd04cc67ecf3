package localweaviate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cluster is several weaviate-server nodes forming one Raft cluster on
// loopback, for tests of replication and node failure.
//
// All nodes share one network namespace of their own: a holder process
// (`unshare --map-root-user --net`, loopback up, then sleep) creates it and
// each node joins it with `nsenter --user --net`, so the nodes reach each
// other on 127.0.0.1 and nothing they open is reachable from outside. Node
// i (from 0) listens on gossip port 7100+2i, data port 7101+2i (Weaviate
// expects the data port right after the gossip port), Raft port 8300+2i
// and Raft RPC port 8301+2i, gRPC 50051+i; the nodes are named node1,
// node2, ... and CLUSTER_IN_LOCALHOST tells Weaviate that they share one
// address, so Raft reaches each at the port RAFT_JOIN names. Every node's
// REST API is a unix socket served on 127.0.0.1 as for a single server
// (Node.URL).
type Cluster struct {
	Nodes []*Server

	holder *exec.Cmd
	done   chan struct{}
}

// LaunchCluster starts n nodes with their data under dir/node1 ... and
// returns once every node answers ready (the cluster has formed: a node is
// ready once the Raft bootstrap of RAFT_BOOTSTRAP_EXPECT = n nodes is
// done). extraEnv (NAME=value) is added to every node's environment. It
// needs network namespaces (unshare, nsenter and ip). The caller stops it
// with Stop.
func LaunchCluster(ctx context.Context, bin, dir string, n int, extraEnv ...string) (*Cluster, error) {
	if n < 1 || n > 9 {
		return nil, fmt.Errorf("localweaviate: cluster of %d nodes: want 1 to 9", n)
	}
	if !isolationWorks() {
		return nil, errors.New("localweaviate: a cluster needs network namespaces (unshare, ip), which are unavailable here")
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return nil, fmt.Errorf("localweaviate: a cluster needs nsenter: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &Cluster{done: make(chan struct{})}
	c.holder = exec.Command("unshare", "--map-root-user", "--net", "sh", "-c", "ip link set lo up && exec sleep 1000000")
	c.holder.SysProcAttr = sysProcAttr()
	if err := c.holder.Start(); err != nil {
		return nil, fmt.Errorf("localweaviate: start the namespace holder: %w", err)
	}
	go func() {
		c.holder.Wait()
		close(c.done)
	}()
	pid := strconv.Itoa(c.holder.Process.Pid)
	// The holder must have made the namespace and brought loopback up
	// before a node joins it: until then nsenter fails or sees lo down.
	up := false
	for range 200 {
		if exec.CommandContext(ctx, "nsenter", "--target", pid, "--user", "--net", "--preserve-credentials",
			"sh", "-c", "ip link show lo | grep -q LOWER_UP").Run() == nil {
			up = true
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !up {
		c.Stop()
		return nil, errors.New("localweaviate: the cluster's network namespace did not come up")
	}
	var join []string
	for i := range n {
		join = append(join, fmt.Sprintf("node%d:%d", i+1, 8300+2*i))
	}
	for i := range n {
		nd := filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(nd, 0o700); err != nil {
			c.Stop()
			return nil, err
		}
		s := &Server{Dir: nd, bin: bin, Isolated: true, log: &tailBuffer{max: 512 << 10}, launcher: "nsenter"}
		s.sock = filepath.Join(nd, "rest.sock")
		if len(s.sock) > 100 {
			short, err := os.MkdirTemp("", "wv")
			if err != nil {
				c.Stop()
				return nil, err
			}
			s.tmp, s.sock = short, filepath.Join(short, "rest.sock")
		}
		s.env = []string{
			"PATH=" + os.Getenv("PATH"),
			"PERSISTENCE_DATA_PATH=" + filepath.Join(nd, "data"),
			"DEFAULT_VECTORIZER_MODULE=none",
			"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true",
			"DISABLE_TELEMETRY=true",
			"GO_PROFILING_DISABLE=true",
			"PROMETHEUS_MONITORING_ENABLED=false",
			"LOG_LEVEL=warning",
			"CLUSTER_IN_LOCALHOST=true",
			fmt.Sprintf("CLUSTER_HOSTNAME=node%d", i+1),
			"CLUSTER_BIND_ADDR=127.0.0.1",
			"CLUSTER_ADVERTISE_ADDR=127.0.0.1",
			fmt.Sprintf("CLUSTER_GOSSIP_BIND_PORT=%d", 7100+2*i),
			fmt.Sprintf("CLUSTER_DATA_BIND_PORT=%d", 7101+2*i),
			fmt.Sprintf("RAFT_PORT=%d", 8300+2*i),
			fmt.Sprintf("RAFT_INTERNAL_RPC_PORT=%d", 8301+2*i),
			fmt.Sprintf("GRPC_PORT=%d", 50051+i),
			"RAFT_JOIN=" + strings.Join(join, ","),
			"RAFT_BOOTSTRAP_EXPECT=" + strconv.Itoa(n),
		}
		if i > 0 {
			s.env = append(s.env, "CLUSTER_JOIN=127.0.0.1:7100")
		}
		s.env = append(s.env, extraEnv...)
		s.args = []string{"--target", pid, "--user", "--net", "--preserve-credentials", "--",
			bin, "--scheme", "unix", "--socket-path", s.sock}
		p, err := newProxy(s.sock)
		if err != nil {
			c.Stop()
			return nil, err
		}
		s.proxy, s.URL = p, "http://"+p.addr()
		c.Nodes = append(c.Nodes, s)
		if err := s.spawn(); err != nil {
			c.Stop()
			return nil, err
		}
		if i == 0 {
			// The others join node1's gossip once, at start: it must be
			// up first (its REST API answers live once it is).
			if err := s.waitPath(ctx, "/v1/.well-known/live"); err != nil {
				c.Stop()
				return nil, err
			}
		}
	}
	for i, s := range c.Nodes {
		if err := s.waitReady(ctx); err != nil {
			err = fmt.Errorf("node%d: %w\nall nodes:\n%s", i+1, err, c.Tail(4<<10))
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Stop stops every node (as Server.Stop does) and the namespace holder.
func (c *Cluster) Stop() error {
	var errs []error
	for _, s := range c.Nodes {
		if err := s.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.holder != nil && c.holder.Process != nil {
		c.holder.Process.Signal(syscall.SIGKILL)
		<-c.done
		c.holder = nil
	}
	return errors.Join(errs...)
}

// Tail returns about the last n bytes of every node's output.
func (c *Cluster) Tail(n int) string {
	var b strings.Builder
	for i, s := range c.Nodes {
		fmt.Fprintf(&b, "--- node%d ---\n%s", i+1, s.Tail(n))
	}
	return b.String()
}
