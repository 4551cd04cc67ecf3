// Package metrics exposes Hindsight's Prometheus series: HTTP requests by
// route and status, the indexing outbox, index lag, embedding usage and the
// size of the records file. Values that live elsewhere are read at scrape
// time through the functions in Sources, so no other package imports
// Prometheus.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Sources are read at each scrape; nil functions are skipped.
type Sources struct {
	OutboxDepth   func() float64 // sessions waiting to be indexed
	RecordsBytes  func() float64 // size of the bbolt file
	IndexedTotal  func() float64 // sessions indexed since start
	EmbedRequests func() float64
	EmbedTokens   func() float64
	EmbedCostUSD  func() float64
	EmbedErrors   func() float64
	EmbedSkipped  func() float64 // chunks not re-embedded because their text hash was unchanged
}

// Metrics holds the registry and the series updated on the hot path.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	lag      prometheus.Histogram
	// degraded and unavailable count answers hurt by a failing dependency
	// of semantic search, by that dependency.
	degraded, unavailable *prometheus.CounterVec
}

// New registers every series.
func New(src Sources) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hindsight_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hindsight_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"route", "method"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hindsight_index_lag_seconds", Help: "Delay from a committed write to its session being searchable.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 300},
		}),
		degraded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hindsight_search_degraded_total",
			Help: "Hybrid searches and context requests answered from full-text alone because a dependency of semantic search failed, by dependency.",
		}, []string{"reason"}),
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hindsight_semantic_unavailable_total",
			Help: "Semantic searches refused (503) because a dependency failed, by dependency.",
		}, []string{"reason"}),
	}
	reg.MustRegister(m.requests, m.latency, m.lag, m.degraded, m.unavailable, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gauge := func(name, help string, f func() float64) {
		if f != nil {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
		}
	}
	counter := func(name, help string, f func() float64) {
		if f != nil {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
		}
	}
	gauge("hindsight_outbox_depth", "Sessions waiting to be indexed.", src.OutboxDepth)
	gauge("hindsight_records_bytes", "Size of the bbolt records file.", src.RecordsBytes)
	counter("hindsight_indexed_sessions_total", "Sessions indexed since start.", src.IndexedTotal)
	counter("hindsight_embedding_requests_total", "Requests to the embedding provider.", src.EmbedRequests)
	counter("hindsight_embedding_tokens_total", "Tokens sent to the embedding provider.", src.EmbedTokens)
	counter("hindsight_embedding_cost_usd_total", "Estimated embedding cost in USD.", src.EmbedCostUSD)
	counter("hindsight_embedding_errors_total", "Failed embedding requests.", src.EmbedErrors)
	counter("hindsight_embedding_skipped_total", "Chunks not re-embedded because their text was unchanged.", src.EmbedSkipped)
	return m
}

// ObserveRequest records one HTTP request; route is the route template, so
// ids in paths never become label values.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
}

// ObserveDegraded counts an answer that fell back to full-text because
// reason (the failing dependency) failed.
func (m *Metrics) ObserveDegraded(reason string) { m.degraded.WithLabelValues(reason).Inc() }

// ObserveUnavailable counts a semantic query refused because reason failed.
func (m *Metrics) ObserveUnavailable(reason string) { m.unavailable.WithLabelValues(reason).Inc() }

// ObserveLag records one session's write-to-searchable delay.
func (m *Metrics) ObserveLag(d time.Duration) { m.lag.Observe(d.Seconds()) }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
