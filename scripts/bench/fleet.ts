/**
 * `pnpm bench fleet`: the pipeline bench's site (scrape → crawl → extract into Postgres) run by
 * 1, 2 and 4 worker processes, to show what adding replicas costs per page.
 *
 * For each worker count it reports pages per second, CPU milliseconds per page of the workers
 * (all of them together), Postgres and Redis, and the peak number of Postgres connections the
 * bench database had open. On 2 cores more workers do not make the run faster (Postgres and
 * Redis share the same cores); what must hold is that the work per page does not grow with the
 * fleet: each replica's fixed costs (polling, stall checks, heartbeats, smaller write batches)
 * stay small beside the pages.
 *
 * What a fresh process costs is reported apart, as `warmUpWorkerCpuMsPerPage`: V8 compiles a
 * worker's hot code during its first few thousand pages, on threads of its own, and runs the rest
 * unoptimised meanwhile. A profile of the timed runs with 500 warm-up pages per worker showed
 * four workers spending 2.7 times one worker's CPU per page compiling, and 2.4 times its time in
 * V8's built-ins (property lookups of code not yet optimised); every replica pays that once when it starts, not per page of a
 * fleet that runs for hours. So each worker first crawls BENCH_WARM_UP_PAGES (3,000) pages, in
 * runs of at most the site's size, and the timed run measures workers in their steady state.
 *
 * Rounds are interleaved (1, 2, 4 workers, then again), BENCH_ROUNDS (3) times; each count
 * starts its workers on a fresh database and Redis prefix, warms them up, runs one timed run of
 * 4,000 postings (twice the pipeline bench's) and stops them. A count's growth is its CPU per page
 * over the same round's 1-worker figure; the verdict takes the median round, since this machine's
 * speed drifts by a third within minutes. Exit code 1 when a run does not succeed or the median
 * growth at any count is more than 15 %.
 *
 * Environment: BENCH_FLEET_WORKERS ("1,2,4"), BENCH_ROUNDS (3), BENCH_POSTINGS (4000),
 * BENCH_PAGE_BYTES (30000), BENCH_WARM_UP_PAGES (3000, per worker), BENCH_TIMEOUT_MS (300000).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DbHandle } from '@gleaner/db';
import { BenchUsageError, type BenchModule } from './bench.js';
import {
  noiseSeconds,
  runPipelineRound,
  runSettingsFrom,
  startFixtureSite,
  startPipeline,
  stopPipeline,
  type PipelineRound,
  type Settings,
} from './pipeline.js';
import { cpuMsPer, median, sumCpuSeconds } from './rounds.js';
import {
  benchRun,
  integerFrom,
  progressFor,
  report,
  round2,
  Teardown,
  waitUntilQuiet,
  wantsHelp,
} from './support.js';

const USAGE = `usage: pnpm bench fleet
environment: BENCH_FLEET_WORKERS ("1,2,4"), BENCH_ROUNDS (3), BENCH_POSTINGS (4000),
  BENCH_PAGE_BYTES (30000), BENCH_WARM_UP_PAGES (3000, per worker), BENCH_TIMEOUT_MS (300000)
`;

/** The workers' CPU per page with N workers may be at most this much above one worker's. */
const TARGET_CPU_GROWTH = 0.15;
const CONNECTION_SAMPLE_MS = 100;

const progress = progressFor('fleet');

interface FleetSettings {
  counts: number[];
  rounds: number;
  base: Settings;
}

function readSettings(args: string[]): FleetSettings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  const raw = process.env.BENCH_FLEET_WORKERS ?? '1,2,4';
  const counts = raw.split(',').map((part) => Number(part.trim()));
  if (counts.length === 0 || counts.some((n) => !Number.isInteger(n) || n < 1 || n > 16))
    throw new BenchUsageError(
      `BENCH_FLEET_WORKERS must list worker counts from 1 to 16, got "${raw}"`,
      USAGE,
    );
  if (counts[0] !== 1) counts.unshift(1);
  return {
    counts: [...new Set(counts)],
    rounds: integerFrom('BENCH_ROUNDS', 3, { min: 1, max: 25 }, USAGE),
    base: {
      ...runSettingsFrom(USAGE, 4000),
      workers: 1,
      rounds: 1,
      skipCrawlee: true,
    },
  };
}

interface CountRound {
  workers: number;
  round: number;
  timed: PipelineRound;
  peakConnections: number;
  warmUpCpuSeconds: number;
}

/** Runs `work` while sampling how many connections the database has open: its result and the peak. */
async function withConnectionPeak<T>(
  pool: Pick<DbHandle['pool'], 'query'>,
  databaseName: string,
  work: () => Promise<T>,
): Promise<{ result: T; peak: number }> {
  let peak = 0;
  let running = true;
  const sampling = (async () => {
    while (running) {
      const { rows } = await pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1',
        [databaseName],
      );
      peak = Math.max(peak, rows[0]?.n ?? 0);
      await sleep(CONNECTION_SAMPLE_MS);
    }
  })();
  try {
    const result = await work();
    return { result, peak };
  } finally {
    running = false;
    await sampling;
  }
}

