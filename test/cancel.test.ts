import { buildApp } from '@gleaner/api';
import {
  cancelRun,
  CANCELLED_POSTING_ERROR,
  completeListing,
  createRun,
  finalizeRun,
  getRun,
  getRunByPublicId,
  insertSite,
  settleIfCancelled,
  settlePostings,
  startRun,
  upsertListedPostings,
  type RunRow,
  type SiteRow,
} from '@gleaner/db';
import { createRedisConnection } from '@gleaner/queue';
import { createFixtureCareerSite, waitFor, type FixtureCareerSite } from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi } from './support/api-server.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';
import { runPostingsById, seedRunWithPostings } from './support/seed.js';

/**
 * Cancelling a run through the API while two worker replicas crawl it: the run ends `cancelled`
 * once and for good, no request reaches the site seconds after, no posting is expired or left
 * pending, and jobs aborted by the cancel are neither retried nor dead-lettered. Deleting a site
 * cancels its run the same way.
 */
const POSTINGS = 1000;
/**
 * Each posting page answers this late: a run of 1,000 takes minutes, cancelled early. The delay
 * also spans the cancel itself (its transaction, then the broadcast), so that some fetches are
 * still in flight when the workers hear of it, even on a loaded machine: with 300 ms, every
 * fetch under way had ended by then on one, and no job was aborted in flight.
 */
const PAGE_DELAY_MS = 2000;
/** The bound on stopping: no request reaches the site later than this after the cancel. */
const STOPPED_WITHIN_MS = 5000;

let system: InProcessSystem;
let producer: Redis;
let app: Awaited<ReturnType<typeof buildApp>>;
let fixture: FixtureCareerSite;
let siteCounter = 0;

async function slowSite(): Promise<SiteRow> {
  siteCounter += 1;
  return insertSite(system.handle.db, {
    siteName: `slow-${siteCounter}`,
    kind: 'career-site',
    config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    rateLimitRps: 200,
    maxConcurrency: 16,
  });
}

async function postingCounts(where: string, value: string): Promise<Record<string, number>> {
  const { rows } = await system.handle.pool.query<{ status: string; count: number }>(
    `SELECT status, count(*)::int AS count FROM postings WHERE ${where} = $1 GROUP BY status`,
    [value],
  );
  return Object.fromEntries(rows.map((row) => [row.status, row.count]));
}

/** Starts a run through the API and waits until its crawl is well under way. */
async function runUnderWay(site: SiteRow): Promise<RunRow> {
  const started = await app.inject({
    method: 'POST',
    url: '/jobs/scrape',
    payload: { site_name: site.siteName },
  });
  expect(started.statusCode).toBe(202);
  const run = (await getRunByPublicId(
    system.handle.db,
    started.json<{ data: { run_id: string } }>().data.run_id,
  ))!;
  await waitFor(
    async () => {
      const counts = await postingCounts('run_id', run.id);
      const settled = (counts.ready ?? 0) + (counts.error ?? 0) + (counts.skipped ?? 0);
      return settled >= 40 ? settled : undefined;
    },
    { timeoutMs: 60_000, what: 'the run to settle some postings' },
  );
  return run;
}

/**
 * Waits until no scrape, crawl or extract job is waiting, parked or running (only they request
 * pages of the site), then returns when the site last saw a request for a posting page.
 */
async function lastPageRequestOnceJobsEnded(): Promise<number> {
  await waitFor(
    async () => {
      const counts = await Promise.all(
        (['scrape', 'crawl', 'extract'] as const).map((name) =>
          system.queues[name].getJobCounts(
            'active',
            'waiting',
            'prioritized',
            'delayed',
            'waiting-children',
          ),
        ),
      );
      return counts.every((queue) => Object.values(queue).every((count) => count === 0))
        ? true
        : undefined;
    },
    { timeoutMs: 60_000, what: 'every scrape, crawl and extract job to end' },
  );
  return fixture.lastRequestAt('/jobs/')!;
}

beforeAll(async () => {
  fixture = await createFixtureCareerSite({
    postings: POSTINGS,
    pageBytes: 2000,
    // Only posting pages are slow: robots.txt and the sitemap answer at once.
    responseDelayMs: (target) => (target.startsWith('/jobs/') ? PAGE_DELAY_MS : 0),
  });
  system = await startInProcessSystem('cancel', { replicas: 2, crawlConcurrency: 8 });
  producer = createRedisConnection(system.namespace.url, 'producer');
  ({ app } = await startTestApi(system, {}, producer));
});

afterAll(async () => {
  await app?.close();
  await system?.close();
  producer?.disconnect();
  await fixture?.close();
});

