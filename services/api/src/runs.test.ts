import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import {
  completeListing,
  createRun,
  deleteSite,
  finalizeRun,
  insertSite,
  settlePostings,
  startRun,
  upsertListedPostings,
  type RunRow,
} from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import {
  createRunLogWriter,
  waitForRedis,
  type RedisClient,
  type RunLogLine,
  type RunLogWriter,
} from '@gleaner/queue';
import { waitFor } from '@gleaner/testing';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunFeeds, type RunFeedClient } from './routes/runs/run-feeds.js';
import type { RunProgress } from './routes/runs/run-progress.js';
import { createApiTestStack, type ApiTestStack } from './test-stack.test-support.js';

let stack: ApiTestStack;
let app: FastifyInstance;
let redis: RedisClient;
let writer: RunLogWriter;
let prefix: string;
let siteCount = 0;

beforeAll(async () => {
  stack = await createApiTestStack('runs');
  app = stack.app;
  prefix = stack.prefix;
  redis = stack.redis;
  await waitForRedis(redis);
  writer = createRunLogWriter({
    redis,
    prefix,
    flushIntervalMs: 10,
    onError: (error) => {
      throw error;
    },
  });
});

afterAll(async () => {
  await writer?.close();
  await stack?.close();
});

/** The one place requests are made (as the stack's admin key, which `inject()` sends). */
function request(method: 'GET' | 'POST', url: string, headers: Record<string, string> = {}) {
  return app.inject({ method, url, headers });
}

/** A site whose run has listed `count` postings and is running. */
async function runningRun(count: number, siteName?: string) {
  siteCount += 1;
  const db = stack.handle.db;
  const site = await insertSite(db, {
    siteName: siteName ?? `watched-${siteCount}`,
    kind: 'career-site',
    config: { url: 'https://example.com', sitemapUrl: 'https://example.com/sitemap.xml' },
  });
  const run = await createRun(db, { siteId: site.id, trigger: 'manual' });
  await startRun(db, run.id);
  const postings = await upsertListedPostings(
    db,
    site.id,
    run.id,
    Array.from({ length: count }, (_, i) => ({
      externalId: `job-${i}`,
      url: `https://example.com/jobs/${i}`,
    })),
  );
  await completeListing(db, run.id, { requestedPages: count, listingComplete: true });
  return { site, run, postingIds: postings.map((posting) => posting.id) };
}

async function settle(run: RunRow, postingIds: string[], status: 'skipped' | 'error') {
  await settlePostings(
    stack.handle.db,
    postingIds.map((postingId) =>
      status === 'error'
        ? { status, postingId, runId: run.id, error: 'crawl: 404' }
        : { status, postingId, runId: run.id },
    ),
  );
}

function line(msg: string, stage: RunLogLine['stage'], extra: Partial<RunLogLine> = {}) {
  return { stage, level: 'info' as const, time: Date.now(), msg, ...extra };
}

interface SseEvent {
  event: string;
  id?: string;
  data: any;
}

function parseEvents(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.split('\n').some((l) => l.startsWith('event: ')))
    .map((block) => {
      const fields = new Map(
        block.split('\n').map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)]),
      );
      return {
        event: fields.get('event')!,
        id: fields.get('id'),
        data: JSON.parse(fields.get('data')!),
      };
    });
}

/** An EventSource-like reader over a real socket: events as they arrive. */
async function openEvents(origin: string, path: string) {
  const controller = new AbortController();
  const response = await fetch(`${origin}${path}`, {
    signal: controller.signal,
    headers: { authorization: `Bearer ${stack.adminKey}` },
  });
  const events: SseEvent[] = [];
  let raw = '';
  let closed = false;
  const reading = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body!) {
        raw += decoder.decode(chunk as Uint8Array, { stream: true });
        const cut = raw.lastIndexOf('\n\n');
        if (cut >= 0) {
          events.push(...parseEvents(raw.slice(0, cut + 2)));
          raw = raw.slice(cut + 2);
        }
      }
    } catch {
      // Aborted by the test.
    } finally {
      closed = true;
    }
  })();
  return {
    response,
    events,
    isClosed: () => closed,
    async close() {
      controller.abort();
      await reading;
    },
  };
}

