import { PassThrough } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyBackfillBatch,
  compareExtractorVersions,
  createApiKey,
  getExtractionBackfill,
  insertSite,
  type ExtractionBackfillRow,
} from '@gleaner/db';
import { EXTRACTOR_VERSION } from '@gleaner/extraction';
import { createLogger } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection } from '@gleaner/queue';
import { createBackfillResumer } from '@gleaner/scheduler';
import {
  createFixtureCareerSite,
  createFixtureLever,
  waitFor,
  type FixtureCareerSite,
  type FixtureLever,
} from '@gleaner/testing';
import { startBackfill, startWorkers, type WorkerRuntime } from '@gleaner/worker';
import type { Redis } from 'ioredis';
import { startTestApi } from './support/api-server.js';
import {
  startInProcessSystem,
  testWorkerDeps,
  type InProcessSystem,
} from './support/in-process-system.js';

/**
 * An extractor upgrade reaching the stored postings: after a version bump (a worker whose
 * extractor writes another version), every stored posting is re-extracted once from its stored
 * page body or listing payload, with no request to the sites, its previous fields kept as a
 * version; a posting whose body is gone is skipped and counted. A backfill cut off mid-way and
 * resumed by the scheduler does no posting twice. `GET /postings/:id/versions` serves the history.
 */
const PAGES = 12;
const ATS_POSTINGS = 8;
const TOTAL = PAGES + ATS_POSTINGS;
const FIRST_BUMP = `${EXTRACTOR_VERSION}-bump1`;
const SECOND_BUMP = `${EXTRACTOR_VERSION}-bump2`;
const THIRD_BUMP = `${EXTRACTOR_VERSION}-bump3`;
const FOURTH_BUMP = `${EXTRACTOR_VERSION}-bump4`;

let site: FixtureCareerSite;
let lever: FixtureLever;
let system: InProcessSystem;
let pageSiteId: string;
const connections: Redis[] = [];
const logger = createLogger({ service: 'test', level: 'silent', destination: new PassThrough() });

/** A worker replica serving only `backfill`, whose extractor writes `version`. */
function startBackfillWorker(
  version: string,
  settings: { batchSize: number; ratePerSecond: number },
): { runtime: WorkerRuntime; close(): Promise<void> } {
  const producer = createRedisConnection(system.namespace.url, 'producer');
  const worker = createRedisConnection(system.namespace.url, 'worker');
  connections.push(producer, worker);
  const queues = createQueues(producer, system.namespace.prefix);
  const deps = testWorkerDeps({
    db: system.handle.db,
    queues,
    fetcher: system.fetcher,
    producer,
    prefix: system.namespace.prefix,
  });
  const runtime = startWorkers(
    { ...deps, backfill: { version, ...settings } },
    { connection: worker, prefix: system.namespace.prefix, queues: ['backfill'] },
  );
  return {
    runtime,
    async close() {
      await runtime.close(10_000);
      await closeQueues(queues);
    },
  };
}

function backfillDone(version: string): Promise<ExtractionBackfillRow> {
  return waitFor(
    async () => {
      const backfill = await getExtractionBackfill(system.handle.db, version);
      return backfill?.status === 'completed' ? backfill : undefined;
    },
    { timeoutMs: 60_000, what: `backfill ${version} to complete` },
  );
}

async function postingRows() {
  const { rows } = await system.handle.pool.query<{
    id: string;
    title: string | null;
    company: string | null;
    description: string | null;
    extraction_version: string | null;
    extracted_at: Date | null;
    body_sha256: string | null;
  }>(
    'SELECT id, title, company, description, extraction_version, extracted_at, body_sha256 FROM postings ORDER BY id',
  );
  return rows;
}

/** Rows by their posting. */
function byPostingId<T extends { posting_id: string }>(rows: T[]): Map<string, T[]> {
  const grouped = new Map<string, T[]>();
  for (const row of rows)
    grouped.set(row.posting_id, [...(grouped.get(row.posting_id) ?? []), row]);
  return grouped;
}

