/**
 * `pnpm bench isolation`: does a site throttled to 1 request/s with a long backlog slow down
 * another, unthrottled site crawled by the same workers? Per-site politeness must not turn into
 * head-of-line blocking: a throttled site's crawl jobs wait parked in delayed (or, for the last
 * moments before their slot, in-job for at most MAX_IN_JOB_WAIT_MS), never in a crawl slot for
 * long, so the other site's jobs keep every slot they need.
 *
 * Fixture sites (one helper process, `startFixtureSites` in support.ts): a warm-up site
 * (BENCH_WARM_UP_POSTINGS, 50), two unthrottled sites of BENCH_FAST_POSTINGS (200) postings with
 * different content, and the throttled site of BENCH_SLOW_POSTINGS (500), all of
 * BENCH_PAGE_BYTES (8000). Two phases, each on a fresh database, Redis prefix and
 * BENCH_WORKERS (1) worker processes with the worker's default crawl concurrency:
 *
 *   alone     the workers crawl the warm-up site (JIT, pools, robots cache), then the first
 *             unthrottled site is timed from its scrape enqueue until its run is terminal;
 *   together  the workers crawl the warm-up site, then the throttled site
 *             (`rate_limit_rps` BENCH_SLOW_RPS = 1) is scraped and the bench waits until all its
 *             crawl jobs are in the queue and none is still waiting for a first pickup (its
 *             backlog is parked in delayed); then the second unthrottled site is timed the same
 *             way while the throttled site keeps being crawled.
 *
 * The unthrottled sites have no rate limit, no pauses and `max_concurrency` equal to all crawl
 * slots, so their own gate never refuses them: what is measured is the effect of the other site.
 * Fresh workers per phase, each warmed the same way, so that neither phase runs on warmer code.
 *
 * Last stdout line:
 *   {"aloneSeconds","togetherSeconds","ratio","pass",…}
 * `ratio` = togetherSeconds / aloneSeconds; `pass` when 0.8 ≤ ratio ≤ 1.2 (the same time within
 * ±20 %), both timed runs succeeded with every posting ready, and the throttled site stayed
 * within its limit (`throttledMaxObservedRps`: most of its posting requests in any window
 * [t, t + 1 s) while the second site ran). Exit 1 when not, 2 on bad settings.
 *
 * Environment: BENCH_FAST_POSTINGS (200), BENCH_SLOW_POSTINGS (500), BENCH_SLOW_RPS (1, whole
 * number), BENCH_WARM_UP_POSTINGS (50), BENCH_WORKERS (1), BENCH_CRAWL_CONCURRENCY (the worker's
 * default), BENCH_PAGE_BYTES (8000), BENCH_TIMEOUT_MS (120000 per timed run).
 * TEST_DATABASE_URL / TEST_REDIS_URL as for the tests.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { workerFragment } from '@gleaner/config';
import { insertSite, type RunRow } from '@gleaner/db';
import { startScrapeRun } from '@gleaner/queue';
import type { ServiceProcess } from '@gleaner/testing';
import type { BenchModule } from './bench.js';
import {
  assertWorkersAlive,
  concurrencyFrom,
  createBenchStack,
  integerFrom,
  maxInWindow,
  progressFor,
  round2,
  benchRun,
  report,
  startFixtureSites,
  startWorkerProcesses,
  Teardown,
  waitForRuns,
  wantsHelp,
  workerWarnings,
  type BenchStack,
  type FixtureSites,
} from './support.js';

const USAGE = `usage: pnpm bench isolation
environment: BENCH_FAST_POSTINGS (200), BENCH_SLOW_POSTINGS (500), BENCH_SLOW_RPS (1),
  BENCH_WARM_UP_POSTINGS (500), BENCH_ROUNDS (10), BENCH_WORKERS (1),
  BENCH_CRAWL_CONCURRENCY (worker default),
  BENCH_PAGE_BYTES (8000), BENCH_TIMEOUT_MS (120000)
`;

/** "Finishes in the time it takes alone (± 20 %)". */
const TOLERANCE = 0.2;
const POLL_MS = 50;
const BACKLOG_TIMEOUT_MS = 30_000;

/** Positions in the fixture process's site list: warm-up, throttled, then one per round. */
const WARM_UP = 0;
const SLOW = 1;
const fastSite = (round: number): number => 2 + round;

interface Settings {
  fastPostings: number;
  slowPostings: number;
  slowRps: number;
  warmUpPostings: number;
  rounds: number;
  workers: number;
  crawlConcurrency: number;
  pageBytes: number;
  timeoutMs: number;
}

