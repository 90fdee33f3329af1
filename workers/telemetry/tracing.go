package telemetry

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// TracingConfigured is true when the standard OpenTelemetry variables
// name an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, or the traces'
// own): tracing is off otherwise.
func TracingConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Tracing is the Temporal SDK's OpenTelemetry tracing interceptor,
// exporting over OTLP/HTTP to the endpoint the OTEL_EXPORTER_OTLP_*
// variables name. Given to the Temporal client of the gateway and of the
// worker, it makes a message one trace: the gateway's signal, the
// session's workflow, its model attempts and its deliveries. shutdown
// flushes what is buffered.
func Tracing(ctx context.Context, service string) (ic interceptor.Interceptor, shutdown func(context.Context) error, err error) {
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("the OTLP trace exporter (OTEL_EXPORTER_OTLP_*): %w", err)
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
	)
	ic, err = temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: provider.Tracer("replyflow")})
	if err != nil {
		_ = provider.Shutdown(ctx)
		return nil, nil, err
	}
	return ic, provider.Shutdown, nil
}