async function versionRows() {
  const { rows } = await system.handle.pool.query<{
    posting_id: string;
    version: number;
    fields: Record<string, unknown>;
  }>('SELECT posting_id, version, fields FROM posting_versions ORDER BY posting_id, version');
  return rows;
}

beforeAll(async () => {
  site = await createFixtureCareerSite({ postings: PAGES, seed: 7 });
  lever = await createFixtureLever({ postings: ATS_POSTINGS, seed: 3 });
  system = await startInProcessSystem('backfill');
  const pages = await insertSite(system.handle.db, {
    siteName: 'careers',
    kind: 'career-site',
    config: { url: site.url, sitemapUrl: site.sitemapUrl },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
  });
  pageSiteId = pages.id;
  const ats = await insertSite(system.handle.db, {
    siteName: 'lever-acme',
    kind: 'lever',
    config: { site: lever.site, baseUrl: lever.baseUrl },
  });
  expect(await system.runToEnd(pages.id)).toMatchObject({ status: 'succeeded', readyCount: PAGES });
  expect(await system.runToEnd(ats.id)).toMatchObject({
    status: 'succeeded',
    readyCount: ATS_POSTINGS,
  });
});

afterAll(async () => {
  await system?.close();
  for (const connection of connections) connection.disconnect();
  await site?.close();
  await lever?.close();
});

