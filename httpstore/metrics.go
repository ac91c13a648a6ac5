package httpstore

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the handler's Prometheus collectors; a nil *metrics (no
// Registerer) records nothing. The labels mean one thing each, in every
// series: rpc is the route (getHead, runs/createOrResume, unknown), status
// the HTTP status, code the wire code of a failure (docs/operations.md).
type metrics struct {
	requests *prometheus.CounterVec
	errs     *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
	routes   map[string]*routeMetrics
}

// routeMetrics are one route's collectors, resolved once, so that a
// request costs no label lookups but its status code's.
type routeMetrics struct {
	name     string
	m        *metrics
	latency  prometheus.Observer
	inFlight gauge
	byStatus map[int]prometheus.Counter
}

type gauge interface {
	Inc()
	Dec()
}

type noGauge struct{}

func (noGauge) Inc() {}
func (noGauge) Dec() {}

var noRoute = &routeMetrics{inFlight: noGauge{}}

func newMetrics(reg prometheus.Registerer, b *budget) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ckptstore", Subsystem: "http", Name: "requests_total",
			Help: "Requests served, by RPC (route) and HTTP status.",
		}, []string{"rpc", "status"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ckptstore", Subsystem: "http", Name: "errors_total",
			Help: "Failed requests, by RPC (route) and wire code (NOT_REPLICATED apart from UNAVAILABLE, though both are 503).",
		}, []string{"rpc", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ckptstore", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time from the request's arrival to its reply, by RPC (route).",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"rpc"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ckptstore", Subsystem: "http", Name: "requests_in_flight",
			Help: "Requests being served, by RPC (route).",
		}, []string{"rpc"}),
		routes: map[string]*routeMetrics{},
	}
	bodyBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "ckptstore", Subsystem: "http", Name: "body_bytes_in_flight",
		Help: "Request-body bytes reserved by the requests being served (at most HandlerOptions.MaxInflightBytes).",
	}, func() float64 { return float64(b.used.Load()) })
	reg.MustRegister(m.requests, m.errs, m.latency, m.inFlight, bodyBytes)
	for name := range routes {
		m.routes[name] = m.newRoute(name)
	}
	for _, name := range streamRouteNames {
		m.routes[name] = m.newRoute(name)
	}
	m.routes["unknown"] = m.newRoute("unknown")
	return m
}

func (m *metrics) newRoute(name string) *routeMetrics {
	rm := &routeMetrics{name: name, m: m, latency: m.latency.WithLabelValues(name),
		inFlight: m.inFlight.WithLabelValues(name), byStatus: map[int]prometheus.Counter{}}
	for _, s := range []int{200, 400, 401, 404, 405, 409, 413, 415, 500, 501, 503} {
		rm.byStatus[s] = m.requests.WithLabelValues(name, strconv.Itoa(s))
	}
	return rm
}

func (m *metrics) route(name string) *routeMetrics {
	if m == nil {
		return noRoute
	}
	return m.routes[name]
}

func (rm *routeMetrics) observe(status int, d time.Duration) {
	if rm.m == nil {
		return
	}
	rm.latency.Observe(d.Seconds())
	if c, ok := rm.byStatus[status]; ok {
		c.Inc()
		return
	}
	rm.m.requests.WithLabelValues(rm.name, strconv.Itoa(status)).Inc()
}

// failed counts a failure of wire code code; "" (a success) counts
// nothing. Failures are rare, so the label lookup is paid then only.
func (rm *routeMetrics) failed(code string) {
	if rm.m == nil || code == "" {
		return
	}
	rm.m.errs.WithLabelValues(rm.name, code).Inc()
}
