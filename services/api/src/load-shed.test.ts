import type { AddressInfo } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readApiShedCounts } from '@gleaner/queue';
import { createApiTestStack, type ApiTestStack } from './test-stack.test-support.js';

let stack: ApiTestStack;

beforeAll(async () => {
  stack = await createApiTestStack('load-shed');
});

afterAll(async () => {
  await stack?.close();
});

/** The locks on `postings` not yet released. */
const heldLocks = new Set<{ unlock(): Promise<void> }>();

/**
 * Releases what a test left locked. Before an app closes: `close()` waits for the requests held
 * by the lock, so a test that failed while holding it would hang there instead of failing.
 */
async function releaseLocks() {
  for (const lock of [...heldLocks]) await lock.unlock();
}

afterEach(releaseLocks);

/** Closes an app a test built, after releasing what the test left locked. */
async function closeUnlocked(app: FastifyInstance) {
  await releaseLocks();
  await app.close();
}

/**
 * Holds `postings` locked from another connection until the returned function is called: every
 * query that reads it waits, so requests that reach the database stay in flight as long as the
 * test needs, whatever the machine's speed.
 */
async function lockPostings() {
  const client = new pg.Client(stack.handle.pool.options);
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE postings IN ACCESS EXCLUSIVE MODE');
  const lock = {
    /** Resolves once `count` queries wait for the lock (asked on the lock's own connection). */
    async blocked(count: number) {
      for (let attempt = 0; attempt < 200; attempt++) {
        const { rows } = await client.query<{ blocked: number }>(
          `SELECT count(*)::int AS blocked FROM pg_locks
           WHERE NOT granted AND relation = 'postings'::regclass`,
        );
        if ((rows[0]?.blocked ?? 0) >= count) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`fewer than ${count} queries waited for the lock on postings`);
    },
    /** Commits and closes the lock's connection; once only. */
    async unlock() {
      if (!heldLocks.delete(lock)) return;
      await client.query('COMMIT');
      await client.end();
    },
  };
  heldLocks.add(lock);
  return lock;
}

function expectShed(response: LightMyRequestResponse, reason: string) {
  expect(response.statusCode).toBe(503);
  expect(response.headers['retry-after']).toBe('1');
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(response.json()).toMatchObject({ status: 503, title: 'Service Unavailable', reason });
}