describe('an extractor backfill', () => {
  let goneBody: string;

  it('re-extracts every stored posting once after a version bump, without fetching, keeping the previous version', async () => {
    const before = await postingRows();
    expect(before).toHaveLength(TOTAL);
    expect(before.every((row) => row.extraction_version === EXTRACTOR_VERSION)).toBe(true);
    // One page posting whose stored body is gone: skipped and counted, never fetched.
    const { rows: gone } = await system.handle.pool.query<{ id: string; body_sha256: string }>(
      'SELECT id, body_sha256 FROM postings WHERE site_id = $1 ORDER BY id LIMIT 1',
      [pageSiteId],
    );
    goneBody = gone[0]!.id;
    await system.handle.pool.query('DELETE FROM page_bodies WHERE sha256 = $1', [
      gone[0]!.body_sha256,
    ]);
    site.resetRequestCount();
    lever.resetRequests();

    const worker = startBackfillWorker(FIRST_BUMP, { batchSize: 7, ratePerSecond: 10_000 });
    try {
      const start = await startBackfill(
        { db: system.handle.db, queues: system.queues, logger },
        FIRST_BUMP,
      );
      expect(start).toMatchObject({ started: true, backfill: { total: TOTAL } });
      // Another replica starting the same version finds it started: nothing is queued twice.
      await startBackfill({ db: system.handle.db, queues: system.queues, logger }, FIRST_BUMP);
      const backfill = await backfillDone(FIRST_BUMP);
      expect(backfill).toMatchObject({ total: TOTAL, done: TOTAL - 1, skipped: 1, failed: 0 });
      // 20 postings at 7 a batch: three batches, the last one short.
      expect(backfill.batches).toBe(3);
    } finally {
      await worker.close();
    }

    expect(site.requestCount()).toBe(0);
    expect(lever.requests()).toHaveLength(0);

    const after = await postingRows();
    const versions = await versionRows();
    const byPosting = byPostingId(versions);
    for (const row of after) {
      const previous = before.find((b) => b.id === row.id)!;
      if (row.id === goneBody) {
        expect(row.extraction_version).toBe(EXTRACTOR_VERSION);
        expect(byPosting.get(row.id)).toBeUndefined();
        continue;
      }
      expect(row.extraction_version).toBe(FIRST_BUMP);
      expect(row.extracted_at!.getTime()).toBeGreaterThan(previous.extracted_at!.getTime());
      // The same rules over the same bytes: the same fields.
      expect(row).toMatchObject({
        title: previous.title,
        company: previous.company,
        description: previous.description,
        body_sha256: previous.body_sha256,
      });
      const kept = byPosting.get(row.id)!;
      expect(kept).toHaveLength(1);
      expect(kept[0]).toMatchObject({
        version: 1,
        fields: {
          title: previous.title,
          company: previous.company,
          extraction_version: EXTRACTOR_VERSION,
        },
      });
    }
  });

  it('resumes a backfill cut off mid-way without re-extracting any posting twice', async () => {
    site.resetRequestCount();
    lever.resetRequests();
    // Slow enough (3 postings a second, 3 a batch) to be stopped after its first batches.
    const first = startBackfillWorker(SECOND_BUMP, { batchSize: 3, ratePerSecond: 3 });
    const startedAt = Date.now();
    await startBackfill({ db: system.handle.db, queues: system.queues, logger }, SECOND_BUMP);
    const partway = await waitFor(
      async () => {
        const backfill = await getExtractionBackfill(system.handle.db, SECOND_BUMP);
        return backfill && backfill.batches >= 2 ? backfill : undefined;
      },
      { timeoutMs: 30_000, what: 'two batches' },
    );
    expect(partway.status).toBe('running');
    // Throttled: the second batch of 3 waited for the first's second at 3 postings a second.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(800);
    await first.close();
    // Redis loses the queued next batch, as with a flush or a worker killed between the two.
    await system.queues.backfill.obliterate({ force: true });

    const stopped = (await getExtractionBackfill(system.handle.db, SECOND_BUMP))!;
    expect(stopped.status).toBe('running');
    expect(stopped.done).toBeLessThan(TOTAL - 1);
    // A second delivery of a batch already saved changes nothing.
    expect(
      await applyBackfillBatch(system.handle.db, {
        version: SECOND_BUMP,
        cursor: null,
        nextCursor: randomUUID(),
        reextracted: [],
        skipped: 0,
        failed: 0,
        finished: true,
      }),
    ).toEqual({ applied: false, saved: 0 });

    // The scheduler's pass finds the backfill running with no job, and queues its next batch
    // (twice over, as two scheduler replicas would: the job id dedupes it).
    const resume = createBackfillResumer({ db: system.handle.db, queues: system.queues, logger });
    expect(await resume()).toBe(1);
    await resume();
    const second = startBackfillWorker(SECOND_BUMP, { batchSize: 3, ratePerSecond: 1_000 });
    try {
      const backfill = await backfillDone(SECOND_BUMP);
      // Every posting with a body once, the one without skipped once: nothing counted twice.
      expect(backfill).toMatchObject({ total: TOTAL, done: TOTAL - 1, skipped: 1, failed: 0 });
    } finally {
      await second.close();
    }
    expect(site.requestCount()).toBe(0);
    expect(lever.requests()).toHaveLength(0);

    const after = await postingRows();
    const byPosting = byPostingId(await versionRows());
    for (const row of after) {
      if (row.id === goneBody) {
        expect(row.extraction_version).toBe(EXTRACTOR_VERSION);
        continue;
      }
      expect(row.extraction_version).toBe(SECOND_BUMP);
      // Exactly one version row per bump: the original fields, then the first bump's.
      expect(byPosting.get(row.id)!.map((v) => [v.version, v.fields.extraction_version])).toEqual([
        [1, EXTRACTOR_VERSION],
        [2, FIRST_BUMP],
      ]);
    }
    // Nothing is left for the scheduler to resume.
    expect(await resume()).toBe(0);
  });

  it('does not start an older version once a newer one has a backfill', async () => {
    const deps = { db: system.handle.db, queues: system.queues, logger };
    // A replica left on the previous release during a rolling deploy.
    expect(await startBackfill(deps, FIRST_BUMP)).toEqual({
      started: false,
      reason: 'newer-version',
      newerVersion: SECOND_BUMP,
    });
    expect(await startBackfill(deps, '2000-01-01.1')).toMatchObject({ started: false });
    expect(await getExtractionBackfill(system.handle.db, '2000-01-01.1')).toBeUndefined();
    // Counter order: "…-22.10" is newer than "…-22.9".
    expect(compareExtractorVersions('2026-11-22.10', '2026-11-22.9')).toBeGreaterThan(0);
    expect((await getExtractionBackfill(system.handle.db, FIRST_BUMP))!.status).toBe('completed');
  });

  it('supersedes a running backfill when a newer version starts', async () => {
    const deps = { db: system.handle.db, queues: system.queues, logger };
    // No worker runs these versions here: the first stays running until the next one starts.
    expect(await startBackfill(deps, THIRD_BUMP)).toMatchObject({
      started: true,
      backfill: { status: 'running', total: TOTAL },
    });
    expect(await startBackfill(deps, FOURTH_BUMP)).toMatchObject({
      started: true,
      backfill: { status: 'running', total: TOTAL },
    });
    expect(await getExtractionBackfill(system.handle.db, THIRD_BUMP)).toMatchObject({
      status: 'superseded',
      done: 0,
    });
    await system.queues.backfill.obliterate({ force: true });
  });
});

