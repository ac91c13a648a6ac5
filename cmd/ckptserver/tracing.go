package main

// OpenTelemetry traces, configured by the standard OTEL_* variables and off
// unless they ask for an exporter. Only the OTLP/HTTP exporter is built in
// (the gRPC one would bring gRPC into the binary); a collector takes both.

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore/internal/version"
)

// newTracerProvider returns the tracer provider that the OTEL_* variables
// of getenv configure, and the function that flushes and stops it; nil and
// a no-op when tracing is off: OTEL_SDK_DISABLED=true, or
// OTEL_TRACES_EXPORTER unset or "none" with no OTLP endpoint set.
// OTEL_TRACES_EXPORTER=otlp exports over OTLP/HTTP to
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT (the exporter reads its own
// variables: headers, timeout, TLS, compression); the SDK reads the
// sampler (OTEL_TRACES_SAMPLER) and the batching (OTEL_BSP_*), the
// resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. A value it
// cannot honour is a usage error.
func newTracerProvider(ctx context.Context, getenv func(string) string) (trace.TracerProvider, func(context.Context) error, error) {
	off := func(context.Context) error { return nil }
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, off, nil
	}
	exporters := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exporters == "" && (getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") {
		exporters = "otlp"
	}
	var opts []sdktrace.TracerProviderOption
	for _, name := range strings.Split(exporters, ",") {
		switch name = strings.TrimSpace(name); name {
		case "", "none":
		case "otlp":
			proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
			if proto == "" {
				proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
			}
			if proto != "" && proto != "http/protobuf" {
				return nil, nil, usage("OTEL_EXPORTER_OTLP_PROTOCOL %q: ckptserver exports OTLP over http/protobuf only", proto)
			}
			exp, err := otlptracehttp.New(ctx)
			if err != nil {
				return nil, nil, usage("OTEL_EXPORTER_OTLP_*: %v", err)
			}
			opts = append(opts, sdktrace.WithBatcher(exp))
		default:
			return nil, nil, usage("OTEL_TRACES_EXPORTER %q: ckptserver knows otlp and none", name)
		}
	}
	if len(opts) == 0 {
		return nil, off, nil
	}
	// The variables come after the defaults, so OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override them.
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(
			attribute.String("service.name", "ckptserver"),
			attribute.String("service.version", version.Get().Version),
		),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, nil, usage("OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithResource(res))...)
	return tp, tp.Shutdown, nil
}
