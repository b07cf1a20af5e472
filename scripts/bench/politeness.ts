/**
 * `pnpm bench politeness`: does the per-site gate (packages/http/src/gate) keep every site under
 * its configured `rate_limit_rps` while still using that budget, with several worker replicas
 * crawling many sites at once?
 *
 * Setup: BENCH_SITES (20) fixture career sites, each its own `createFixtureCareerSite` HTTP server,
 * all in ONE helper process (`startFixtureSites` in support.ts), each registered as
 * a site with its own `rate_limit_rps` (cycled from BENCH_LIMITS, default 2,3,…,10), no random
 * pauses (`min/max_pause_seconds` 0) and `max_concurrency` 4, with BENCH_POSTINGS_PER_SITE (100)
 * postings each. BENCH_WORKERS (4) worker processes share one fresh Postgres database and Redis
 * prefix; one run per site is created and all scrapes are enqueued at once.
 *
 * Arrival times: the helper timestamps every request its fixture servers receive through Node's
 * `http.server.request.start` diagnostics channel, published by node:http as soon as a request
 * head is parsed, before any handler runs (epoch ms, sub-ms precision). No change to
 * packages/testing and no proxy (a proxy would have to rewrite the sitemap's absolute URLs). The
 * helper does nothing else, runs at nice -10 when allowed, and reports its own event-loop delay
 * (`fixtureEventLoopDelayMs`): a stalled loop would bunch timestamps, so read it before blaming
 * the gate for a burst. Only posting pages (`/jobs/<id>`) count; robots.txt and the sitemap are
 * not the rate-limited work.
 *
 * Per site:
 *   maxObservedRps  the most posting requests that arrived in any window [t, t + 1000 ms), t
 *                   being an arrival time (a window holding the most arrivals can always be
 *                   slid to start at one). Half-open on purpose: with perfect spacing of exactly
 *                   1000/limit ms, a closed window [t, t + 1000] would hold limit + 1 starts
 *                   (t, …, t + 1000) although the long-run rate is exactly the limit; the
 *                   half-open window holds `limit`. Target: ≤ limitRps. This is strict: arrival
 *                   jitter of even 1 ms between two requests granted exactly 1000/limit ms apart
 *                   can put limit + 1 in a window, which is why the gate widens its interval by
 *                   a start skew (packages/http/src/gate/README.md).
 *   tightestWindowMs  the smallest span of limit + 1 consecutive arrivals: below 1000 exactly
 *                   when some window holds more than the limit; its distance above 1000 is what
 *                   is left of the skew. `minGapMs` (smallest gap between consecutive arrivals)
 *                   vs `intervalMs` (1000/limit) shows the jitter of single gaps.
 *   utilisation     achieved rate over the busy period ÷ limit, where the busy period runs from
 *                   the site's first to its last posting request (all its crawl jobs are enqueued
 *                   together by the scrape, so it has a backlog the whole time) and the achieved
 *                   rate is (n − 1) / (last − first): n starts span n − 1 gaps, so a perfectly
 *                   paced site scores 1.0. Target: ≥ 0.9.
 *
 * Last stdout line:
 *   {"sites":[{"site","limitRps","maxObservedRps","utilisation",…}],"allWithinLimit",
 *    "minUtilisation","seconds",…}
 * Exit 1 when a run did not succeed or a target is missed (after the JSON line), 2 on bad settings.
 * Run it as `pnpm -s bench politeness`: without -s, pnpm prints its ELIFECYCLE line on stdout
 * after the JSON when the exit code is non-zero.
 *
 * Environment: BENCH_SITES (20), BENCH_POSTINGS_PER_SITE (100), BENCH_LIMITS ("2,3,4,5,6,7,8,9,10";
 * whole numbers, so that a 1-second window can hold exactly the limit), BENCH_WORKERS (4),
 * BENCH_CRAWL_CONCURRENCY (16), BENCH_MAX_CONCURRENCY (4), BENCH_PAGE_BYTES (8000),
 * BENCH_TIMEOUT_MS (240000), BENCH_ARRIVALS_FILE (unset; a path: every site's posting-request times,
 * ms after the enqueue, are written there as JSON). TEST_DATABASE_URL / TEST_REDIS_URL as for the tests.
 */
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { insertSite } from '@gleaner/db';
import { startScrapeRun } from '@gleaner/queue';
import { BenchUsageError, type BenchModule } from './bench.js';
import {
  createBenchStack,
  integerFrom,
  maxInWindow,
  progressFor,
  round2,
  round3,
  benchRun,
  report,
  startFixtureSites,
  startWorkerProcesses,
  waitForRuns,
  wantsHelp,
  workerWarnings,
  type Teardown,
} from './support.js';