const progress = progressFor('isolation');

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  return {
    fastPostings: integerFrom('BENCH_FAST_POSTINGS', 200, { min: 2, max: 100_000 }, USAGE),
    slowPostings: integerFrom('BENCH_SLOW_POSTINGS', 500, { min: 2, max: 100_000 }, USAGE),
    slowRps: integerFrom('BENCH_SLOW_RPS', 1, { min: 1, max: 100 }, USAGE),
    warmUpPostings: integerFrom('BENCH_WARM_UP_POSTINGS', 500, { min: 1, max: 10_000 }, USAGE),
    rounds: integerFrom('BENCH_ROUNDS', 10, { min: 1, max: 100 }, USAGE),
    workers: integerFrom('BENCH_WORKERS', 1, { min: 1, max: 32 }, USAGE),
    crawlConcurrency: concurrencyFrom(
      'BENCH_CRAWL_CONCURRENCY',
      workerFragment.WORKER_CONCURRENCY_CRAWL,
      USAGE,
    ),
    pageBytes: integerFrom('BENCH_PAGE_BYTES', 8000, { min: 0, max: 1_000_000 }, USAGE),
    timeoutMs: integerFrom('BENCH_TIMEOUT_MS', 120_000, { min: 1000, max: 3_600_000 }, USAGE),
  };
}

interface Phase {
  stack: BenchStack;
  workers: ServiceProcess[];
}

/** A fresh database, Redis prefix and workers, warmed by crawling the warm-up site once. */
async function startPhase(
  name: string,
  settings: Settings,
  fixtures: FixtureSites,
  teardown: Teardown,
): Promise<Phase> {
  const stack = await createBenchStack(`isolation_${name}`, teardown);
  const workers = await startWorkerProcesses(
    settings.workers,
    { ...stack.workerEnv, WORKER_CONCURRENCY_CRAWL: String(settings.crawlConcurrency) },
    stack,
    teardown,
  );
  const warmUp = await crawl(
    { stack, workers },
    fixtures,
    WARM_UP,
    { name: `warm-up-${name}`, maxConcurrency: settings.workers * settings.crawlConcurrency },
    settings.timeoutMs,
  );
  if (warmUp.run?.status !== 'succeeded')
    throw new Error(`${name}: warm-up run ended ${warmUp.run?.status ?? 'missing'}`);
  progress(`${name}: ${settings.workers} worker(s) ready and warmed up`);
  return { stack, workers };
}

interface SiteOptions {
  name: string;
  rateLimitRps?: number;
  maxConcurrency: number;
}

async function registerSite(
  phase: Phase,
  fixtures: FixtureSites,
  index: number,
  options: SiteOptions,
): Promise<string> {
  const fixture = fixtures.sites[index];
  if (!fixture) throw new Error(`no fixture site ${index}`);
  const row = await insertSite(phase.stack.handle.db, {
    siteName: options.name,
    kind: 'career-site',
    config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
    rateLimitRps: options.rateLimitRps ?? null,
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    maxConcurrency: options.maxConcurrency,
  });
  return row.id;
}

/** Starts a run of the site: creates it and enqueues its scrape. Returns the run's id. */
async function startRun(phase: Phase, siteId: string): Promise<string> {
  const { handle, queues } = phase.stack;
  const run = await startScrapeRun({ db: handle.db, queues }, { siteId, trigger: 'manual' });
  return run.id;
}

interface TimedRun {
  /** From the scrape enqueue to the run's `finished_at` (both this machine's clock). */
  seconds: number;
  run: RunRow | undefined;
  timedOut: boolean;
  /** Epoch ms of the enqueue and of the run's end. */
  window: [number, number];
}

/** Registers a site, enqueues its scrape and waits until its run is terminal. */
async function crawl(
  phase: Phase,
  fixtures: FixtureSites,
  index: number,
  options: SiteOptions,
  timeoutMs: number,
): Promise<TimedRun> {
  const siteId = await registerSite(phase, fixtures, index, options);
  const startedAt = performance.now();
  const enqueuedAt = Date.now();
  const runId = await startRun(phase, siteId);
  const outcome = await waitForRuns(phase.stack.handle, [runId], {
    workers: phase.workers,
    startedAt,
    timeoutMs,
    pollMs: POLL_MS,
    onTick: (seconds) => progress(`  … ${options.name}: ${seconds.toFixed(0)} s`),
  });
  const run = outcome.runs.get(runId);
  // The run row's own end time: polling would add up to a poll interval to runs of a second.
  const endedAt = run?.finishedAt?.getTime() ?? Date.now();
  return {
    seconds: (endedAt - enqueuedAt) / 1000,
    run,
    timedOut: outcome.timedOut,
    window: [enqueuedAt, endedAt],
  };
}

