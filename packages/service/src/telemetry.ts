import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Env } from '@gleaner/config';

export interface Telemetry {
  /** Whether spans leave the process (an OTLP endpoint is set). */
  isExporting: boolean;
  /** Sends the spans still buffered; a no-op when nothing is exported. */
  shutdown(): Promise<void>;
}

/**
 * Trace context for a service process: W3C `traceparent` in and out (HTTP headers, job options)
 * and an AsyncLocalStorage context manager, so the API's request span becomes the parent of the
 * jobs it adds and each job's span the parent of the jobs that job adds.
 *
 * Spans are recorded and exported over OTLP/HTTP only when `OTEL_EXPORTER_OTLP_ENDPOINT` (spans go
 * to its `/v1/traces`) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as is) is set; the exporter reads
 * the other standard OTEL_* variables (headers, timeout) itself. Without one no tracer provider is registered: spans are OpenTelemetry's no-op ones,
 * which still carry an incoming trace id on to the jobs and log lines at almost no cost.
 */
export function startTelemetry(service: string, env: Env): Telemetry {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : '');
  if (!url || env.OTEL_SDK_DISABLED === 'true') {
    return { isExporting: false, shutdown: () => Promise.resolve() };
  }
  const provider = new TracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || `gleaner-${service}` }),
    ),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) })],
  });
  trace.setGlobalTracerProvider(provider);
  return { isExporting: true, shutdown: () => provider.shutdown() };
}