const USAGE = `usage: pnpm bench politeness
environment: BENCH_SITES (20), BENCH_POSTINGS_PER_SITE (100), BENCH_LIMITS ("2,3,4,5,6,7,8,9,10"),
  BENCH_WORKERS (4), BENCH_CRAWL_CONCURRENCY (16), BENCH_MAX_CONCURRENCY (4),
  BENCH_PAGE_BYTES (8000), BENCH_TIMEOUT_MS (240000), BENCH_ARRIVALS_FILE (unset)
`;

const TARGET_UTILISATION = 0.9;
const WINDOW_MS = 1000;
const POLL_MS = 250;

interface Settings {
  sites: number;
  postingsPerSite: number;
  limits: number[];
  workers: number;
  crawlConcurrency: number;
  maxConcurrency: number;
  pageBytes: number;
  timeoutMs: number;
  arrivalsFile: string | undefined;
}

const progress = progressFor('politeness');

// ---------------------------------------------------------------------------------------------
// Settings

function limitsFrom(variable: string, fallback: number[]): number[] {
  const raw = process.env[variable];
  if (raw === undefined || raw.trim() === '') return fallback;
  const limits = raw.split(',').map((part) => Number(part.trim()));
  if (limits.some((limit) => !Number.isSafeInteger(limit) || limit < 1 || limit > 1000)) {
    throw new BenchUsageError(
      `${variable} must be a comma-separated list of whole numbers in [1, 1000] (got "${raw}")`,
      USAGE,
    );
  }
  return limits;
}

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  return {
    sites: integerFrom('BENCH_SITES', 20, { min: 1, max: 200 }, USAGE),
    postingsPerSite: integerFrom('BENCH_POSTINGS_PER_SITE', 100, { min: 2, max: 10_000 }, USAGE),
    limits: limitsFrom('BENCH_LIMITS', [2, 3, 4, 5, 6, 7, 8, 9, 10]),
    workers: integerFrom('BENCH_WORKERS', 4, { min: 1, max: 32 }, USAGE),
    crawlConcurrency: integerFrom('BENCH_CRAWL_CONCURRENCY', 16, { min: 1, max: 1000 }, USAGE),
    maxConcurrency: integerFrom('BENCH_MAX_CONCURRENCY', 4, { min: 1, max: 1000 }, USAGE),
    pageBytes: integerFrom('BENCH_PAGE_BYTES', 8000, { min: 0, max: 1_000_000 }, USAGE),
    timeoutMs: integerFrom('BENCH_TIMEOUT_MS', 240_000, { min: 1000, max: 3_600_000 }, USAGE),
    arrivalsFile: process.env.BENCH_ARRIVALS_FILE || undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// Measures

interface SiteMeasure {
  requests: number;
  /** Most arrivals in any half-open window [t, t + WINDOW_MS). */
  maxInWindow: number;
  /** Smallest gap between consecutive arrivals, ms (null below two requests). */
  minGapMs: number | null;
  /** Gaps between consecutive arrivals, ms: 10th, 50th and 90th percentile. */
  gapPercentilesMs: [number, number, number] | null;
  /**
   * Smallest span of `limit + 1` consecutive arrivals, ms (null with fewer): a window
   * [t, t + 1000) holds more than `limit` arrivals exactly when this is below 1000, and how far
   * above 1000 it stays is the margin left to the gate's start skew.
   */
  tightestWindowMs: number | null;
  /** First to last arrival, ms. */
  busyMs: number;
  /** (n − 1) / busy seconds: requests per second while the site had a backlog. */
  achievedRps: number | null;
}

export function measureArrivals(unsorted: readonly number[], limit: number): SiteMeasure {
  const times = [...unsorted].sort((a, b) => a - b);
  let tightestWindowMs: number | null = null;
  for (let start = 0; start + limit < times.length; start++) {
    const span = (times[start + limit] as number) - (times[start] as number);
    tightestWindowMs = tightestWindowMs === null ? span : Math.min(tightestWindowMs, span);
  }
  const gaps = times
    .slice(1)
    .map((time, index) => time - (times[index] as number))
    .sort((a, b) => a - b);
  const minGapMs = gaps.length > 0 ? (gaps[0] as number) : null;
  const percentile = (q: number): number =>
    gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))] as number;
  const gapPercentilesMs: SiteMeasure['gapPercentilesMs'] =
    gaps.length > 0 ? [percentile(0.1), percentile(0.5), percentile(0.9)] : null;
  const busyMs = times.length > 1 ? (times.at(-1) as number) - (times[0] as number) : 0;
  return {
    requests: times.length,
    maxInWindow: maxInWindow(times, WINDOW_MS),
    minGapMs,
    gapPercentilesMs,
    tightestWindowMs,
    busyMs,
    achievedRps: busyMs > 0 ? (times.length - 1) / (busyMs / 1000) : null,
  };
}