/** Crawls one unthrottled site per round, one after the other. */
async function crawlRounds(
  phase: Phase,
  fixtures: FixtureSites,
  settings: Settings,
  label: string,
): Promise<TimedRun[]> {
  const timed: TimedRun[] = [];
  for (let round = 0; round < settings.rounds; round++) {
    const result = await crawl(
      phase,
      fixtures,
      fastSite(round),
      {
        name: `unthrottled-${label}-${round + 1}`,
        maxConcurrency: settings.workers * settings.crawlConcurrency,
      },
      settings.timeoutMs,
    );
    progress(`${label}: round ${round + 1}: ${describeRun(result)}`);
    timed.push(result);
  }
  return timed;
}

interface Backlog {
  /** Every throttled crawl job was picked up once and none waits for a first pickup. */
  parked: boolean;
  delayed: number;
  active: number;
  waiting: number;
}

/**
 * Waits until the throttled site's crawl jobs are all queued and none waits for its first
 * pickup: each has asked the gate once and is parked in delayed until its slot (or is in its
 * last moments before it). When that does not happen within BACKLOG_TIMEOUT_MS, the throttled
 * jobs are holding the crawl slots: isolation has failed before the timed rounds begin.
 */
async function waitForBacklog(
  phase: Phase,
  fixtures: FixtureSites,
  settings: Settings,
): Promise<Backlog> {
  const deadline = performance.now() + BACKLOG_TIMEOUT_MS;
  for (;;) {
    assertWorkersAlive(phase.workers, ' while the backlog built up');
    const counts = await phase.stack.queues.crawl.getJobCounts(
      'wait',
      'prioritized',
      'active',
      'delayed',
    );
    const fetched = (await fixtures.counts())[SLOW] ?? 0;
    const backlog = {
      delayed: counts.delayed ?? 0,
      active: counts.active ?? 0,
      waiting: (counts.wait ?? 0) + (counts.prioritized ?? 0),
    };
    const parked =
      fetched > 0 &&
      backlog.waiting === 0 &&
      backlog.delayed + backlog.active + fetched >= settings.slowPostings;
    if (parked || performance.now() > deadline) return { parked, ...backlog };
    await sleep(100);
  }
}

function runOk(timed: TimedRun, postings: number): boolean {
  return !timed.timedOut && timed.run?.status === 'succeeded' && timed.run.readyCount === postings;
}

function describeRun(timed: TimedRun): string {
  return `${timed.run?.status ?? 'missing'}, ${timed.run?.readyCount ?? 0} ready / ${timed.run?.errorsCount ?? 0} errors in ${timed.seconds.toFixed(2)} s`;
}

