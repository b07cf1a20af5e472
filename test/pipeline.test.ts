import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeQueues, createQueues, createRedisConnection, type Queues } from '@gleaner/queue';
import pg from 'pg';
import { createDb } from '@gleaner/db';
import {
  createFixtureCareerSite,
  createTestDatabase,
  verifyChangeFeed,
  createTestRedisNamespace,
  adminHeaders,
  freePort,
  startService,
  waitFor,
  waitForLog,
  type FixtureCareerSite,
  UNSHED_API_ENV,
  type ServiceProcess,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';

/**
 * The whole system as separate OS processes: the API and two workers against real Redis and
 * Postgres, scraping a fixture career site of 200 postings.
 */
const POSTINGS = 200;

let database: TestDatabase;
let redis: TestRedisNamespace;
let site: FixtureCareerSite;
let api: ServiceProcess;
let workers: ServiceProcess[] = [];
let apiUrl: string;
let pool: pg.Pool;

interface RunView {
  run_id: string;
  status: string;
  ready_count: number;
  skipped_count: number;
  errors_count: number;
  expired_count: number;
  requested_pages: number;
  postings: Record<string, unknown>[];
}

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers:
      body === undefined ? adminHeaders : { ...adminHeaders, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function scrapeToEnd(siteName: string): Promise<RunView> {
  const started = await call('POST', '/jobs/scrape', { site_name: siteName });
  expect(started.status).toBe(202);
  expect(started.body.data).toMatchObject({ status: 'queued', execution_mode: 'async' });
  const runId = started.body.data.run_id as string;
  return waitFor(
    async () => {
      const { body } = await call(
        'GET',
        `/jobs/scrape/${runId}?limit=1000&include=description,requirements`,
      );
      const run = body.data as RunView;
      return run.status === 'queued' || run.status === 'running' ? undefined : run;
    },
    { timeoutMs: 120_000, intervalMs: 250, what: `run ${runId} to finish` },
  );
}

function finalizeLogCount(runUuid: string): number {
  return workers
    .flatMap((w) => w.logs)
    .filter((line) => line.msg === 'run finalized' && line.runId === runUuid).length;
}

/** The system's queues, on a connection of the test's own (a cluster's, when it runs on one). */
async function withQueues<T>(use: (queues: Queues) => Promise<T>): Promise<T> {
  const connection = createRedisConnection(redis.target, 'producer', { enableOfflineQueue: true });
  const queues = createQueues(connection, redis.prefix);
  try {
    return await use(queues);
  } finally {
    await closeQueues(queues);
    connection.disconnect();
  }
}

async function completedJobs(queue: 'crawl' | 'extract'): Promise<number> {
  return withQueues((queues) => queues[queue].getCompletedCount());
}

async function storedBodies(): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM page_bodies');
  return rows[0]!.n;
}

async function runUuid(publicId: string): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    'SELECT id FROM scrape_runs WHERE run_id = $1',
    [publicId],
  );
  return rows[0]!.id;
}

beforeAll(async () => {
  [database, site] = await Promise.all([
    createTestDatabase('pipeline'),
    createFixtureCareerSite({ postings: POSTINGS, seed: 7 }),
  ]);
  redis = createTestRedisNamespace('pipeline');
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: database.url,
    ...redis.env,
    QUEUE_PREFIX: redis.prefix,
    HTTP_ALLOW_PRIVATE_NETWORKS: 'true',
    DATABASE_POOL_MAX: '8',
    SHUTDOWN_GRACE_MS: '5000',
  };
  api = startService('api', {
    ...env,
    ...UNSHED_API_ENV,
    API_PORT: String(port),
    API_HOST: '127.0.0.1',
  });
  workers = [1, 2].map((n) =>
    startService(
      'worker',
      { ...env, WORKER_CONCURRENCY_CRAWL: '8', WORKER_CONCURRENCY_EXTRACT: '4' },
      `worker-${n}`,
    ),
  );
  await Promise.all([
    waitFor(async () => ((await fetch(`${apiUrl}/health`)).ok ? true : undefined), {
      what: 'api health',
      timeoutMs: 30_000,
    }),
    ...workers.map((w) => waitForLog(w, 'worker started')),
  ]);
  const created = await call('POST', '/sites', {
    site_name: 'fixture-careers',
    kind: 'career-site',
    config: { url: site.url, sitemapUrl: site.sitemapUrl },
    // The fixture site needs no human-like pauses; the gate still caps concurrency at 8.
    min_pause_seconds: 0,
    max_pause_seconds: 0,
    max_concurrency: 8,
  });
  expect(created.status).toBe(201);
});

afterAll(async () => {
  const codes = await Promise.all([api, ...workers].filter(Boolean).map((p) => p.stop()));
  await pool?.end();
  await site?.close();
  await redis?.cleanup();
  await database?.drop();
  // Graceful shutdown: every process exits 0 on SIGTERM.
  expect(codes.every((code) => code === 0)).toBe(true);
});

