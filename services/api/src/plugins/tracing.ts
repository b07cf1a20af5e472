import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
} from '@opentelemetry/api';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's server span on its caller's `traceparent`; jobs added while handling it join its trace. */
    traceContext: Context | null;
  }
}

/**
 * A server span per request, the child of an incoming W3C `traceparent`. The span is made active
 * for the rest of the request twice: around the hooks that follow `onRequest`, and again around
 * the handler, since a request's body is read in the socket's own async context, not this one.
 * With no tracer provider registered (no OTLP endpoint), the span is a no-op that still carries
 * the caller's trace id on to the jobs and log lines.
 */
export const tracingPlugin = fp(
  async (app) => {
    const tracer = trace.getTracer('gleaner-api');
    app.decorateRequest('traceContext', null);

    app.addHook('onRequest', (request, _reply, done) => {
      const parent = propagation.extract(context.active(), request.headers);
      const route = request.routeOptions.url;
      const span = tracer.startSpan(
        route ? `${request.method} ${route}` : request.method,
        {
          kind: SpanKind.SERVER,
          attributes: {
            'http.request.method': request.method,
            'url.path': request.url.split('?', 1)[0],
            ...(route ? { 'http.route': route } : {}),
          },
        },
        parent,
      );
      request.traceContext = trace.setSpan(parent, span);
      context.with(request.traceContext, done);
    });

    app.addHook('preHandler', (request, _reply, done) => {
      if (request.traceContext) context.with(request.traceContext, done);
      else done();
    });

    app.addHook('onError', (request, _reply, error, done) => {
      if (request.traceContext) trace.getSpan(request.traceContext)?.recordException(error);
      done();
    });

    app.addHook('onResponse', (request, reply, done) => {
      const span = request.traceContext && trace.getSpan(request.traceContext);
      if (span) {
        span.setAttribute('http.response.status_code', reply.statusCode);
        if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
      done();
    });
  },
  { name: 'tracing' },
);
