package runner

// Hindsight's own full-text index as a peer, in the mode the run's server
// does not use: "hindsight-bleve" (the embedded index) or
// "hindsight-weaviate" (index/weaviatetext), so one run measures both
// modes on the same documents and queries (--text-index weaviate adds
// hindsight-bleve by itself).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/index/weaviatetext"
	"github.com/hindsight-dev/hindsight/internal/localweaviate"
)

// Peer names of Hindsight's two full-text indexes.
const (
	peerHindsightBleve    = "hindsight-bleve"
	peerHindsightWeaviate = "hindsight-weaviate"
)

// textIndex is what a text peer needs of either index.
type textIndex interface {
	Put(ctx context.Context, sessions []index.Session) error
	Search(ctx context.Context, q index.Query) ([]index.Hit, error)
	Close() error
}

// textPeer searches session documents built as a bench run's ingestion
// builds them: title = the document's title, body = its text (one user
// message, trimmed as ingest trims it).
type textPeer struct {
	name  string
	ix    textIndex
	drop  func() error // removes the index's data at Close
	texts *docTexts
	// settle, when set, runs before the first search after an Index
	settle  func(context.Context) error
	settled bool
}

func (p *textPeer) Name() string { return p.name }

func (p *textPeer) Index(ctx context.Context, docs []bench.Doc) error {
	ss := make([]index.Session, len(docs))
	for i, d := range docs {
		ss[i] = index.Session{UserID: "bench", SessionID: d.ID, Title: d.Title, Body: strings.TrimSpace(d.Text)}
	}
	p.texts.add(ss)
	p.settled = false
	return p.ix.Put(ctx, ss)
}

func (p *textPeer) Search(ctx context.Context, q string, k int) ([]string, error) {
	if p.settle != nil && !p.settled {
		if err := p.settle(ctx); err != nil {
			return nil, err
		}
		p.settled = true
	}
	hits, err := p.ix.Search(ctx, index.Query{UserID: "bench", Text: q, Kind: index.Sessions, Limit: k})
	if errors.Is(err, index.ErrBadQuery) {
		return nil, bench.ErrNoTerms
	}
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.SessionID
	}
	return ids, nil
}

func (p *textPeer) Close() error {
	err := p.ix.Close()
	if p.drop != nil {
		err = errors.Join(err, p.drop())
	}
	return err
}

// docTexts is the Weaviate peer's records: the text of what it indexed.
type docTexts struct {
	mu sync.Mutex
	m  map[string]index.Session
}

func (t *docTexts) add(ss []index.Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range ss {
		t.m[s.SessionID] = s
	}
}

func (t *docTexts) Texts(_ context.Context, _ string, ids []string) (map[string]index.Session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]index.Session, len(ids))
	for _, id := range ids {
		if s, ok := t.m[id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

func openTextPeer(ctx context.Context, name string, env *peerEnv) (bench.Peer, error) {
	texts := &docTexts{m: map[string]index.Session{}}
	if name == peerHindsightBleve {
		ix, err := index.Open(filepath.Join(env.work, "peer-bleve"), index.Options{})
		if err != nil {
			return nil, err
		}
		return &textPeer{name: name, ix: ix, texts: texts}, nil
	}
	if env.weaviateURL == "" {
		return nil, errors.New("no Weaviate for hindsight-weaviate: set WEAVIATE_URL or pass --text-index weaviate (which starts the pinned server)")
	}
	ix, err := weaviatetext.Open(weaviatetext.Config{URL: env.weaviateURL, APIKey: env.weaviateKey, Prefix: scratchPrefix("HindsightPeerText")}, texts)
	if err != nil {
		return nil, err
	}
	return &textPeer{name: name, ix: ix, texts: texts, drop: func() error { return ix.Drop(context.Background()) }, settle: ix.Settle}, nil
}

// scratchPrefix is a collection prefix of its own for one run.
func scratchPrefix(base string) string {
	var b [6]byte
	rand.Read(b[:])
	return base + "_" + hex.EncodeToString(b[:])
}

// startWeaviate launches the pinned weaviate-server for a run that needs
// one and has no WEAVIATE_URL; the caller stops it.
func startWeaviate(ctx context.Context, dir string, say func(string)) (*localweaviate.Server, error) {
	bin, err := localweaviate.Binary()
	if err != nil {
		return nil, fmt.Errorf("--text-index weaviate needs a Weaviate: set WEAVIATE_URL, or build the pinned server with `make weaviate` (%w)", err)
	}
	say(fmt.Sprintf("starting weaviate-server (%s)", bin))
	return localweaviate.Launch(ctx, bin, dir)
}

// prepareTextIndex sets up a run whose server keeps its text index in
// Weaviate (textIndex "weaviate"): a Weaviate (WEAVIATE_URL, else the
// pinned server, launched), collections of the run's own, and, when peers
// is not nil, the Bleve mode as a peer. A run that names the
// hindsight-weaviate peer gets a Weaviate the same way. The returned
// function drops the collections and stops a launched server.
func prepareTextIndex(ctx context.Context, base *config.Config, peers *[]string, textIndex, work string, progressOut io.Writer) (func(), error) {
	needs := textIndex == "weaviate" || peers != nil && slices.Contains(*peers, peerHindsightWeaviate)
	if !needs {
		base.TextIndex = "bleve"
		return func() {}, nil
	}
	var srv *localweaviate.Server
	if base.Semantic.WeaviateURL == "" {
		var err error
		if srv, err = startWeaviate(ctx, filepath.Join(work, "weaviate-text"), func(s string) { fmt.Fprintln(progressOut, s) }); err != nil {
			return nil, err
		}
		base.Semantic.WeaviateURL = srv.URL
	}
	stop := func() {
		if srv != nil {
			srv.Stop()
		}
	}
	if textIndex != "weaviate" {
		base.TextIndex = "bleve"
		return stop, nil
	}
	base.TextIndex = "weaviate"
	base.WeaviateTextPrefix = scratchPrefix("HindsightBenchText")
	if peers != nil && !slices.Contains(*peers, peerHindsightBleve) {
		*peers = append(*peers, peerHindsightBleve)
	}
	url, key, prefix := base.Semantic.WeaviateURL, base.Semantic.WeaviateKey, base.WeaviateTextPrefix
	return func() {
		if srv == nil { // a server of the user's: leave nothing behind
			if ix, err := weaviatetext.Open(weaviatetext.Config{URL: url, APIKey: key, Prefix: prefix}, &docTexts{}); err == nil {
				ix.Drop(context.Background())
			}
		}
		stop()
	}, nil
}