describe('load shedding', () => {
  let app: FastifyInstance;
  const headers = () => ({ authorization: `Bearer ${stack.adminKey}` });

  beforeAll(async () => {
    app = await stack.buildApp({
      API_SEARCH_CONCURRENCY: 2,
      API_RUN_STATUS_CONCURRENCY: 2,
      API_SHED_QUEUE_MS: 0,
    });
    // The key is looked up (and cached) before postings is locked.
    expect((await app.inject({ url: '/postings?limit=1', headers: headers() })).statusCode).toBe(
      200,
    );
  });

  afterAll(async () => {
    await app?.close();
  });

  it('answers searches past the limit 503 at once while the admitted ones and /health go on', async () => {
    const lock = await lockPostings();
    const settled: string[] = [];
    const search = (label: string, q: string) =>
      app.inject({ url: `/postings?q=${q}`, headers: headers() }).then((response) => {
        settled.push(label);
        return response;
      });
    const admitted = [search('admitted', 'engineer'), search('admitted', 'nurse')];
    await lock.blocked(2);

    const extra = await Promise.all([
      search('shed', 'python'),
      search('shed', 'berlin'),
      search('shed', 'data'),
    ]);
    for (const response of extra) expectShed(response, 'queue-full');
    // A cheap route is not limited by the searches' turns, and /health stays answerable.
    const health = await app.inject({ url: '/health' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({
      status: 'healthy',
      service: 'api',
      checks: { redis: { ok: true }, postgres: { ok: true } },
    });
    expect(settled).toEqual(['shed', 'shed', 'shed']);

    await lock.unlock();
    for (const response of await Promise.all(admitted)) expect(response.statusCode).toBe(200);
    // The turns were given back.
    expect((await search('after', 'engineer')).statusCode).toBe(200);
  });

  it('lets a search wait for a turn at most API_SHED_QUEUE_MS', async () => {
    const waiting = await stack.buildApp({ API_SEARCH_CONCURRENCY: 1, API_SHED_QUEUE_MS: 300 });
    try {
      const lock = await lockPostings();
      const admitted = waiting.inject({ url: '/postings?q=engineer', headers: headers() });
      await lock.blocked(1);
      const started = performance.now();
      const queued = await waiting.inject({ url: '/postings?q=nurse', headers: headers() });
      const waited = performance.now() - started;
      expectShed(queued, 'queue-time');
      // It waited for its turn, then gave up: not at once, and not until the lock went.
      expect(waited).toBeGreaterThanOrEqual(250);
      await lock.unlock();
      expect((await admitted).statusCode).toBe(200);
    } finally {
      await closeUnlocked(waiting);
    }
  });

  it('sheds every route but /health once queries queue for a Postgres connection', async () => {
    // The test pool has 4 connections: 4 blocked queries hold them, a fifth waits.
    const pooled = await stack.buildApp({ API_SHED_POOL_WAITING: 1 });
    try {
      expect(
        (await pooled.inject({ url: '/postings?limit=1', headers: headers() })).statusCode,
      ).toBe(200);
      const lock = await lockPostings();
      const held = Array.from({ length: 5 }, () =>
        pooled.inject({ url: '/postings?limit=1', headers: headers() }),
      );
      await lock.blocked(4);
      for (let attempt = 0; stack.handle.pool.waitingCount < 1 && attempt < 100; attempt++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expectShed(
        await pooled.inject({ url: '/postings?limit=1', headers: headers() }),
        'pool-waiting',
      );
      expectShed(await pooled.inject({ url: '/sites', headers: headers() }), 'pool-waiting');
      await lock.unlock();
      for (const response of await Promise.all(held)) expect(response.statusCode).toBe(200);
      expect(
        (await pooled.inject({ url: '/postings?limit=1', headers: headers() })).statusCode,
      ).toBe(200);
    } finally {
      await closeUnlocked(pooled);
    }
  });
});

/** What a refusal at the front door looks like on the wire. */
async function expectRefused(response: Response, reason: string) {
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toBe('1');
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(response.headers.get('x-request-id')).toBeTruthy();
  expect(await response.json()).toMatchObject({
    status: 503,
    title: 'Service Unavailable',
    reason,
    instance: new URL(response.url).pathname,
  });
}

describe('the front door', () => {
  /** An app listening on a port: the front door sits in its HTTP server, which inject() skips. */
  async function listening(overrides: Parameters<ApiTestStack['buildApp']>[0]) {
    const app = await stack.buildApp(overrides);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const get = (path: string) =>
      fetch(`${base}${path}`, { headers: { authorization: `Bearer ${stack.adminKey}` } });
    return { app, get };
  }

  it('refuses a request past API_MAX_IN_FLIGHT before Fastify sees it, counts it, and lets /health through', async () => {
    const { app, get } = await listening({ API_MAX_IN_FLIGHT: 2 });
    const refusedInFlight = async () =>
      (await readApiShedCounts(stack.redis, stack.prefix)).find(
        (entry) => entry.reason === 'in-flight',
      )?.count ?? 0;
    try {
      expect((await get('/postings?limit=1')).status).toBe(200);
      const before = await refusedInFlight();
      const lock = await lockPostings();
      const held = [get('/postings?limit=1'), get('/postings?limit=2')];
      await lock.blocked(2);
      await expectRefused(await get('/sites'), 'in-flight');
      await expectRefused(await get('/postings?q=engineer'), 'in-flight');
      // A balancer's probe is never refused.
      expect((await get('/health')).status).toBe(200);
      await lock.unlock();
      for (const response of await Promise.all(held)) expect(response.status).toBe(200);
      // Both places are free again.
      expect((await get('/sites')).status).toBe(200);
      expect((await get('/postings?limit=1')).status).toBe(200);
      // Closing the app sends its counts.
      await app.close();
      expect((await refusedInFlight()) - before).toBe(2);
    } finally {
      await closeUnlocked(app);
    }
  });

  it('refuses every request but /health while the event loop is late and busy with requests in flight', async () => {
    const { app, get } = await listening({ API_SHED_EVENT_LOOP_DELAY_MS: 5 });
    /** Holds the event loop 40 ms at a time for `ms`: late by tens of ms and busy all along. */
    const holdLoop = async (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until) {
        const stop = performance.now() + 40;
        while (performance.now() < stop);
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    try {
      expect((await get('/sites')).status).toBe(200);
      // Nothing in flight: the late loop was work that has ended, and the request waits for none.
      let holding = holdLoop(600);
      await new Promise((resolve) => setTimeout(resolve, 250));
      const alone = get('/sites');
      await holding;
      expect((await alone).status).toBe(200);

      const lock = await lockPostings();
      const held = get('/postings?limit=1');
      await lock.blocked(1);
      holding = holdLoop(600);
      await new Promise((resolve) => setTimeout(resolve, 250));
      const [sites, health] = await Promise.all([get('/sites'), get('/health')]);
      await holding;
      await expectRefused(sites, 'event-loop-delay');
      expect(health.status).toBe(200);
      await lock.unlock();
      expect((await held).status).toBe(200);
      // Once the loop is idle again, the next sample lets requests in.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await get('/sites')).status).toBe(200);
    } finally {
      await closeUnlocked(app);
    }
  });
});