function aggregateRps(logs: readonly (readonly number[])[]): number | null {
  const all = logs.flat();
  if (all.length < 2) return null;
  const span = Math.max(...all) - Math.min(...all);
  return span > 0 ? round2((all.length - 1) / (span / 1000)) : null;
}

// ---------------------------------------------------------------------------------------------

interface BenchSite {
  name: string;
  limitRps: number;
  /** Position in the fixture process's lists. */
  index: number;
  siteId: string;
  runId: string;
  publicRunId: string;
}

async function bench(settings: Settings, teardown: Teardown): Promise<number> {
  const failures: string[] = [];

  const fixtures = await startFixtureSites(
    Array.from({ length: settings.sites }, (_, index) => ({
      postings: settings.postingsPerSite,
      pageBytes: settings.pageBytes,
      seed: index + 1,
    })),
    teardown,
    progress,
  );
  const fixtureNice = fixtures.nice;
  progress(
    `${settings.sites} fixture sites × ${settings.postingsPerSite} postings in process ${fixtures.pid} (nice ${fixtureNice ?? 'unchanged'})`,
  );

  const stack = await createBenchStack('polite', teardown);
  const { handle, queues } = stack;
  const workers = await startWorkerProcesses(
    settings.workers,
    { ...stack.workerEnv, WORKER_CONCURRENCY_CRAWL: String(settings.crawlConcurrency) },
    stack,
    teardown,
  );
  progress(
    `${settings.workers} workers ready (pids ${workers.map((w) => w.child.pid).join(', ')}; crawl concurrency ${settings.crawlConcurrency} each)`,
  );

  // Sites, then one run each, all started at once.
  const registered: Omit<BenchSite, 'runId' | 'publicRunId'>[] = [];
  for (const [index, fixture] of fixtures.sites.entries()) {
    const limitRps = settings.limits[index % settings.limits.length] as number;
    const name = `bench-politeness-${String(index + 1).padStart(2, '0')}`;
    const row = await insertSite(handle.db, {
      siteName: name,
      kind: 'career-site',
      config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
      rateLimitRps: limitRps,
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      maxConcurrency: settings.maxConcurrency,
    });
    registered.push({ name, limitRps, index, siteId: row.id });
  }
  progress(`limits (rps): ${registered.map((site) => site.limitRps).join(', ')}`);

  const startedAt = performance.now();
  const started = performance.timeOrigin + startedAt;
  const sites: BenchSite[] = await Promise.all(
    registered.map(async (site) => {
      const run = await startScrapeRun(
        { db: handle.db, queues },
        { siteId: site.siteId, trigger: 'manual' },
      );
      return { ...site, runId: run.id, publicRunId: run.runId };
    }),
  );
  progress(`${sites.length} scrapes enqueued`);

  const { runs, timedOut, endedAt } = await waitForRuns(
    handle,
    sites.map((site) => site.runId),
    {
      workers,
      startedAt,
      timeoutMs: settings.timeoutMs,
      pollMs: POLL_MS,
      onTick: async (elapsed, done) => {
        const fetched = (await fixtures.counts()).reduce((sum, count) => sum + count, 0);
        progress(
          `  … ${elapsed.toFixed(0)} s: ${fetched}/${sites.length * settings.postingsPerSite} posting requests, ${done}/${sites.length} runs done`,
        );
      },
    },
  );
  if (timedOut)
    failures.push(
      `${sites.length - endedAt.size} runs still not terminal after ${settings.timeoutMs} ms`,
    );
  const seconds = (performance.now() - startedAt) / 1000;
  const { arrivals, loopDelayMs } = await fixtures.dump();
  if (settings.arrivalsFile !== undefined) {
    // Raw material for a closer look: every site's posting-request times, ms after the enqueue.
    const dump = sites.map((site) => ({
      site: site.name,
      limitRps: site.limitRps,
      arrivalsMs: (arrivals[site.index] ?? []).map((at) => round2(at - started)),
    }));
    writeFileSync(settings.arrivalsFile, `${JSON.stringify(dump)}\n`);
    progress(`arrival times written to ${settings.arrivalsFile}`);
  }

  // Per-site results.
  const results = sites.map((site) => {
    const log = arrivals[site.index] ?? [];
    const measure = measureArrivals(log, site.limitRps);
    const run = runs.get(site.runId);
    const utilisation =
      measure.achievedRps === null ? null : round3(measure.achievedRps / site.limitRps);
    return {
      site: site.name,
      limitRps: site.limitRps,
      maxObservedRps: measure.maxInWindow,
      utilisation,
      requests: measure.requests,
      intervalMs: round2(1000 / site.limitRps),
      minGapMs: measure.minGapMs === null ? null : round2(measure.minGapMs),
      /** 10th, 50th, 90th percentile of the gaps between consecutive posting requests. */
      gapP10P50P90Ms: measure.gapPercentilesMs?.map(round2) ?? null,
      /** Smallest span of limitRps + 1 consecutive posting requests: ≥ 1000 is within the limit. */
      tightestWindowMs: measure.tightestWindowMs === null ? null : round2(measure.tightestWindowMs),
      busySeconds: round2(measure.busyMs / 1000),
      /** From the scrape enqueue to the site's first posting request. */
      firstRequestSeconds: log.length > 0 ? round2((Math.min(...log) - started) / 1000) : null,
      runStatus: run?.status ?? null,
      readyCount: run?.readyCount ?? null,
      errorsCount: run?.errorsCount ?? null,
    };
  });

  for (const result of results) {
    progress(
      `${result.site}: limit ${result.limitRps} rps, max ${result.maxObservedRps} in 1 s, ` +
        `utilisation ${result.utilisation ?? '–'}, ${result.requests} requests over ${result.busySeconds} s, ` +
        `gaps min ${result.minGapMs ?? '–'} / p10-p50-p90 ${result.gapP10P50P90Ms?.join('-') ?? '–'} ms (interval ${result.intervalMs} ms), ` +
        `tightest ${result.limitRps + 1} requests ${result.tightestWindowMs ?? '–'} ms, run ${result.runStatus}`,
    );
    if (result.maxObservedRps > result.limitRps)
      failures.push(
        `target missed: ${result.site} had ${result.maxObservedRps} requests in 1 s > limit ${result.limitRps} (min gap ${result.minGapMs} ms vs ${result.intervalMs} ms)`,
      );
    if (result.utilisation === null || result.utilisation < TARGET_UTILISATION)
      failures.push(
        `target missed: ${result.site} utilisation ${result.utilisation ?? 'n/a'} < ${TARGET_UTILISATION}`,
      );
    if (
      !timedOut &&
      (result.runStatus !== 'succeeded' || result.readyCount !== settings.postingsPerSite)
    )
      failures.push(
        `${result.site}: run ended ${result.runStatus} with ${result.readyCount}/${settings.postingsPerSite} ready (${result.errorsCount} errors)`,
      );
    if (result.requests !== settings.postingsPerSite)
      progress(
        `WARNING ${result.site}: ${result.requests} posting requests for ${settings.postingsPerSite} postings`,
      );
  }

  const warnings = workerWarnings(workers);
  for (const line of warnings.slice(0, 5))
    progress(`worker: ${JSON.stringify(line).slice(0, 500)}`);

  const utilisations = results.map((result) => result.utilisation ?? 0);
  const output = {
    sites: results,
    allWithinLimit: results.every((result) => result.maxObservedRps <= result.limitRps),
    minUtilisation: utilisations.length > 0 ? Math.min(...utilisations) : null,
    seconds: round2(seconds),
    postings: settings.sites * settings.postingsPerSite,
    workers: settings.workers,
    crawlConcurrency: settings.crawlConcurrency,
    maxConcurrency: settings.maxConcurrency,
    workerWarnings: warnings.length,
    /** All posting requests ÷ (last − first posting request of any site). */
    aggregateRps: aggregateRps(arrivals),
    fixtureNice,
    fixtureEventLoopDelayMs: { p99: round2(loopDelayMs.p99), max: round2(loopDelayMs.max) },
  };
  return report(progress, failures, output);
}

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, bench);