describe('GET /runs/:runId', () => {
  it('answers 404 with a problem for an unknown run', async () => {
    const response = await request('GET', '/runs/manual_000000000000');
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('serves the page with a strict policy, its site escaped, and nothing from elsewhere', async () => {
    const { run } = await runningRun(4, 'acme <b>&</b> "co"');
    const response = await request('GET', `/runs/${run.runId}`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = String(response.headers['content-security-policy']);
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`style-src 'nonce-${nonce}'`);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    const html = response.body;
    // Every script and style carries the nonce; no attribute styles or handlers to need more.
    expect(html.match(/<script\b[^>]*>/g)).toEqual([`<script nonce="${nonce}">`]);
    expect(html.match(/<style\b[^>]*>/g)).toEqual([`<style nonce="${nonce}">`]);
    expect(html).not.toMatch(/\sstyle=|\son[a-z]+=/);
    expect(html).not.toMatch(/(src|href)=/);
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).toContain('acme &lt;b&gt;&amp;&lt;/b&gt; &quot;co&quot;');
    expect(html).not.toContain('<b>&</b>');
    expect(html).toContain(`data-run-id="${run.runId}"`);
    expect(html).toMatch(/<button type="button" id="cancel">/);
    // Its stages as they are now: listed 4, none handled yet.
    expect(html).toMatch(/data-stage="ING" data-state="done"[\s\S]*?<span class="count">4 \/ 4/);
    expect(html).toMatch(/data-stage="CRL" data-state="active"[\s\S]*?<span class="count">0 \/ 4/);
    // A fresh nonce per page.
    const again = await request('GET', `/runs/${run.runId}`);
    expect(again.headers['content-security-policy']).not.toBe(csp);
  });
});

describe('GET /runs/:runId/events', () => {
  it("replays an ended run's progress and log, then ends; Last-Event-ID resumes", async () => {
    const { run, postingIds } = await runningRun(4);
    await settle(run, postingIds.slice(0, 3), 'skipped');
    await settle(run, postingIds.slice(3), 'error');
    expect(await finalizeRun(stack.handle.db, run.id)).toMatchObject({ status: 'partial' });
    writer.append(run.runId, line('listing done', 'ING', { fields: { listed: 4 } }));
    writer.append(run.runId, line('page fetched', 'CRL', { level: 'debug' }));
    writer.append(run.runId, line('giving up on job', 'CRL', { level: 'warn', err: '404' }));
    await writer.flush();

    const response = await request('GET', `/runs/${run.runId}/events`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const events = parseEvents(response.body);
    // Progress and the log's lines come as each is read; the end comes last.
    expect(events.map((event) => event.event).sort()).toEqual(['end', 'log', 'progress']);
    expect(events.at(-1)!.event).toBe('end');
    const progress = events.find((event) => event.event === 'progress')!;
    const log = events.find((event) => event.event === 'log')!;
    const end = events.at(-1)!;
    expect(progress.data).toMatchObject({
      ended: true,
      run: { run_id: run.runId, status: 'partial', skipped_count: 3, errors_count: 1 },
      stages: [
        { stage: 'ING', state: 'done', done: 4, total: 4 },
        { stage: 'CRL', state: 'done', done: 4, total: 4, note: '3 unchanged, 1 error' },
        { stage: 'EXT', state: 'done', done: 0, total: 0 },
      ],
    });
    expect(log.data.map((l: RunLogLine) => [l.stage, l.level, l.msg])).toEqual([
      ['ING', 'info', 'listing done'],
      ['CRL', 'debug', 'page fetched'],
      ['CRL', 'warn', 'giving up on job'],
    ]);
    expect(log.id).toBe(log.data[2].id);
    expect(end.data).toMatchObject({ ended: true, run: { status: 'partial' } });

    const resumed = await request('GET', `/runs/${run.runId}/events`, {
      'last-event-id': log.data[0].id,
    });
    const resumedLog = parseEvents(resumed.body).find((event) => event.event === 'log')!;
    expect(resumedLog.data.map((l: RunLogLine) => l.msg)).toEqual([
      'page fetched',
      'giving up on job',
    ]);
  });

  it('streams a running run live to several clients, then ends and cleans up', async () => {
    const { run, postingIds } = await runningRun(6);
    writer.append(run.runId, line('listing done', 'ING'));
    await writer.flush();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const first = await openEvents(origin, `/runs/${run.runId}/events`);
    const second = await openEvents(origin, `/runs/${run.runId}/events`);
    expect(first.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const progressOf = (events: SseEvent[]) =>
      events.filter((event) => event.event === 'progress').map((e) => e.data as RunProgress);
    const logOf = (events: SseEvent[]) =>
      events.filter((event) => event.event === 'log').flatMap((e) => e.data as RunLogLine[]);

    for (const client of [first, second]) {
      await waitFor(
        () =>
          (progressOf(client.events).length > 0 && logOf(client.events).length > 0) || undefined,
        {
          timeoutMs: 10_000,
          what: 'the first progress and log lines',
        },
      );
      expect(progressOf(client.events)[0]!.stages[1]).toMatchObject({ done: 0, total: 6 });
    }

    // Work happens: both clients see the counters move and the new lines, each line once.
    await settle(run, postingIds.slice(0, 4), 'skipped');
    for (let i = 0; i < 4; i += 1) writer.append(run.runId, line(`posting ${i} unchanged`, 'CRL'));
    await writer.flush();
    for (const client of [first, second]) {
      await waitFor(
        () =>
          (progressOf(client.events).some((p) => p.stages[1]!.done === 4) &&
            logOf(client.events).length === 5) ||
          undefined,
        { timeoutMs: 10_000, what: 'progress and lines of the work done' },
      );
      expect(logOf(client.events).map((l) => l.msg)).toEqual([
        'listing done',
        'posting 0 unchanged',
        'posting 1 unchanged',
        'posting 2 unchanged',
        'posting 3 unchanged',
      ]);
      expect(client.isClosed()).toBe(false);
    }

    // The first client leaves; the second sees the run to its end, then its stream closes.
    await first.close();
    await settle(run, postingIds.slice(4), 'skipped');
    await finalizeRun(stack.handle.db, run.id);
    writer.append(run.runId, line('posting 5 unchanged', 'CRL'));
    await writer.flush();
    await waitFor(() => second.isClosed() || undefined, {
      timeoutMs: 10_000,
      what: 'the stream to close',
    });
    const events = second.events;
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { run: { status: 'succeeded' } } });
    expect(logOf(events).at(-1)!.msg).toBe('posting 5 unchanged');
    expect(events.findIndex((e) => e.event === 'end')).toBe(events.length - 1);
  });
});

describe('run feeds', () => {
  it('share one poller and one stream per run, and stop when the last client leaves', async () => {
    const { run } = await runningRun(2);
    const feeds = createRunFeeds({
      db: stack.handle.db,
      redis,
      prefix,
      logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
      pollMs: 50,
    });
    const seen: string[] = [];
    const client = (name: string): RunFeedClient => ({
      progress: () => seen.push(`${name}:progress`),
      log: (entries) => seen.push(...entries.map((entry) => `${name}:${entry.line.msg}`)),
      ended: () => seen.push(`${name}:ended`),
      failed: (error) => seen.push(`${name}:failed:${error.message}`),
    });
    const stopA = feeds.follow(run, client('a'), { lastEventId: undefined });
    const stopB = feeds.follow(run, client('b'), { lastEventId: undefined });
    expect(feeds.stats()).toEqual({ runs: 1, streams: 1, clients: 2 });
    writer.append(run.runId, line('hello', 'ING'));
    await writer.flush();
    await waitFor(() => (seen.includes('a:hello') && seen.includes('b:hello')) || undefined, {
      timeoutMs: 10_000,
      what: 'both clients to get the line',
    });
    stopA();
    expect(feeds.stats()).toEqual({ runs: 1, streams: 1, clients: 1 });
    stopB();
    expect(feeds.stats()).toEqual({ runs: 0, streams: 0, clients: 0 });

    // A run deleted with its site ends its clients' feeds.
    const doomed = await runningRun(1);
    const stopD = feeds.follow(doomed.run, client('d'), { lastEventId: undefined });
    await deleteSite(stack.handle.db, doomed.site.id);
    await waitFor(() => seen.find((entry) => entry.startsWith('d:failed')), {
      timeoutMs: 10_000,
      what: 'the deleted run to end its feed',
    });
    expect(feeds.stats().runs).toBe(0);
    stopD();
    await feeds.close();
    expect(() => feeds.follow(run, client('c'), { lastEventId: undefined })).toThrow(/closed/);
    expect(seen.filter((entry) => entry.endsWith(':hello'))).toHaveLength(2);
  });

  it('let the API close while a stream is open', async () => {
    const other = await stack.buildApp();
    const { run } = await runningRun(1);
    await other.listen({ host: '127.0.0.1', port: 0 });
    const origin = `http://127.0.0.1:${(other.server.address() as AddressInfo).port}`;
    const client = await openEvents(origin, `/runs/${run.runId}/events`);
    await waitFor(() => client.events.length > 0 || undefined, {
      timeoutMs: 10_000,
      what: 'a first event',
    });
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    await waitFor(() => client.isClosed() || undefined, {
      timeoutMs: 5_000,
      what: 'the stream to end',
    });
    // Ended by the shutdown, not by the run: no `end` event, so an EventSource reconnects.
    expect(client.events.some((event) => event.event === 'end')).toBe(false);
  });
});