async function runCount(
  settings: FleetSettings,
  workers: number,
  round: number,
  site: Awaited<ReturnType<typeof startFixtureSite>>,
): Promise<CountRound> {
  // Each count's stack is its own: its teardown drops its database and keys when it is done.
  const teardown = new Teardown(progress);
  try {
    // Every worker warms up on as many pages as one worker alone does: a worker whose code is
    // less compiled spends more CPU per page, which is no cost of the fleet.
    const pipelineSettings = {
      ...settings.base,
      workers,
      warmUpPages: settings.base.warmUpPages * workers,
    };
    const pipeline = await startPipeline(pipelineSettings, site, teardown);
    const { handle, databaseName } = pipeline.stack;
    // The warm-up's runs are still being closed and written back when it ends: the timed run
    // starts once the machine is quiet, or its CPU per page carries the warm-up's tail.
    const quiet = await waitUntilQuiet();
    progress(
      `${workers} worker(s), round ${round}: machine quiet after ${(quiet.waitedMs / 1000).toFixed(1)} s`,
    );
    const { result: timed, peak: peakConnections } = await withConnectionPeak(
      handle.pool,
      databaseName,
      () => runPipelineRound(pipelineSettings, site, pipeline, round),
    );
    const stopped = await stopPipeline(pipeline);
    const failed = stopped.exitCodes.filter((code) => code !== 0);
    if (failed.length > 0) throw new Error(`worker(s) exited with ${failed.join(', ')} on SIGTERM`);
    return { workers, round, timed, peakConnections, warmUpCpuSeconds: pipeline.warmUpCpuSeconds };
  } finally {
    await teardown.run();
  }
}

async function bench(settings: FleetSettings, teardown: Teardown): Promise<number> {
  const site = await startFixtureSite(settings.base);
  teardown.add('stop fixture site', () => site.stop());
  progress(
    `fixture site ${site.url}: ${settings.base.postings} postings; worker counts ${settings.counts.join(', ')}`,
  );

  const failures: string[] = [];
  const results: CountRound[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    for (const workers of settings.counts) {
      try {
        const result = await runCount(settings, workers, round, site);
        const { run, seconds, cpuSeconds } = result.timed;
        if (run.status !== 'succeeded' || run.readyCount !== settings.base.postings)
          failures.push(
            `round ${round}, ${workers} worker(s): run ended ${run.status} with ${run.readyCount}/${settings.base.postings} ready`,
          );
        const noise = noiseSeconds(cpuSeconds);
        progress(
          `round ${round}, ${workers} worker(s): ${(settings.base.postings / seconds).toFixed(1)} pages/s, ` +
            `worker CPU ${cpuMsPer(cpuSeconds, settings.base.postings, ['worker'])} ms/page, ` +
            `${result.peakConnections} Postgres connections at peak, ` +
            `warm-up ${cpuMsPer({ worker: result.warmUpCpuSeconds }, settings.base.warmUpPages * workers)} ms/page` +
            (noise > 1 ? ` (WARNING: ${noise} CPU s went elsewhere: machine not idle)` : ''),
        );
        results.push(result);
      } catch (error) {
        failures.push(
          `round ${round}, ${workers} worker(s): ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  }

  const oneByRound = new Map(
    results.filter((result) => result.workers === 1).map((result) => [result.round, result]),
  );
  const workerCpuMsPerPage = (result: CountRound): number =>
    cpuMsPer(result.timed.cpuSeconds, settings.base.postings, ['worker']);
  const byCount = settings.counts.map((workers) => {
    const rounds = results.filter((result) => result.workers === workers);
    const cpu = sumCpuSeconds(rounds.map((result) => result.timed.cpuSeconds));
    const pages = settings.base.postings * rounds.length;
    // Each round's CPU per page against the same round's one worker, so drift between rounds
    // does not count as the fleet's.
    const growths = rounds.flatMap((result) => {
      const one = oneByRound.get(result.round);
      return one === undefined ? [] : [workerCpuMsPerPage(result) / workerCpuMsPerPage(one) - 1];
    });
    const warmUpPages = settings.base.warmUpPages * workers * rounds.length;
    return {
      workers,
      rounds: rounds.length,
      pagesPerSec:
        rounds.length === 0
          ? null
          : round2(median(rounds.map((result) => settings.base.postings / result.timed.seconds))),
      cpuMsPerPage: {
        workers: cpuMsPer(cpu, pages, ['worker']),
        postgres: cpuMsPer(cpu, pages, ['postgres']),
        redis: cpuMsPer(cpu, pages, ['redis-server']),
      },
      workerCpuGrowth: growths.length === 0 ? null : round2(median(growths)),
      workerCpuGrowthRounds: growths.map(round2),
      warmUpWorkerCpuMsPerPage: cpuMsPer(
        { worker: rounds.reduce((sum, result) => sum + result.warmUpCpuSeconds, 0) },
        warmUpPages,
      ),
      peakPostgresConnections: Math.max(0, ...rounds.map((result) => result.peakConnections)),
    };
  });
  for (const entry of byCount) {
    if (entry.workers === 1 || entry.workerCpuGrowth === null) continue;
    if (entry.workerCpuGrowth > TARGET_CPU_GROWTH)
      failures.push(
        `target missed: ${entry.workers} workers spend ${(entry.workerCpuGrowth * 100).toFixed(0)} % more ` +
          `worker CPU per page than 1 worker in the median round (rounds: ${entry.workerCpuGrowthRounds
            .map((growth) => `${(growth * 100).toFixed(0)} %`)
            .join(', ')}; at most ${TARGET_CPU_GROWTH * 100} %)`,
      );
  }
  return report(progress, failures, {
    counts: byCount,
    postings: settings.base.postings,
    warmUpPagesPerWorker: settings.base.warmUpPages,
    rounds: settings.rounds,
    targets: { workerCpuGrowth: TARGET_CPU_GROWTH },
  });
}

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, bench);
