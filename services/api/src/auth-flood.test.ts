import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createApiTestStack, type ApiTestStack } from './test-stack.test-support.js';

let stack: ApiTestStack;
let app: FastifyInstance;
/** Statements sent to Postgres through the app's pool. */
let statements = 0;
/** Of them, those that are not the periodic `last_used_at` stamp, which any earlier use may fire. */
let lookups = 0;

/** A key of the generated form that no row has: it takes the path of a real lookup. */
const bogusKey = () =>
  `glk_${randomBytes(4).toString('hex')}_${randomBytes(32).toString('base64url')}`;

/**
 * Sends `count` requests with made-up keys (or, with `withKey: false`, with no key at all),
 * `concurrency` at a time; their statuses.
 */
async function flood(count: number, concurrency: number, withKey = true): Promise<number[]> {
  const statuses: number[] = [];
  let sent = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < count) {
        sent++;
        const response = await app.inject({
          method: 'GET',
          url: '/sites',
          headers: withKey ? { authorization: `Bearer ${bogusKey()}` } : {},
        });
        statuses.push(response.statusCode);
      }
    }),
  );
  return statuses;
}

/** The SQL of a `pool.query` call: its first argument, a string or a query config. */
const statementText = (first: unknown): string =>
  typeof first === 'string'
    ? first
    : typeof (first as { text?: unknown } | null)?.text === 'string'
      ? (first as { text: string }).text
      : '';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** The admin's requests, one after another, for `ms`: their latencies in milliseconds. */
async function adminLatencies(ms: number): Promise<number[]> {
  const latencies: number[] = [];
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const started = performance.now();
    const response = await app.inject({ method: 'GET', url: '/sites' });
    latencies.push(performance.now() - started);
    expect(response.statusCode).toBe(200);
  }
  return latencies;
}

beforeAll(async () => {
  // The default threshold: 10 failures per address per minute.
  stack = await createApiTestStack('auth-flood', { API_AUTH_FAILURES_PER_MINUTE: 10 });
  app = stack.app;
  const pool = stack.handle.pool;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  Object.assign(pool, {
    query: (...args: unknown[]) => {
      statements++;
      if (!/^\s*update\s+"?api_keys"?/i.test(statementText(args[0]))) lookups++;
      return query(...args);
    },
  });
  await app.ready();
});

afterAll(async () => {
  await stack?.close();
});

describe('failed authentication', () => {
  it(
    'costs a handful of queries for 20,000 made-up keys, answered 429 past the threshold, while an admin key answers as fast as among requests that carry no key',
    { timeout: 180_000 },
    async () => {
      // The admin key is known before the flood starts, as a working operator's would be.
      const baseline = await adminLatencies(500);

      const before = statements;
      const started = performance.now();
      // The first few one at a time, so that exactly the threshold's worth are looked up.
      const first = await flood(12, 1);
      const rest = await flood(20_000 - 12, 16);
      const floodMs = performance.now() - started;
      const floodStatements = statements - before;

      expect(first).toEqual([...Array<number>(10).fill(401), 429, 429]);
      // The count starts again each minute: a flood that outlasts one (a loaded machine) may have
      // 10 more refused as unknown in each minute it reaches into, and every other one is a 429.
      const statuses = [...first, ...rest];
      const unknown = statuses.filter((status) => status === 401).length;
      expect(unknown).toBeLessThanOrEqual(10 * (1 + Math.floor(floodMs / 60_000)));
      expect(statuses.filter((status) => status === 429)).toHaveLength(20_000 - unknown);
      // One SELECT per key answered 401, none for the 429s; at most one UPDATE besides, stamping
      // the admin key's use before the flood. No UPDATE per key, no statement per request.
      expect(floodStatements).toBeLessThanOrEqual(unknown + 1);

      const retryAfter = await app.inject({
        method: 'GET',
        url: '/sites',
        headers: { authorization: `Bearer ${bogusKey()}` },
      });
      expect(retryAfter.statusCode).toBe(429);
      expect(Number(retryAfter.headers['retry-after'])).toBeGreaterThan(0);
      expect(retryAfter.json()).toMatchObject({ status: 429 });

      // The admin's requests while requests keep arriving 8 at a time, in alternating windows:
      // made-up keys, then no key at all (turned away before any lookup). Both floods cost the
      // process the same CPU, so on a busy machine the load moves both alike; a made-up key that
      // reached Postgres or held a pool connection would make the admin wait behind it.
      const during: number[] = [];
      const control: number[] = [];
      for (let window = 0; window < 10; window++) {
        const withKey = window % 2 === 0;
        let flooding = true;
        const background = (async () => {
          while (flooding) await flood(100, 8, withKey);
        })();
        (withKey ? during : control).push(...(await adminLatencies(300)));
        flooding = false;
        await background;
      }

      const p50Alone = median(baseline);
      const p50During = median(during);
      const p50Control = median(control);
      console.info(
        `auth flood: 20,000 made-up keys in ${Math.round(floodMs)} ms, ${unknown} answered 401, ${floodStatements} statements; admin p50 ${p50Alone.toFixed(2)} ms alone, ${p50During.toFixed(2)} ms among made-up keys, ${p50Control.toFixed(2)} ms among keyless requests (${baseline.length}, ${during.length} and ${control.length} requests)`,
      );
      expect(p50During).toBeLessThanOrEqual(2 * p50Control + 2);
    },
  );

  it('refuses a string no key can be without a query', async () => {
    const other = await stack.buildApp({ API_AUTH_FAILURES_PER_MINUTE: 100_000 });
    try {
      const before = lookups;
      for (const key of ['short', 'x'.repeat(300), `${'a'.repeat(40)} spaced`, 'é'.repeat(40)]) {
        const response = await other.inject({
          method: 'GET',
          url: '/sites',
          headers: { authorization: `Bearer ${key}` },
        });
        expect(response.statusCode).toBe(401);
      }
      expect(lookups - before).toBe(0);
    } finally {
      await other.close();
    }
  });
});