describe('cancelling a run', () => {
  it('stops it on every replica within seconds, with one terminal transition', async () => {
    const site = await slowSite();
    const run = await runUnderWay(site);

    const cancelAt = Date.now();
    const answer = await app.inject({ method: 'POST', url: `/jobs/scrape/${run.runId}/cancel` });
    expect(answer.statusCode).toBe(200);
    const body = answer.json<{ data: { status: string; run_id: string; finished_at: string } }>();
    expect(body.data).toMatchObject({ status: 'cancelled', run_id: run.runId });
    expect(body.data.finished_at).not.toBeNull();
    const cancelled = (await getRun(system.handle.db, run.id))!;

    const lastRequest = await lastPageRequestOnceJobsEnded();
    expect(lastRequest - cancelAt).toBeLessThanOrEqual(STOPPED_WITHIN_MS);
    // Cancelled early: most pages were never fetched.
    expect(fixture.requestCount('/jobs/')).toBeLessThan(POSTINGS / 2);

    // One terminal transition: nothing touched the run after the cancel, nor as its jobs ended.
    const later = (await getRun(system.handle.db, run.id))!;
    expect(later).toEqual(cancelled);
    expect(later.status).toBe('cancelled');
    expect(later.finishedAt).toEqual(new Date(body.data.finished_at));
    expect(later.message).toMatch(/^cancelled through the API; \d+ postings were still pending/);

    // Nothing pending, nothing expired; the pages never crawled say why.
    const counts = await postingCounts('site_id', site.id);
    expect(counts.pending ?? 0).toBe(0);
    expect(counts.expired ?? 0).toBe(0);
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(POSTINGS);
    const { rows: unfinished } = await system.handle.pool.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM postings
       WHERE site_id = $1 AND status = 'error' AND error = $2 AND extracted_at IS NULL`,
      [site.id, CANCELLED_POSTING_ERROR],
    );
    expect(unfinished[0]!.count).toBeGreaterThan(POSTINGS / 2);
    expect(later.readyCount + later.errorsCount + unfinished[0]!.count).toBe(
      (counts.ready ?? 0) + (counts.error ?? 0),
    );

    // Jobs aborted in flight completed as cancelled (each as its handler returns, which on a busy
    // machine can come after the last page request): none failed, none was dead-lettered.
    const aborted = await waitFor(
      async () => {
        const completed = await system.queues.crawl.getCompleted(0, POSTINGS);
        const cancelledJobs = completed.filter(
          (job) => (job.returnvalue as { cancelled?: boolean } | null)?.cancelled === true,
        );
        if (cancelledJobs.length > 0) return cancelledJobs;
        // What the jobs did instead, for the timeout's message.
        const outcomes = new Map<string, number>();
        for (const job of completed) {
          const shape = Object.keys((job.returnvalue as object | null) ?? {}).join('+') || 'none';
          outcomes.set(shape, (outcomes.get(shape) ?? 0) + 1);
        }
        const failed = await system.queues.crawl.getFailedCount();
        throw new Error(
          `${completed.length} completed (${[...outcomes].map(([shape, n]) => `${shape}: ${n}`).join(', ')}), ${failed} failed, none cancelled`,
        );
      },
      { timeoutMs: 10_000, what: 'the crawl jobs aborted in flight to complete as cancelled' },
    );
    expect(aborted.length).toBeGreaterThan(0);
    expect(await system.queues.crawl.getFailedCount()).toBe(0);
    expect(await system.queues['dead-letter'].count()).toBe(0);
  });

  it('answers 404 for an unknown run and 409, with its status, for one that has ended', async () => {
    const unknown = await app.inject({ method: 'POST', url: '/jobs/scrape/manual_000000/cancel' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);

    const site = await slowSite();
    const run = await createRun(system.handle.db, { siteId: site.id, trigger: 'manual' });
    await startRun(system.handle.db, run.id);
    await completeListing(system.handle.db, run.id, { requestedPages: 0, listingComplete: true });
    expect(await finalizeRun(system.handle.db, run.id)).toMatchObject({ status: 'succeeded' });
    const ended = await app.inject({ method: 'POST', url: `/jobs/scrape/${run.runId}/cancel` });
    expect(ended.statusCode).toBe(409);
    expect(ended.json()).toMatchObject({
      status: 409,
      title: 'Run Already Ended',
      run_status: 'succeeded',
    });

    // A second cancel of a cancelled run is a 409 too: exactly one cancel succeeds.
    const queued = await createRun(system.handle.db, { siteId: site.id, trigger: 'manual' });
    const first = await app.inject({ method: 'POST', url: `/jobs/scrape/${queued.runId}/cancel` });
    expect(first.statusCode).toBe(200);
    const second = await app.inject({ method: 'POST', url: `/jobs/scrape/${queued.runId}/cancel` });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({ run_status: 'cancelled' });
    expect(second.json<{ detail: string }>().detail).toMatch(/already ended as cancelled/);
  });

  it('cancels the active run of a site being deleted, then deletes it', async () => {
    const site = await slowSite();
    const run = await runUnderWay(site);
    const deleteAt = Date.now();
    const deleted = await app.inject({ method: 'DELETE', url: `/sites/${site.siteName}` });
    expect(deleted.statusCode).toBe(204);
    expect((await app.inject({ method: 'GET', url: `/sites/${site.siteName}` })).statusCode).toBe(
      404,
    );
    expect(await getRun(system.handle.db, run.id)).toBeUndefined();
    const lastRequest = await lastPageRequestOnceJobsEnded();
    expect(lastRequest - deleteAt).toBeLessThanOrEqual(STOPPED_WITHIN_MS);
    expect(await system.queues.crawl.getFailedCount()).toBe(0);
    expect(await system.queues['dead-letter'].count()).toBe(0);
  });
});

describe('cancelRun', () => {
  it('keeps the last extraction of postings extracted before, and marks the others', async () => {
    const { db } = system.handle;
    const { run, postings } = await seedRunWithPostings(db, 4, 'cancel-rule');
    const [extracted, alsoExtracted, never, settled] = postings;
    await system.handle.pool.query(
      `UPDATE postings SET title = 'Kept title', extracted_at = now() - interval '1 day'
       WHERE id = ANY($1::uuid[])`,
      [[extracted!.id, alsoExtracted!.id]],
    );
    await settlePostings(db, [{ status: 'skipped', postingId: settled!.id, runId: run.id }]);

    const result = await cancelRun(db, run.id, 'stopped by a test');
    expect(result).toMatchObject({ restored: 2, unfinished: 1 });
    expect(result!.run).toMatchObject({
      status: 'cancelled',
      readyCount: 0,
      skippedCount: 1,
      errorsCount: 0,
      completedPages: 1,
      expiredCount: 0,
    });
    expect(result!.run.finishedAt).toBeInstanceOf(Date);
    expect(result!.run.message).toBe(
      'stopped by a test; 3 postings were still pending (2 kept their last extraction, 1 were never extracted)',
    );
    const byId = await runPostingsById(system.handle, run.id);
    expect(byId.get(extracted!.id)).toMatchObject({
      status: 'ready',
      title: 'Kept title',
      error: null,
    });
    expect(byId.get(alsoExtracted!.id)).toMatchObject({ status: 'ready', title: 'Kept title' });
    expect(byId.get(never!.id)).toMatchObject({ status: 'error', error: CANCELLED_POSTING_ERROR });
    expect(byId.get(settled!.id)).toMatchObject({ status: 'skipped' });

    // Ended once: neither a second cancel nor finalization touches it.
    expect(await cancelRun(db, run.id)).toBeUndefined();
    expect(await finalizeRun(db, run.id)).toBeUndefined();
    expect(await getRun(db, run.id)).toEqual(result!.run);
  });

  it('races finalization: exactly one of them ends the run', async () => {
    const { db } = system.handle;
    for (let round = 0; round < 10; round += 1) {
      const { run, postings } = await seedRunWithPostings(db, 3, 'cancel-race');
      await settlePostings(
        db,
        postings.map((posting) => ({ status: 'skipped', postingId: posting.id, runId: run.id })),
      );
      const [finalized, cancelled] = await Promise.all([
        finalizeRun(db, run.id),
        cancelRun(db, run.id),
      ]);
      expect([finalized, cancelled].filter((outcome) => outcome !== undefined)).toHaveLength(1);
      const ended = (await getRun(db, run.id))!;
      expect(ended.status).toBe(finalized ? 'succeeded' : 'cancelled');
    }
  });

  it('settles postings a listing wrote while the run was being cancelled', async () => {
    const { db } = system.handle;
    const { run, site } = await seedRunWithPostings(db, 1, 'cancel-listing');
    await cancelRun(db, run.id);
    // A listing slice upserted after the cancel settled the run's pending postings.
    await upsertListedPostings(db, site.id, run.id, [
      { externalId: 'late-1', url: 'https://example.com/jobs/late-1' },
    ]);
    expect(await settleIfCancelled(db, run.id)).toBe('cancelled');
    expect(await postingCounts('run_id', run.id)).toEqual({ error: 2 });
  });
});
