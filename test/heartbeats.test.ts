import { createDb, insertSite, type DbHandle } from '@gleaner/db';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  startScrapeRun,
  type Queues,
} from '@gleaner/queue';
import {
  createFixtureCareerSite,
  waitFor,
  waitForLog,
  type FixtureCareerSite,
  type ServiceProcess,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './support/api-server.js';
import { useServiceProcesses } from './support/service-processes.js';

/**
 * Every worker process beats (seed 001's heartbeats, for every queue): a crawl worker killed
 * mid-run shows dead on `GET /workers` within two of its beats, while the live ones show the jobs
 * they are running.
 */
const fleet = useServiceProcesses('heartbeats');
const BEAT_MS = 1000;
let handle: DbHandle;
let redis: Redis;
let queues: Queues;
let site: FixtureCareerSite;
let app: TestApp;

interface WorkerView {
  worker_id: string;
  pid: number;
  queues: string[];
  status: string;
  jobs_completed: number;
  jobs_in_flight: number;
  current_jobs: { queue: string; job_id: string; run_id: string | null; subject: string | null }[];
  seconds_since_heartbeat: number;
  heartbeat_interval_ms: number;
}

beforeAll(async () => {
  handle = createDb({ url: fleet.database.url, poolMax: 3 });
  redis = createRedisConnection(fleet.namespace.url, 'producer');
  queues = createQueues(redis, fleet.namespace.prefix);
  // Slow pages: each worker has crawl jobs in flight for the whole run.
  site = await createFixtureCareerSite({ postings: 400, responseDelayMs: 300 });
  ({ app } = await buildTestApp({ handle, redis, queues }));
});

afterAll(async () => {
  await app?.close();
  if (queues) await closeQueues(queues);
  redis?.disconnect();
  await site?.close();
  await handle?.close();
});

async function workers(): Promise<WorkerView[]> {
  const answer = await app.inject({ method: 'GET', url: '/workers' });
  expect(answer.statusCode, answer.body).toBe(200);
  return answer.json().data as WorkerView[];
}

function crawlWorker(): ServiceProcess {
  return fleet.start('worker', {
    WORKER_QUEUES: 'scrape,crawl,extract',
    WORKER_HEARTBEAT_INTERVAL_MS: String(BEAT_MS),
    WORKER_CONCURRENCY_CRAWL: '8',
    DATABASE_POOL_MAX: '4',
    HTTP_ALLOW_PRIVATE_NETWORKS: 'true',
  });
}

describe('worker heartbeats', () => {
  it('show a killed crawl worker dead within two beats, and the live ones with their jobs', async () => {
    // Rows of workers long gone: one silent for 8 days, one for 3.
    for (const [workerId, days] of [
      ['gone-8d', 8],
      ['gone-3d', 3],
    ] as const)
      await handle.pool.query(
        `INSERT INTO worker_heartbeats (worker_id, hostname, pid, queues, status, started_at,
           last_heartbeat, heartbeat_interval_ms)
         VALUES ($1, 'old-host', 1, '{crawl}', 'running', now() - make_interval(days => $2),
                 now() - make_interval(days => $2), 10000)`,
        [workerId, days],
      );
    const processes = [crawlWorker(), crawlWorker(), crawlWorker()];
    await Promise.all(processes.map((worker) => waitForLog(worker, 'worker started')));
    // A worker starting forgets the workers silent for a week; the other stays a while.
    await expect
      .poll(async () => {
        const { rows } = await handle.pool.query<{ worker_id: string }>(
          `SELECT worker_id FROM worker_heartbeats WHERE hostname = 'old-host' ORDER BY worker_id`,
        );
        return rows.map((row) => row.worker_id);
      })
      .toEqual(['gone-3d']);
    const registered = await insertSite(handle.db, {
      siteName: 'heartbeats',
      kind: 'career-site',
      config: { url: site.url, sitemapUrl: site.sitemapUrl },
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      maxConcurrency: 24,
      rateLimitRps: 1000,
    });
    const run = await startScrapeRun(
      { db: handle.db, queues },
      { siteId: registered.id, trigger: 'manual' },
    );

    // Every replica is running crawl jobs of the run.
    const busy = await waitFor(
      async () => {
        const seen = (await workers()).filter((w) => processes.some((p) => p.child.pid === w.pid));
        return seen.length === 3 &&
          seen.every(
            (w) => w.status === 'running' && w.current_jobs.some((j) => j.queue === 'crawl'),
          )
          ? seen
          : undefined;
      },
      { timeoutMs: 60_000, what: 'three workers running crawl jobs' },
    );
    for (const worker of busy) {
      expect(worker.queues).toEqual(['scrape', 'crawl', 'extract']);
      expect(worker.heartbeat_interval_ms).toBe(BEAT_MS);
      for (const job of worker.current_jobs.filter((j) => j.queue === 'crawl')) {
        expect(job.run_id).toBe(run.id);
        expect(job.subject).toMatch(/^[0-9a-f-]{36}$/);
      }
    }

    const [doomed, ...alive] = processes;
    doomed!.child.kill('SIGKILL');
    const killedAt = Date.now();
    const dead = await waitFor(
      async () => {
        const listed = await workers();
        const found = listed.find((w) => w.pid === doomed!.child.pid);
        return found?.status === 'dead' ? { found, listed } : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: 'the killed worker to show dead' },
    );
    // Dead once silent for two beats: within two beats of the kill (its last beat came before
    // it), with room for a busy machine's polling.
    expect(Date.now() - killedAt).toBeLessThan(2 * BEAT_MS + 1500);
    expect(dead.found.seconds_since_heartbeat).toBeGreaterThan((2 * BEAT_MS) / 1000);
    // The other two are running, each with crawl jobs of the run in hand.
    const others = dead.listed.filter((w) => alive.some((p) => p.child.pid === w.pid));
    expect(others).toHaveLength(2);
    for (const worker of others) {
      expect(worker.status).toBe('running');
      expect(
        worker.current_jobs.filter((j) => j.queue === 'crawl' && j.run_id === run.id).length,
      ).toBeGreaterThan(0);
      expect(worker.jobs_in_flight).toBeGreaterThan(0);
    }

    // The run page names who is on the run: the two live workers and the dead one, marked.
    const page = await app.inject({ method: 'GET', url: `/runs/${run.runId}` });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`data-status="dead">${dead.found.worker_id} (`);
    for (const worker of others) expect(page.body).toContain(`>${worker.worker_id} (`);

    // A worker that stops says so, and is not called dead however long it stays silent.
    expect(await alive[0]!.stop()).toBe(0);
    const stopped = (await workers()).find((w) => w.pid === alive[0]!.child.pid);
    expect(stopped?.status).toBe('stopped');
    expect(stopped!.jobs_completed).toBeGreaterThan(0);
    // gleaner_workers counts them by status.
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/^gleaner_workers\{status="dead"\} 1$/m);
    expect(metrics.body).toMatch(/^gleaner_workers\{status="stopped"\} 1$/m);
    expect(metrics.body).toMatch(/^gleaner_workers\{status="running"\} 1$/m);
  }, 120_000);
});
