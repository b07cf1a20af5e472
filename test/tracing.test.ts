import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { buildApp } from '@gleaner/api';
import { startTelemetry } from '@gleaner/service';
import { getRunByPublicId, insertSite, type RunRow } from '@gleaner/db';
import { createRedisConnection } from '@gleaner/queue';
import { createFixtureCareerSite, waitFor, type FixtureCareerSite } from '@gleaner/testing';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi } from './support/api-server.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * A scrape started through the API with a caller's `traceparent` runs in that caller's trace:
 * the request's server span, the scrape job it adds, and the crawl jobs the scrape adds, each the
 * child of the one before, all under the caller's trace id. Without an OTLP endpoint nothing is
 * recorded, yet the trace id still reaches the jobs' log lines; with one, spans are exported.
 */
const POSTINGS = 3;

let system: InProcessSystem;
let producer: Redis;
let app: Awaited<ReturnType<typeof buildApp>>;
let fixture: FixtureCareerSite;
let siteCounter = 0;
const workerLogs: Record<string, unknown>[] = [];
/** As each service's process starts it: W3C propagation and context, with no endpoint set. */
let telemetry: ReturnType<typeof startTelemetry>;

function newTraceparent(): { traceId: string; spanId: string; header: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

/** Starts a scrape of a new site through the API under `traceparent` and waits for its end. */
async function scrapeUnder(traceparent: string): Promise<RunRow> {
  siteCounter += 1;
  const site = await insertSite(system.handle.db, {
    siteName: `traced-${siteCounter}`,
    kind: 'career-site',
    config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
  });
  const answer = await app.inject({
    method: 'POST',
    url: '/jobs/scrape',
    headers: { traceparent },
    payload: { site_name: site.siteName },
  });
  expect(answer.statusCode).toBe(202);
  const runId = answer.json<{ data: { run_id: string } }>().data.run_id;
  return waitFor(
    async () => {
      const run = await getRunByPublicId(system.handle.db, runId);
      return run?.finishedAt ? run : undefined;
    },
    { timeoutMs: 60_000, what: 'the traced run to end' },
  );
}

beforeAll(async () => {
  telemetry = startTelemetry('api', {});
  fixture = await createFixtureCareerSite({ postings: POSTINGS, pageBytes: 2000 });
  const logs = new PassThrough();
  logs.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) {
      if (line.trim()) workerLogs.push(JSON.parse(line) as Record<string, unknown>);
    }
  });
  system = await startInProcessSystem('tracing', { logDestination: logs });
  producer = createRedisConnection(system.namespace.url, 'producer');
  ({ app } = await startTestApi(system, {}, producer));
});

afterAll(async () => {
  await app?.close();
  await system?.close();
  producer?.disconnect();
  await fixture?.close();
  trace.disable();
  context.disable();
  propagation.disable();
});

describe('tracing', () => {
  it('without an OTLP endpoint records nothing, yet carries the caller’s trace id to the jobs', async () => {
    expect(telemetry.isExporting).toBe(false);
    const probe = trace.getTracer('probe').startSpan('probe');
    expect(probe.isRecording()).toBe(false);
    probe.end();

    const caller = newTraceparent();
    const run = await scrapeUnder(caller.header);
    expect(run.status).toBe('succeeded');
    // Lines the workers logged while running the scrape's jobs name the caller's trace.
    const traced = workerLogs.filter((line) => line.trace_id === caller.traceId);
    expect(traced.length).toBeGreaterThan(0);
  });

  it('makes the scrape and its crawl jobs children of the request, under the caller’s trace', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    expect(trace.setGlobalTracerProvider(provider)).toBe(true);

    const caller = newTraceparent();
    const run = await scrapeUnder(caller.header);
    expect(run.status).toBe('succeeded');

    const inTrace = () =>
      exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === caller.traceId);
    // A crawl job's span ends once the job is marked complete, which may follow the run's end.
    const spans = await waitFor(
      () => {
        const found = inTrace();
        return found.filter((span) => span.name === 'process crawl').length >= POSTINGS
          ? found
          : undefined;
      },
      { what: 'a span for each crawl job' },
    );
    const one = (predicate: (span: ReadableSpan) => boolean, what: string): ReadableSpan => {
      const matching = spans.filter(predicate);
      expect(matching, what).toHaveLength(1);
      return matching[0]!;
    };
    const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

    const server = one(
      (span) => span.kind === SpanKind.SERVER && span.name === 'POST /jobs/scrape',
      'the request span',
    );
    expect(parentOf(server)).toBe(caller.spanId);
    expect(server.attributes['http.response.status_code']).toBe(202);

    const addScrape = one(
      (span) => span.kind === SpanKind.PRODUCER && span.name.startsWith('add scrape.'),
      'the span adding the scrape job',
    );
    expect(parentOf(addScrape)).toBe(server.spanContext().spanId);

    const scrape = one(
      (span) => span.kind === SpanKind.CONSUMER && span.name === 'process scrape',
      'the scrape job’s span',
    );
    expect(parentOf(scrape)).toBe(addScrape.spanContext().spanId);

    const addCrawls = spans.filter(
      (span) => span.kind === SpanKind.PRODUCER && span.name === 'addBulk crawl',
    );
    expect(addCrawls.length).toBeGreaterThan(0);
    for (const add of addCrawls) expect(parentOf(add)).toBe(scrape.spanContext().spanId);

    const crawls = spans.filter(
      (span) => span.kind === SpanKind.CONSUMER && span.name === 'process crawl',
    );
    expect(crawls).toHaveLength(POSTINGS);
    const addCrawlIds = new Set(addCrawls.map((span) => span.spanContext().spanId));
    for (const crawl of crawls) expect(addCrawlIds).toContain(parentOf(crawl));
  });

  it('exports spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT, named for the service', async () => {
    const received: { url: string; body: Buffer }[] = [];
    const collector: Server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({ url: request.url ?? '', body: Buffer.concat(chunks) });
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const { port } = collector.address() as AddressInfo;
    try {
      trace.disable();
      const exporting = startTelemetry('worker', {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}/`,
      });
      expect(exporting.isExporting).toBe(true);
      trace.getTracer('probe').startSpan('exported-probe').end();
      await exporting.shutdown();

      expect(received.map((request) => request.url)).toEqual(['/v1/traces']);
      const body = received[0]!.body.toString('latin1');
      expect(body).toContain('exported-probe');
      expect(body).toContain('gleaner-worker');
    } finally {
      await new Promise((resolve) => collector.close(resolve));
    }
  });
});
