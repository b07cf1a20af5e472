import { PassThrough } from 'node:stream';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { buildApp } from '@gleaner/api';
import { injectWithKey, testApiConfig } from '@gleaner/api/testing';
import {
  createApiKey,
  createDb,
  createWebhookEndpoint,
  listAudit,
  recordFetchedBody,
  sha256Hex,
  storeBody,
  type DbHandle,
} from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection, type Queues } from '@gleaner/queue';
import { createBodySweeper, createSiteLocks, type BodySweeperOptions } from '@gleaner/scheduler';
import {
  createTestDatabase,
  createTestRedisNamespace,
  waitFor,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExposition, sampleValue } from './support/prometheus-text.js';
import { seedRunWithPostings } from './support/seed.js';

/**
 * Storage with a policy (decision 0014): a deleted site's page bodies go with the next sweep,
 * while a body another site shares, a posting version's body and a body stored within the grace
 * period stay; history is trimmed to the newest versions; a pass pauses between batches.
 */
const HOUR = 3_600_000;
let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
let redis: Redis;
let queues: Queues;
let app: Awaited<ReturnType<typeof buildApp>>;
let replicas = 0;

beforeAll(async () => {
  database = await createTestDatabase('body-sweeper');
  namespace = createTestRedisNamespace('body-sweeper');
  handle = createDb({ url: database.url, poolMax: 4 });
  redis = createRedisConnection(namespace.url, 'producer');
  queues = createQueues(redis, namespace.prefix);
  app = await buildApp({
    config: testApiConfig(),
    logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
    db: handle.db,
    pool: handle.pool,
    redis,
    queues,
  });
  await injectWithKey(app, handle.db);
});

afterAll(async () => {
  await app?.close();
  if (queues) await closeQueues(queues);
  redis?.disconnect();
  await handle?.close();
  await namespace?.cleanup();
  await database?.drop();
});

/** A sweeper as the scheduler builds one, its pauses counted instead of waited for. */
function sweeper(overrides: Partial<BodySweeperOptions> = {}) {
  replicas += 1;
  const pauses: number[] = [];
  const created = createBodySweeper({
    db: handle.db,
    logger: createLogger({ service: 'scheduler', level: 'silent', destination: new PassThrough() }),
    replica: `sweeper-${replicas}`,
    locks: createSiteLocks({
      redis,
      prefix: namespace.prefix,
      holder: `sweeper-${replicas}`,
      ttlMs: 60_000,
    }),
    intervalMs: 60_000,
    graceMs: HOUR,
    batchSize: 500,
    pauseMs: 200,
    historyVersions: 10,
    changeRetentionMs: 30 * 24 * HOUR,
    sleep: async (ms, signal) => {
      pauses.push(ms);
      signal.throwIfAborted();
    },
    ...overrides,
  });
  return { sweeper: created, pauses, replica: `sweeper-${replicas}` };
}

const page = (text: string) => Buffer.from(`<html><body>${text}</body></html>`);

async function store(text: string): Promise<string> {
  return storeBody(handle.db, page(text), 'text/html');
}

/** Moves bodies' `stored_at` back (all of them by default), as if stored `ms` ago. */
async function backdate(ms: number, sha256s?: string[]): Promise<void> {
  await handle.pool.query(
    `UPDATE page_bodies SET stored_at = now() - $1::float8 * interval '1 millisecond'
     WHERE $2::text[] IS NULL OR sha256 = ANY($2)`,
    [ms, sha256s ?? null],
  );
}

async function kept(sha256s: string[]): Promise<Set<string>> {
  const { rows } = await handle.pool.query<{ sha256: string }>(
    'SELECT sha256 FROM page_bodies WHERE sha256 = ANY($1)',
    [sha256s],
  );
  return new Set(rows.map((row) => row.sha256));
}

/** Versions 1, 2, … of a posting, the earlier field sets as KEEP_PREVIOUS_VERSION keeps them. */
async function addVersions(postingId: string, bodies: string[]): Promise<void> {
  await handle.pool.query(
    `INSERT INTO posting_versions (posting_id, version, fields, body_sha256)
     SELECT $1, n, jsonb_build_object('title', 'version ' || n), body
     FROM unnest($2::text[]) WITH ORDINALITY AS b(body, n)`,
    [postingId, bodies],
  );
}

/** Empties storage between scenarios: sites take their postings and versions with them. */
async function emptyStorage(): Promise<void> {
  await handle.pool.query('DELETE FROM site_schedules');
  await handle.pool.query('DELETE FROM page_bodies');
}

