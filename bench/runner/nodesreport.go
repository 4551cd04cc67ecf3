package runner

import (
	"fmt"
	"strings"

	"github.com/hindsight-dev/hindsight/bench"
)

// nodesReport is the report.md of a bench nodes run.
func nodesReport(r *NodesResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bench nodes: records in PostgreSQL, several nodes\n\n```\n%s\n```\n\n", r.Command)
	fmt.Fprintf(&b, "Commit %s, %s, %s CPUs, load average %s at start and %s at end, %s. Every node is `hindsight serve`, "+
		"a process of its own, and PostgreSQL and Weaviate run on the same machine: they share its cores with the nodes and the "+
		"clients, as on a one-machine deployment.\n\n",
		r.Settings["commit"], r.Settings["go"], r.Settings["cpus"], r.Settings["load average at start"], r.Settings["load average at end"], r.Settings["date"])
	if in := r.Ingest; in != nil {
		ing := in.Runs[0].Result
		fmt.Fprintf(&b, "## Ingest: PostgreSQL against bbolt\n\n"+
			"`bench ingest`'s workload (%s: %d messages; then %s: %d single-message syncs) through the HTTP API of a fresh node "+
			"keeping its records in bbolt and of one keeping them in PostgreSQL, %d rounds each, alternated (each round starts "+
			"with the other store), the same generated data every time. Both keep the text index in Bleve in their data "+
			"directory and embed nothing: the figures measure the record store. Medians over the rounds; ratio = PostgreSQL over bbolt.\n\n",
			ing.Batch.Name, ing.Batch.Messages, ing.Single.Name, ing.Single.Messages, len(in.Runs)/2)
		b.WriteString("| | bbolt | PostgreSQL | ratio |\n|---|---:|---:|---:|\n")
		fmt.Fprintf(&b, "| batch ingest, messages/s | %.0f | %.0f | **%.2f** |\n", in.Bbolt.BatchMsgsPS, in.Postgres.BatchMsgsPS, in.BatchRatio)
		fmt.Fprintf(&b, "| batch request p99, ms | %.1f | %.1f | %.2f |\n", in.Bbolt.BatchP99ms, in.Postgres.BatchP99ms, in.BatchP99Ratio)
		fmt.Fprintf(&b, "| single syncs/s | %.0f | %.0f | **%.2f** |\n", in.Bbolt.SingleSyncPS, in.Postgres.SingleSyncPS, in.SingleRatio)
		fmt.Fprintf(&b, "| single sync p99, ms | %.1f | %.1f | %.2f |\n", in.Bbolt.SingleP99ms, in.Postgres.SingleP99ms, in.SingleP99Ratio)
		fmt.Fprintf(&b, "| failed batch requests (5xx), all rounds | %d of %d | %d of %d | |\n", in.Bbolt.BatchFailed, in.Bbolt.BatchSent, in.Postgres.BatchFailed, in.Postgres.BatchSent)
		fmt.Fprintf(&b, "| failed single syncs (5xx), all rounds | %d of %d | %d of %d | |\n\n", in.Bbolt.SingleFailed, in.Bbolt.SingleSent, in.Postgres.SingleFailed, in.Postgres.SingleSent)
		b.WriteString("Every run (indexed after = how long indexing went on after the phase's last response; raw bbolt = the same records " +
			"written straight into a bbolt file on the same disk, the ceiling `bench ingest` reports):\n\n" +
			"| round | store | batch msgs/s | batch p99 ms | failed batches | indexed after s | singles/s | single p99 ms | failed singles | indexed after s | raw bbolt batch/s | live probe p99 ms |\n" +
			"|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		var failures []string
		for _, run := range in.Runs {
			x := run.Result
			live := 0.0
			if x.Batch.Live != nil {
				live = x.Batch.Live.P99ms
			}
			fmt.Fprintf(&b, "| %d | %s | %.0f | %.1f | %d of %d | %.1f | %.0f | %.1f | %d of %d | %.1f | %.0f | %.0f |\n", run.Round, run.Store,
				x.Batch.MessagesPS, x.Batch.P99ms, x.Batch.Failed, x.Batch.Failed+x.Batch.Requests, x.Batch.IndexedAfter,
				x.Single.RequestsPS, x.Single.P99ms, x.Single.Failed, x.Single.Failed+x.Single.Requests, x.Single.IndexedAfter, x.Batch.CeilingPS, live)
			for _, f := range []string{x.Batch.FirstFailure, x.Single.FirstFailure, x.Batch.ProbeFailure} {
				if f != "" {
					failures = append(failures, fmt.Sprintf("round %d, %s: `%s`", run.Round, run.Store, f))
				}
			}
			for _, e := range run.Errors {
				failures = append(failures, fmt.Sprintf("round %d, %s, the node logged: `%s`", run.Round, run.Store, e))
			}
		}
		if len(failures) > 0 {
			b.WriteString("\n**Requests failed** (answered with a 5xx status; the rates count only the accepted messages, the p99 includes " +
				"the failed requests; a failed live probe stops early). The first failure of each phase that had any, and the errors the node logged last:\n\n")
			for _, f := range failures {
				b.WriteString("- " + f + "\n")
			}
		}
		b.WriteString("\n")
	}
	if s := r.Search; s != nil {
		fmt.Fprintf(&b, "## Search: one node, and spread over three\n\n"+
			"Three nodes over one PostgreSQL database and one Weaviate (text index in Weaviate, no embedder). A corpus of %d "+
			"generated sessions (%d messages, `bench ingest`'s batch workload) is synced through node 1 from one client (batches of 500) and indexed; then the same "+
			"%d full-text queries (the load bench's mix: identifiers, topics, error messages, titles; 10 results each) are sent "+
			"from %d clients at once (a) all to node 1 and (b) round robin over the three, and, as a peer, (c) to a node keeping "+
			"the same corpus in bbolt with its embedded index, %d rounds, each starting with another way; latencies of all "+
			"rounds pooled, after 50 untimed queries per node.\n\n",
			s.Sessions, s.Messages, s.Queries, s.Concurrency, s.Rounds)
		b.WriteString("| way | nodes | queries | p50 ms | p99 ms | queries/s | corpus synced and indexed, s |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, w := range s.Ways {
			fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.1f | %.0f | %.1f |\n", w.Name, w.Nodes, w.N, w.P50ms, w.P99ms, w.PerS, w.IndexedS)
		}
		fmt.Fprintf(&b, "\nSpread over three / one node: p50 **%.2f**, p99 **%.2f**. One node over the bbolt node, p99: %.2f. "+
			"On one machine the three nodes share its cores, so spreading buys no CPU: what it shows is what a node adds "+
			"in front of the shared stores (PostgreSQL and Weaviate do the work for every node).\n\n", s.P50Ratio, s.P99Ratio, s.BboltP99Ratio)
	}
	if t := r.Takeover; t != nil {
		fmt.Fprintf(&b, "## Takeover: a killed node's claimed work\n\n"+
			"On the same three nodes, two clients sync a bulk (batches of generated sessions, each titled with a word of its own) "+
			"to node 3 until its indexer holds claims on outbox entries; then node 3 is killed (SIGKILL: it releases nothing). "+
			"A claim holds for the lease, %.0f s (`kv.DefaultLease`; a running node renews its claims every third of it), so the "+
			"others may take the entries only once the lease left at the kill has run out. Times are from the kill.\n\n", t.LeaseS)
		b.WriteString("| | s | × lease |\n|---|---:|---:|\n")
		row := func(name string, v float64) { fmt.Fprintf(&b, "| %s | %.1f | %.2f |\n", name, v, v/t.LeaseS) }
		row("lease left on the killed node's claims", t.LeaseLeftS)
		row("every claim passed to another node", t.TakenS)
		row("**every claimed entry indexed**", t.IndexedS)
		row("every claimed session found by a search on node 1", t.SearchableS)
		fmt.Fprintf(&b, "\nNode 3 had acknowledged %d bulk batches and held claims on %d outbox entries (%d sessions waiting for "+
			"full-text indexing; the whole outbox held %d) when it was killed (attempt %d: a kill that finds the node between "+
			"two steps, holding nothing, is repeated). The entries were indexed %.1f s after their lease ran out.\n\n",
			t.BulkBatches, t.Claimed, t.Sessions, t.Backlog, t.Attempts, t.AfterLeaseS)
	}
	b.WriteString("## Settings\n\n")
	bench.WriteSettings(&b, r.Settings)
	return b.String()
}