describe('GET /postings/:id/versions and GET /admin/backfill', () => {
  let api: Awaited<ReturnType<typeof startTestApi>>;

  beforeAll(async () => {
    api = await startTestApi(system);
  });

  afterAll(async () => {
    await api?.close();
  });

  it("serves a posting's field sets newest first, the current one marked", async () => {
    const [posting] = await system.handle.pool
      .query<{ id: string; title: string }>(
        'SELECT id, title FROM postings WHERE extraction_version = $1 ORDER BY id LIMIT 1',
        [SECOND_BUMP],
      )
      .then((result) => result.rows);
    const response = await api.app.inject(`/postings/${posting!.id}/versions`);
    expect(response.statusCode).toBe(200);
    const body = response.json<{ data: Record<string, unknown>[] }>();
    expect(body.data.map((v) => [v.version, v.current, v.extraction_version])).toEqual([
      [3, true, SECOND_BUMP],
      [2, false, FIRST_BUMP],
      [1, false, EXTRACTOR_VERSION],
    ]);
    for (const version of body.data) {
      expect(version.fields).toMatchObject({ title: posting!.title });
      expect(typeof version.extracted_at).toBe('string');
    }
    expect(body.data[0]!.replaced_at).toBeNull();
    expect(typeof body.data[1]!.replaced_at).toBe('string');
  });

  it('answers 404 for an unknown posting and 400 naming the field for a bad id', async () => {
    const unknown = await api.app.inject(`/postings/${randomUUID()}/versions`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['content-type']).toContain('application/problem+json');
    expect(unknown.json()).toMatchObject({
      title: 'Unknown Posting',
      errors: [{ field: 'params.id' }],
    });
    const bad = await api.app.inject('/postings/not-a-uuid/versions');
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toContain('application/problem+json');
    expect(bad.json<{ errors: { field: string }[] }>().errors[0]!.field).toBe('params.id');
  });

  it('shows each backfill with its counts, to admin keys only', async () => {
    const response = await api.app.inject('/admin/backfill');
    expect(response.statusCode).toBe(200);
    const data = response.json<{ data: Record<string, unknown>[] }>().data;
    expect(data.map((b) => b.version)).toEqual([FOURTH_BUMP, THIRD_BUMP, SECOND_BUMP, FIRST_BUMP]);
    expect(data[0]).toMatchObject({ status: 'running', total: TOTAL, done: 0, remaining: TOTAL });
    expect(data[1]).toMatchObject({ status: 'superseded', remaining: 0 });
    expect(data[2]).toMatchObject({
      status: 'completed',
      total: TOTAL,
      done: TOTAL - 1,
      skipped: 1,
      failed: 0,
      remaining: 0,
    });
    const { key: viewer } = await createApiKey(system.handle.db, {
      name: 'viewer',
      scope: { role: 'viewer', tenantId: null },
    });
    const asViewer = { authorization: `Bearer ${viewer}` };
    expect((await api.app.inject({ url: '/admin/backfill', headers: asViewer })).statusCode).toBe(
      403,
    );
    const versions = await api.app.inject({
      url: `/postings/${randomUUID()}/versions`,
      headers: asViewer,
    });
    expect(versions.statusCode).toBe(404);
  });
});
