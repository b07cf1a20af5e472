import { PassThrough } from 'node:stream';
import {
  countRunPostingsByStatus,
  createRun,
  getRun,
  insertSite,
  type RunRow,
  type SiteRow,
} from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import {
  createRedisConnection,
  enqueue,
  noRepairs,
  queueKeyPrefix,
  scrapeJob,
  type RepairCounts,
} from '@gleaner/queue';
import { createReconciler, type Reconciler } from '@gleaner/scheduler';
import { createFixtureCareerSite, waitFor, type FixtureCareerSite } from '@gleaner/testing';
import { UnrecoverableError, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';
import { seedRunWithPostings } from './support/seed.js';

/**
 * Redis holds the work, Postgres the truth: when Redis loses a job, the reconciler finds the row
 * left waiting for it and queues the job again, and the run still ends `succeeded`.
 */
let system: InProcessSystem;
let fixture: FixtureCareerSite;
let reconciler: Reconciler;
let siteCounter = 0;

beforeAll(async () => {
  system = await startInProcessSystem('reconciler', { crawlConcurrency: 4 });
  fixture = await createFixtureCareerSite({ postings: 40 });
  reconciler = createReconciler({
    db: system.handle.db,
    queues: system.queues,
    logger: createLogger({ service: 'scheduler', level: 'silent', destination: new PassThrough() }),
    runDeadlineMs: 10 * 60_000,
    // Rows quiet for 300 ms whose job Redis lacks count as lost here (30 s by default).
    graceMs: 300,
  });
});

afterAll(async () => {
  await system?.close();
  await fixture?.close();
});

async function newSite(maxRetries?: number): Promise<SiteRow> {
  siteCounter += 1;
  return insertSite(system.handle.db, {
    siteName: `reconciled-${siteCounter}`,
    kind: 'career-site',
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    ...(maxRetries !== undefined && { maxRetries }),
    config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
  });
}

/** Reconciles every 400 ms until the run ends; returns it with the repairs made. */
async function reconcileToEnd(runId: string): Promise<{ run: RunRow; repairs: RepairCounts }> {
  const repairs = noRepairs();
  const run = await waitFor(
    async () => {
      const done = await reconciler.reconcile({ redis: true });
      for (const key of Object.keys(repairs) as (keyof RepairCounts)[]) repairs[key] += done[key];
      const current = await getRun(system.handle.db, runId);
      if (current && current.status !== 'queued' && current.status !== 'running') return current;
      await new Promise((resolve) => setTimeout(resolve, 400));
      return undefined;
    },
    { timeoutMs: 60_000, what: 'the reconciled run to end' },
  );
  return { run, repairs };
}

describe('the reconciler', () => {
  it("queues a queued run's lost scrape job again, and the run succeeds", async () => {
    const site = await newSite();
    // The scrape job is added (delayed, so that no worker takes it first), then lost.
    const run = await createRun(system.handle.db, { siteId: site.id, trigger: 'manual' });
    const jobId = await enqueue(
      system.queues,
      'scrape',
      { runId: run.id, siteId: site.id },
      { delay: 60_000 },
    );
    expect(jobId).toBe(scrapeJob.jobId({ runId: run.id, siteId: site.id }));
    expect(await system.queues.scrape.remove(jobId)).toBe(1);

    // Nothing would ever start it: the reconciler finds the quiet run without a job.
    const { run: ended, repairs } = await reconcileToEnd(run.id);
    expect(repairs.scrapeRequeued).toBe(1);
    expect(ended).toMatchObject({ status: 'succeeded', requestedPages: 40, readyCount: 40 });
    expect(await countRunPostingsByStatus(system.handle.db, run.id)).toMatchObject({
      pending: 0,
      ready: 40,
    });
  });

  it("queues a running run's lost crawl jobs again, with their site's attempts, and the run succeeds", async () => {
    // Seed 003's max_retries: 1 retry after the first attempt, for the scrape's jobs and the
    // reconciler's alike.
    const site = await newSite(1);
    // Crawling is paused while the scrape lists the site and fans out its crawl jobs.
    const crawl = system.replicas[0]!.runtime.workers[1]!;
    expect(crawl.name).toBe('crawl');
    await crawl.pause(true);
    const run = await createRun(system.handle.db, { siteId: site.id, trigger: 'manual' });
    await enqueue(system.queues, 'scrape', { runId: run.id, siteId: site.id });
    await waitFor(
      async () => ((await getRun(system.handle.db, run.id))?.listingDone ? true : undefined),
      { what: 'the listing to finish' },
    );
    // Half of the crawl jobs are lost (one may have been taken as the worker paused).
    const queued = await system.queues.crawl.getJobs(['waiting', 'prioritized', 'delayed']);
    expect(queued.length).toBeGreaterThanOrEqual(39);
    expect(new Set(queued.map((job) => job.opts.attempts))).toEqual(new Set([2]));
    const lost = queued.slice(0, 20);
    for (const job of lost) await job.remove();
    // Passes while crawling is still paused (the rows count as lost once quiet for the grace
    // period): the jobs they add again are there to be read.
    let requeuedCount = 0;
    await waitFor(
      async () => {
        requeuedCount += (await reconciler.reconcile({ redis: true })).crawlRequeued;
        if (requeuedCount >= 20) return true;
        await new Promise((resolve) => setTimeout(resolve, 200));
        return undefined;
      },
      { what: 'the lost crawl jobs to be added again' },
    );
    expect(requeuedCount).toBe(20);
    const requeued = await Promise.all(lost.map((job) => system.queues.crawl.getJob(job.id!)));
    expect(requeued.map((job) => job?.opts.attempts)).toEqual(lost.map(() => 2));
    await crawl.resume();

    const { run: ended, repairs } = await reconcileToEnd(run.id);
    expect(repairs.crawlRequeued).toBe(0);
    expect(ended).toMatchObject({ status: 'succeeded', readyCount: 40, errorsCount: 0 });
  });

  it('settles a posting whose crawl job failed for good without its handler, and closes the run', async () => {
    const site = await newSite();
    const crawl = system.replicas[0]!.runtime.workers[1]!;
    await crawl.pause(true);
    const run = await createRun(system.handle.db, { siteId: site.id, trigger: 'manual' });
    await enqueue(system.queues, 'scrape', { runId: run.id, siteId: site.id });
    await waitFor(
      async () => ((await getRun(system.handle.db, run.id))?.listingDone ? true : undefined),
      { what: 'the listing to finish' },
    );
    // One job is failed for good by something other than its handler (as BullMQ's stall check
    // does to a job whose worker died too often): nothing settled its posting.
    const connection = createRedisConnection(system.namespace.target, 'worker');
    const manual = new Worker('crawl', null, {
      connection,
      prefix: queueKeyPrefix(connection, system.namespace.prefix, 'crawl'),
    });
    const token = 'reconciler-test';
    const doomed = await manual.getNextJob(token);
    // Unrecoverable: failed for good at once, whatever its attempts.
    await doomed.moveToFailed(
      new UnrecoverableError('job stalled more than allowable limit'),
      token,
      false,
    );
    await manual.close();
    connection.disconnect();
    expect(await system.queues.crawl.getJobState(doomed.id!)).toBe('failed');
    await crawl.resume();

    const { run: ended, repairs } = await reconcileToEnd(run.id);
    expect(repairs.postingsSettled).toBe(1);
    expect(ended).toMatchObject({ status: 'partial', readyCount: 39, errorsCount: 1 });
  });

  it('fails a run past its deadline, with its pending postings, in one terminal transition', async () => {
    const { run } = await seedRunWithPostings(system.handle.db, 3, 'overdue');
    const strict = createReconciler({
      db: system.handle.db,
      queues: system.queues,
      logger: createLogger({
        service: 'scheduler',
        level: 'silent',
        destination: new PassThrough(),
      }),
      runDeadlineMs: 1,
      graceMs: 300,
    });
    const repairs = await strict.reconcile({ redis: true });
    expect(repairs.runsPastDeadline).toBeGreaterThanOrEqual(1);
    const ended = await getRun(system.handle.db, run.id);
    expect(ended).toMatchObject({ status: 'failed', errorsCount: 3, readyCount: 0 });
    expect(ended!.message).toMatch(/deadline .*RUN_DEADLINE_MS/);
    expect(await countRunPostingsByStatus(system.handle.db, run.id)).toMatchObject({
      pending: 0,
      error: 3,
    });
    // Ended once: a second look changes nothing.
    await strict.reconcile({ redis: true });
    expect((await getRun(system.handle.db, run.id))!.finishedAt).toEqual(ended!.finishedAt);
  });
});