describe('the body sweeper', () => {
  it("deletes a deleted site's own bodies and keeps shared, other sites', versions' and recent ones", async () => {
    const a = await seedRunWithPostings(handle.db, 3, 'site-a');
    const b = await seedRunWithPostings(handle.db, 2, 'site-b');
    const [a0, a1, a2] = a.postings;
    const [b0, b1] = b.postings;
    const aOwn = [await store('a0'), await store('a1')];
    const shared = await store('shared by a2 and b0');
    const bOwn = await store('b1 now');
    const bOlder = await store('b1 before');
    const pointAt = async (run: string, posting: string, sha256: string) =>
      expect(await recordFetchedBody(handle.db, posting, run, { sha256, textSha256: null })).toBe(
        true,
      );
    await pointAt(a.run.id, a0!.id, aOwn[0]!);
    await pointAt(a.run.id, a1!.id, aOwn[1]!);
    await pointAt(a.run.id, a2!.id, shared);
    await pointAt(b.run.id, b0!.id, shared);
    await pointAt(b.run.id, b1!.id, bOwn);
    await addVersions(b1!.id, [bOlder]);
    const orphanRestored = await store('nobody points at me, but a worker just stored me again');
    await backdate(2 * HOUR);
    const fresh = await store('stored a moment ago, nobody points at me yet');
    // Stored again by a worker: `stored_at` moves to now, out of the sweep's reach.
    await store('nobody points at me, but a worker just stored me again');
    const everything = [...aOwn, shared, bOwn, bOlder, orphanRestored, fresh];

    const { sweeper: first } = sweeper();
    const before = await first.pass();
    expect(before).toMatchObject({ bodiesScanned: 7, bodiesDeleted: 0, error: null });

    const deleted = await app.inject({ method: 'DELETE', url: `/sites/${a.site.siteName}` });
    expect(deleted.statusCode).toBe(204);
    // Deleting the site leaves its bodies: only a sweep can tell which are free.
    expect(await kept(everything)).toEqual(new Set(everything));

    const { sweeper: second, replica } = sweeper();
    const report = await second.pass();
    expect(report).toMatchObject({
      replica,
      bodiesScanned: 7,
      bodiesDeleted: 2,
      versionsTrimmed: 0,
      stopped: false,
      error: null,
    });
    expect(report.bytesFreed).toBeGreaterThan(0);
    expect(await kept(everything)).toEqual(new Set([shared, bOwn, bOlder, orphanRestored, fresh]));

    // The pass is on record, and GET /admin/storage shows it with the sizes.
    const [audit] = await listAudit(handle.db, { action: 'storage.sweep', limit: 1 });
    expect(audit).toMatchObject({ actor: `scheduler (${replica})`, affected: 2 });
    await handle.pool.query('ANALYZE postings, posting_versions, page_bodies');
    const storage = await app.inject({ method: 'GET', url: '/admin/storage' });
    expect(storage.statusCode).toBe(200);
    const { data } = storage.json();
    expect(data.tables.map((table: { table: string }) => table.table)).toEqual([
      'postings',
      'posting_versions',
      'posting_changes',
      'page_bodies',
      'llm_extractions',
      'documents',
    ]);
    const bodies = data.tables.find((table: { table: string }) => table.table === 'page_bodies');
    expect(bodies.estimated_rows).toBe(5);
    expect(bodies.total_bytes).toBe(bodies.heap_bytes + bodies.toast_bytes + bodies.index_bytes);
    expect(bodies.index_bytes).toBeGreaterThan(0);
    const postings = data.tables.find((table: { table: string }) => table.table === 'postings');
    expect(postings.estimated_rows).toBe(2);
    const postingBytes = data.tables
      .slice(0, 4)
      .reduce((sum: number, table: { total_bytes: number }) => sum + table.total_bytes, 0);
    expect(data.bytes_per_posting).toBe(Math.round(postingBytes / 2));
    expect(data.last_sweep).toMatchObject({
      replica,
      bodies_scanned: 7,
      bodies_deleted: 2,
      bytes_freed: report.bytesFreed,
      versions_trimmed: 0,
      stopped: false,
      error: null,
    });

    // Admin only.
    const viewer = await createApiKey(handle.db, {
      name: 'viewer',
      scope: { role: 'viewer', tenantId: null },
    });
    const refused = await app.inject({
      method: 'GET',
      url: '/admin/storage',
      headers: { authorization: `Bearer ${viewer.key}` },
    });
    expect(refused.statusCode).toBe(403);

    // And /metrics has the sizes by table and part.
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    const families = parseExposition(metrics.body);
    expect(
      sampleValue(families, 'gleaner_metrics_collector_success', { collector: 'storage' }),
    ).toBe(1);
    expect(
      sampleValue(families, 'gleaner_storage_bytes', { table: 'page_bodies', part: 'index' }),
    ).toBe(bodies.index_bytes);
    expect(sampleValue(families, 'gleaner_storage_rows_estimated', { table: 'postings' })).toBe(2);
  });

  it("trims each posting's history to its newest versions, and their bodies go in the same pass", async () => {
    await emptyStorage();
    const { postings } = await seedRunWithPostings(handle.db, 3, 'history');
    const [long, longer, short] = postings;
    const bodies: string[] = [];
    for (let index = 0; index < 12; index += 1) bodies.push(await store(`version ${index}`));
    await addVersions(long!.id, bodies.slice(0, 5));
    await addVersions(longer!.id, bodies.slice(5, 12));
    await addVersions(short!.id, [bodies[0]!, bodies[5]!]);
    await backdate(2 * HOUR);

    // One posting per statement: the keyset walks all three.
    const { sweeper: trimmer, pauses } = sweeper({ historyVersions: 3, batchSize: 1 });
    const report = await trimmer.pass();
    expect(report).toMatchObject({ postingsWithHistory: 3, versionsTrimmed: 2 + 4, error: null });

    const { rows: versions } = await handle.pool.query<{ posting_id: string; version: number }>(
      'SELECT posting_id, version FROM posting_versions ORDER BY version',
    );
    const of = (postingId: string) =>
      versions.filter((row) => row.posting_id === postingId).map((row) => row.version);
    expect(of(long!.id)).toEqual([3, 4, 5]);
    expect(of(longer!.id)).toEqual([5, 6, 7]);
    expect(of(short!.id)).toEqual([1, 2]);
    // Bodies only trimmed versions pointed at are gone; `short` still points at 0 and 5.
    const left = await kept(bodies);
    expect(bodies.filter((sha256) => left.has(sha256))).toEqual([
      bodies[0],
      bodies[2],
      bodies[3],
      bodies[4],
      bodies[5],
      bodies[9],
      bodies[10],
      bodies[11],
    ]);
    expect(report.bodiesDeleted).toBe(4);
    // A statement per posting and per body, each walk ending on one that finds none left, then
    // one for the change feed and one for webhook deliveries (nothing past their retention):
    // (3 + 1) + (12 + 1) + 1 + 1 statements, a pause before each but the first.
    expect(pauses).toHaveLength(4 + 13 + 1 + 1 - 1);
  });

  it('pauses between batches: 7 bodies in batches of 2 take 4 body statements', async () => {
    await emptyStorage();
    const bodies: string[] = [];
    for (let index = 0; index < 7; index += 1) bodies.push(await store(`throttled ${index}`));
    await backdate(2 * HOUR);
    const { sweeper: slow, pauses } = sweeper({ batchSize: 2, pauseMs: 250 });
    const report = await slow.pass();
    expect(report).toMatchObject({ bodiesScanned: 7, bodiesDeleted: 7, error: null });
    // One history statement (no versions), then bodies 2 + 2 + 2 + 1, then one change feed
    // statement and one webhook deliveries statement (nothing past their retention): a pause
    // before each of the last six.
    expect(pauses).toEqual([250, 250, 250, 250, 250, 250]);
    expect(await kept(bodies)).toEqual(new Set());
  });

  it("deletes the change feed's events past CHANGE_FEED_RETENTION_DAYS, oldest first", async () => {
    await seedRunWithPostings(handle.db, 5, 'feed');
    const count = async () =>
      (await handle.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM posting_changes'))
        .rows[0]!.n;
    const events = await count();
    expect(events).toBeGreaterThanOrEqual(5);
    const { sweeper: keeping } = sweeper();
    expect(await keeping.pass()).toMatchObject({ changesTrimmed: 0, error: null });
    expect(await count()).toBe(events);

    // A retention of nothing: every event occurred before the pass, in batches of 2.
    const { sweeper: trimming } = sweeper({ batchSize: 2 });
    const report = await trimming.pass({ changeRetentionMs: 0 });
    expect(report).toMatchObject({ changesTrimmed: events, error: null });
    expect(await count()).toBe(0);
    const [audit] = await listAudit(handle.db, { action: 'storage.sweep', limit: 1 });
    expect(audit?.details).toMatchObject({ changesTrimmed: events });
  });

  it('deletes settled webhook deliveries past the same retention, never pending ones', async () => {
    const endpoint = await createWebhookEndpoint(handle.db, {
      tenantId: null,
      url: 'https://hooks.acme.example/gleaner',
    });
    for (const [key, status] of [
      ['a', 'delivered'],
      ['b', 'failed'],
      ['c', 'cancelled'],
      ['d', 'pending'],
    ] as const)
      await handle.pool.query(
        `INSERT INTO webhook_deliveries (endpoint_id, event_type, event_key, payload, occurred_at, status)
         VALUES ($1, 'run.finished', $2, '{}', now(), $3)`,
        [endpoint.id, key, status],
      );
    const statuses = async () =>
      (
        await handle.pool.query<{ status: string }>(
          'SELECT status FROM webhook_deliveries ORDER BY status',
        )
      ).rows.map((row) => row.status);
    expect(await sweeper().sweeper.pass()).toMatchObject({ webhookDeliveriesTrimmed: 0 });
    const report = await sweeper({ batchSize: 2 }).sweeper.pass({ changeRetentionMs: 0 });
    expect(report).toMatchObject({ webhookDeliveriesTrimmed: 3, error: null });
    expect(await statuses()).toEqual(['pending']);
  });

  it('stops between two batches when the scheduler stops', async () => {
    await emptyStorage();
    const bodies: string[] = [];
    for (let index = 0; index < 7; index += 1) bodies.push(await store(`stopped ${index}`));
    await backdate(2 * HOUR);
    let pauses = 0;
    const { sweeper: stopping } = sweeper({
      batchSize: 2,
      sleep: async (_ms, signal) => {
        pauses += 1;
        // The scheduler is told to stop while the pass pauses after its first body batch.
        if (pauses === 2) await stopping.stop();
        signal.throwIfAborted();
      },
    });
    const report = await stopping.pass();
    expect(report).toMatchObject({
      stopped: true,
      bodiesScanned: 2,
      bodiesDeleted: 2,
      error: null,
    });
    expect((await kept(bodies)).size).toBe(5);
  });

  it('sweeps on one replica per interval: the lease keeps the others off', async () => {
    await emptyStorage();
    // Waits as the scheduler does: a replica that finds the lease taken sleeps its interval.
    const realSleep = (ms: number, signal: AbortSignal) =>
      sleepFor(ms, undefined, { signal }).then(() => undefined);
    const one = sweeper({ sleep: realSleep });
    const other = sweeper({ sleep: realSleep });
    one.sweeper.start();
    other.sweeper.start();
    const passes = await waitFor(
      async () => {
        const entries = await listAudit(handle.db, { action: 'storage.sweep', limit: 100 });
        const mine = entries.filter((entry) =>
          [one.replica, other.replica].some((name) => entry.actor.includes(`(${name})`)),
        );
        return mine.length > 0 ? mine : undefined;
      },
      { what: 'a pass of either replica' },
    );
    await Promise.all([one.sweeper.stop(), other.sweeper.stop()]);
    expect(passes).toHaveLength(1);
    const again = await listAudit(handle.db, { action: 'storage.sweep', limit: 100 });
    expect(
      again.filter((entry) =>
        [one.replica, other.replica].some((name) => entry.actor.includes(`(${name})`)),
      ),
    ).toHaveLength(1);
    // The lease is the one lock, held by the replica that swept, until the interval ends.
    const holder = await redis.get(`${namespace.prefix}:scheduler:lock:body-sweeper`);
    expect(passes[0]!.actor).toBe(`scheduler (${holder})`);
  });

  it('moves stored_at when the same bytes are stored again, but not within a minute', async () => {
    await emptyStorage();
    const sha256 = await store('stored twice');
    expect(sha256).toBe(sha256Hex(page('stored twice')));
    const storedAt = async () => {
      const { rows } = await handle.pool.query<{ stored_at: Date }>(
        'SELECT stored_at FROM page_bodies WHERE sha256 = $1',
        [sha256],
      );
      return rows[0]!.stored_at.getTime();
    };
    await backdate(30_000, [sha256]);
    const recent = await storedAt();
    await store('stored twice');
    expect(await storedAt()).toBe(recent);
    await backdate(2 * 60_000, [sha256]);
    const old = await storedAt();
    await store('stored twice');
    expect(await storedAt()).toBeGreaterThan(old + 60_000);
  });
});