async function bench(settings: Settings, teardown: Teardown): Promise<number> {
  const failures: string[] = [];
  const warnings: Record<string, unknown>[] = [];
  const spec = (postings: number, seed: number) => ({
    postings,
    pageBytes: settings.pageBytes,
    seed,
  });
  const fixtures = await startFixtureSites(
    [
      spec(settings.warmUpPostings, 1),
      spec(settings.slowPostings, 2),
      ...Array.from({ length: settings.rounds }, (_, round) =>
        spec(settings.fastPostings, 3 + round),
      ),
    ],
    teardown,
    progress,
  );
  progress(
    `fixture sites in process ${fixtures.pid} (nice ${fixtures.nice ?? 'unchanged'}); ` +
      `${settings.workers} worker(s) × ${settings.crawlConcurrency} crawl slots; ${settings.rounds} rounds`,
  );

  // Phase 1: the unthrottled sites alone. Its resources go before phase 2 starts.
  let alone: TimedRun[];
  {
    const phaseTeardown = new Teardown(progress);
    teardown.add('alone phase', () => phaseTeardown.run());
    try {
      const phase = await startPhase('alone', settings, fixtures, phaseTeardown);
      alone = await crawlRounds(phase, fixtures, settings, 'alone');
      warnings.push(...workerWarnings(phase.workers));
    } finally {
      await phaseTeardown.run();
    }
  }

  // Phase 2: the same sites while the throttled site works through its backlog.
  let together: TimedRun[] = [];
  let backlog: Backlog;
  let throttledArrivals: number[] = [];
  {
    const phaseTeardown = new Teardown(progress);
    teardown.add('together phase', () => phaseTeardown.run());
    try {
      const phase = await startPhase('together', settings, fixtures, phaseTeardown);
      const slow = await registerSite(phase, fixtures, SLOW, {
        name: 'throttled',
        rateLimitRps: settings.slowRps,
        maxConcurrency: 4,
      });
      await startRun(phase, slow);
      backlog = await waitForBacklog(phase, fixtures, settings);
      if (backlog.parked) {
        progress(
          `together: throttled site's backlog parked (${backlog.delayed} crawl jobs delayed)`,
        );
        together = await crawlRounds(phase, fixtures, settings, 'together');
        const { arrivals } = await fixtures.dump();
        const from = together[0]?.window[0] ?? 0;
        const to = together.at(-1)?.window[1] ?? 0;
        throttledArrivals = (arrivals[SLOW] ?? [])
          .filter((at) => at >= from && at <= to)
          .sort((a, b) => a - b);
      } else {
        failures.push(
          `the throttled site's jobs were not parked after ${BACKLOG_TIMEOUT_MS / 1000} s: ` +
            `${backlog.active} active, ${backlog.waiting} waiting, ${backlog.delayed} delayed; no timed rounds ran`,
        );
      }
      warnings.push(...workerWarnings(phase.workers));
    } finally {
      await phaseTeardown.run();
    }
  }

  for (const line of warnings.slice(0, 5))
    progress(`worker: ${JSON.stringify(line).slice(0, 500)}`);
  const total = (runs: readonly TimedRun[]): number =>
    runs.reduce((sum, timed) => sum + timed.seconds, 0);
  const aloneSeconds = total(alone);
  const togetherSeconds = together.length > 0 ? total(together) : null;
  const ratio = togetherSeconds === null ? null : togetherSeconds / aloneSeconds;
  const throttledMax = maxInWindow(throttledArrivals, 1000);
  progress(
    `unthrottled sites: ${aloneSeconds.toFixed(2)} s alone, ${togetherSeconds?.toFixed(2) ?? '–'} s next to the throttled site (ratio ${ratio?.toFixed(2) ?? '–'})`,
  );
  progress(
    `throttled site: ${throttledArrivals.length} posting requests meanwhile, at most ${throttledMax} in 1 s (limit ${settings.slowRps})`,
  );
  for (const [label, runs] of [
    ['alone', alone],
    ['together', together],
  ] as const) {
    for (const [round, timed] of runs.entries())
      if (!runOk(timed, settings.fastPostings))
        failures.push(`${label} round ${round + 1}: ${describeRun(timed)}`);
  }
  if (
    ratio !== null &&
    togetherSeconds !== null &&
    (ratio > 1 + TOLERANCE || ratio < 1 - TOLERANCE)
  )
    failures.push(
      `target missed: ${togetherSeconds.toFixed(2)} s together vs ${aloneSeconds.toFixed(2)} s alone = ${ratio.toFixed(2)} (allowed ${1 - TOLERANCE}–${1 + TOLERANCE})`,
    );
  if (throttledMax > settings.slowRps)
    failures.push(`throttled site had ${throttledMax} requests in 1 s > limit ${settings.slowRps}`);

  const output = {
    aloneSeconds: round2(aloneSeconds),
    togetherSeconds: togetherSeconds === null ? null : round2(togetherSeconds),
    ratio: ratio === null ? null : round2(ratio),
    pass: failures.length === 0,
    tolerance: TOLERANCE,
    rounds: settings.rounds,
    aloneRoundSeconds: alone.map((timed) => round2(timed.seconds)),
    togetherRoundSeconds: together.map((timed) => round2(timed.seconds)),
    fastPostings: settings.fastPostings,
    slowPostings: settings.slowPostings,
    slowRps: settings.slowRps,
    /** Throttled crawl jobs parked in delayed when the first timed round was enqueued. */
    throttledBacklog: backlog.delayed,
    throttledBacklogParked: backlog.parked,
    throttledRequestsDuringRounds: throttledArrivals.length,
    throttledMaxObservedRps: throttledMax,
    workers: settings.workers,
    crawlConcurrency: settings.crawlConcurrency,
    workerWarnings: warnings.length,
  };
  return report(progress, failures, output);
}

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, bench);