describe('API → scrape → crawl → extract → Postgres, as separate processes', () => {
  it('finalizes a first run once with every posting ready and its fields equal to the JSON-LD', async () => {
    const run = await scrapeToEnd('fixture-careers');
    expect(run).toMatchObject({
      status: 'succeeded',
      requested_pages: POSTINGS,
      ready_count: POSTINGS,
      errors_count: 0,
    });
    expect(run.postings).toHaveLength(POSTINGS);
    const byUrl = new Map(run.postings.map((p) => [p.url as string, p]));
    for (const fixture of site.postings()) {
      const stored = byUrl.get(fixture.url);
      expect(stored, fixture.url).toBeDefined();
      const e = fixture.expected;
      expect(stored).toMatchObject({
        status: 'ready',
        title: e.title,
        company: e.company,
        location: e.location,
        location_city: e.locationCity,
        location_region: e.locationRegion,
        location_country: e.locationCountry,
        is_remote: e.isRemote,
        employment_type: e.employmentType,
        salary_min: e.salaryMin,
        salary_max: e.salaryMax,
        salary_currency: e.salaryCurrency,
        salary_period: e.salaryPeriod,
        date_posted: e.datePosted,
        description: e.description,
        requirements: e.requirements,
      });
    }
    // The workers used the Redis the suite was given: one server, or a cluster.
    const redisOfWorkers = workers.map(
      (worker) => worker.logs.find((line) => line.msg === 'worker started')?.redis,
    );
    expect(redisOfWorkers).toEqual(
      workers.map(() => (redis.clusterNodes ? 'cluster of 3 nodes' : 'server')),
    );
    // Both workers took part, and exactly one of them closed the run.
    const done = await withQueues((queues) => queues.crawl.getJobs(['completed'], 0, -1));
    // Pages are extracted in the crawl job from the bytes in hand; the extract queue only
    // carries what that could not settle.
    expect(await completedJobs('extract')).toBe(0);
    expect(done).toHaveLength(POSTINGS);
    // Every page body is stored, content-addressed, and each posting points at its own.
    const bodies = await pool.query<{ stored: number; linked: number }>(
      `SELECT (SELECT count(*)::int FROM page_bodies) AS stored,
              (SELECT count(*)::int FROM postings p JOIN page_bodies b ON b.sha256 = p.body_sha256) AS linked`,
    );
    expect(bodies.rows[0]).toEqual({ stored: POSTINGS, linked: POSTINGS });
    expect(new Set(done.map((job) => job.processedBy)).size).toBe(2);
    expect(finalizeLogCount(await runUuid(run.run_id))).toBe(1);
  });

  it('skips every posting of an unchanged site on the next run, storing and extracting nothing', async () => {
    const bodiesBefore = await storedBodies();
    const run = await scrapeToEnd('fixture-careers');
    expect(await completedJobs('extract')).toBe(0);
    expect(await storedBodies()).toBe(bodiesBefore);
    expect(run).toMatchObject({
      status: 'succeeded',
      skipped_count: POSTINGS,
      ready_count: 0,
      errors_count: 0,
      expired_count: 0,
    });
    expect(run.postings.every((p) => p.status === 'skipped')).toBe(true);
    expect(finalizeLogCount(await runUuid(run.run_id))).toBe(1);
  });

  it('re-extracts exactly the one posting that changed and keeps its previous version', async () => {
    const target = site.postings()[5]!;
    const oldTitle = target.expected.title;
    site.update(target.id, { title: `${oldTitle} (Senior)` });
    const bodiesBefore = await storedBodies();
    const run = await scrapeToEnd('fixture-careers');
    expect(run).toMatchObject({ status: 'succeeded', ready_count: 1, skipped_count: POSTINGS - 1 });
    expect(await storedBodies()).toBe(bodiesBefore + 1);
    const changed = run.postings.find((p) => p.url === target.url)!;
    expect(changed).toMatchObject({ status: 'ready', title: `${oldTitle} (Senior)` });
    const { rows } = await pool.query<{ version: number; title: string }>(
      "SELECT version, fields->>'title' AS title FROM posting_versions WHERE posting_id = $1",
      [changed.id],
    );
    expect(rows).toEqual([{ version: 1, title: oldTitle }]);
    expect((await pool.query('SELECT count(*)::int AS n FROM posting_versions')).rows[0].n).toBe(1);
  });

  it('expires exactly the postings removed from the site, once two listings missed them', async () => {
    const removed = site
      .postings()
      .filter((_, i) => i % 10 === 3)
      .map((p) => p.id);
    expect(removed).toHaveLength(20);
    const removedUrls = removed.map((id) => site.get(id)!.url).sort();
    site.remove(removed);
    // EXPIRE_AFTER_MISSES is 2: the first listing without them only counts a miss.
    const first = await scrapeToEnd('fixture-careers');
    expect(first).toMatchObject({
      status: 'succeeded',
      requested_pages: POSTINGS - 20,
      expired_count: 0,
    });
    const { rows: missed } = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM postings WHERE missed_listings = 1 AND status <> 'expired'",
    );
    expect(missed[0]?.n).toBe(20);
    const run = await scrapeToEnd('fixture-careers');
    expect(run).toMatchObject({
      status: 'succeeded',
      requested_pages: POSTINGS - 20,
      skipped_count: POSTINGS - 20,
      expired_count: 20,
    });
    const { rows } = await pool.query<{ url: string }>(
      "SELECT url FROM postings WHERE status = 'expired' ORDER BY url",
    );
    expect(rows.map((r) => r.url)).toEqual(removedUrls);
  });

  it('tells it all on the change feed: each posting created and read, the new title, the 20 closed', async () => {
    const handle = createDb({ url: database.url, poolMax: 1 });
    try {
      const feed = await verifyChangeFeed(handle.db);
      expect(feed.failures).toEqual([]);
      // Read once by the first run, once more for the changed page; unchanged runs tell nothing.
      expect(feed.byType).toEqual({ created: POSTINGS, updated: POSTINGS + 1, closed: 20 });
    } finally {
      await handle.close();
    }
  });
});
