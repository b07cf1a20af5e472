/**
 * `pnpm bench pipeline`: pages per second through the real pipeline, against two references.
 *
 *   pipeline  one worker process (BENCH_WORKERS to run more), scrape → crawl → extract with
 *             Postgres + Redis, scraping the fixture career site, timed from the scrape enqueue
 *             until the run row is terminal; the site's gate lets the workers fetch as many
 *             pages at once as the baseline loop does. On 2 cores a second worker is slower:
 *             it halves every worker's write batches while Postgres and Redis keep one core;
 *   baseline  a bare loop in this process: undici `request` + `cheerio/slim` + JSON.parse of
 *             every JSON-LD block, same URL list and same concurrency as the crawl queue;
 *   crawlee   `CheerioCrawler` with its defaults reading the same JSON-LD.
 *
 * The fixture site is its own process. Everything shares one machine (2 cores in CI), so the
 * pipeline's Postgres and Redis compete with the worker for CPU: that cost is part of what is
 * measured.
 *
 * The three run in turn, BENCH_ROUNDS (3) times: baseline, pipeline, Crawlee. The machine's speed
 * drifts by a third within minutes, so one draw of each says little; interleaved, a round's
 * three share the same moment, and the verdict is the median round's. The baseline, Crawlee and
 * the workers are warmed up once, untimed; each round registers the site anew (its postings are
 * new rows) and empties `page_bodies`, so every round stores every page. The baseline opens each
 * round, on a machine the last round's Crawlee run left idle, so that background work of the
 * pipeline's (autovacuum, checkpoints) does not slow it down and flatter the ratio.
 *
 * Last stdout line: {"pagesPerSec","baselinePagesPerSec","ratio","crawleePagesPerSec",
 * "crawleeMultiple","peakRssMB","rounds":[…],"cpuMsPerPage":{…},…}: the first four are the
 * round of median ratio's, `crawleeMultiple` (pipeline ÷ Crawlee) the median of the rounds' own
 * (each round also gives `baselineCrawleeMultiple`, the bare loop's), `cpuMsPerPage` each
 * process kind's CPU over every round ÷ its pages (Crawlee's too), `coresBusy` each side's CPU
 * ÷ its wall time, so that pages/s = coresBusy ÷ CPU a page. Exit code 1 when a run did not
 * succeed or a target is missed: median ratio ≥ 0.8, median pipeline ÷ Crawlee ≥ 3, worker peak
 * RSS ≤ 250 MB.
 *
 * Environment: BENCH_WORKERS (1), BENCH_CRAWL_CONCURRENCY, BENCH_EXTRACT_CONCURRENCY,
 * BENCH_EXTRACT_THREADS (default: the worker's own defaults from @gleaner/config),
 * BENCH_WARM_UP_PAGES (3000), BENCH_POSTINGS (2000), BENCH_PAGE_BYTES (30000),
 * BENCH_ROUNDS (3), BENCH_TIMEOUT_MS (300000), BENCH_WORKER_NODE_OPTIONS (extra NODE_OPTIONS for the worker),
 * BENCH_WORKER_CPU_PROFILE=<dir> (writes the worker's .cpuprofile there, see cpu-profile.mjs),
 * BENCH_SKIP_CRAWLEE=1. TEST_DATABASE_URL / TEST_REDIS_URL as for the tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { load } from 'cheerio/slim';
import { Agent, request } from 'undici';
import { workerFragment } from '@gleaner/config';
import { getRun, insertSite, type DbHandle, type RunRow } from '@gleaner/db';
import { startScrapeRun, type Queues } from '@gleaner/queue';
import { freePort, repoRoot, type ServiceProcess } from '@gleaner/testing';
import { type BenchModule } from './bench.js';
import { cpuMsPer, cpuSecondsOf, medianBy, otherCpuSeconds, sumCpuSeconds } from './rounds.js';
import {
  concurrencyFrom,
  cpuSecondsBetween,
  cpuSnapshot,
  createBenchStack,
  integerFrom,
  progressFor,
  round2,
  stopChild,
  benchRun,
  report,
  sampleRss,
  TERMINAL_RUN_STATUSES,
  wantsHelp,
  startWorkerProcesses,
  assertWorkersAlive,
  waitUntilQuiet,
  workerWarnings,
  waitForRuns,
  Teardown,
  type BenchStack,
} from './support.js';

const USAGE = `usage: pnpm bench pipeline
environment: BENCH_WORKERS (1), BENCH_CRAWL_CONCURRENCY, BENCH_EXTRACT_CONCURRENCY, BENCH_EXTRACT_THREADS (worker defaults),
  BENCH_WARM_UP_PAGES (3000), BENCH_POSTINGS (2000), BENCH_ROUNDS (3),
  BENCH_PAGE_BYTES (30000), BENCH_TIMEOUT_MS (300000), BENCH_WORKER_NODE_OPTIONS,
  BENCH_WORKER_CPU_PROFILE=<dir>, BENCH_SKIP_CRAWLEE=1
`;

const TARGET_RATIO = 0.8;
/** The pipeline, queue and database included, moves at least this many times Crawlee's pages. */
const TARGET_CRAWLEE_MULTIPLE = 3;
const TARGET_PEAK_RSS_MB = 250;
/** CPU seconds of unrelated processes in a timed window above which the numbers are suspect. */
const NOISE_WARNING_CPU_SECONDS = 1;
/**
 * How often the run row is read while the pipeline runs. The measured time ends at the run's
 * `finished_at`, not at the read that sees it; reads cost CPU the pipeline could use (every
 * 20 ms: 0.15 CPU-s per run).
 */
const RUN_POLL_MS = 100;
/** Process kinds that belong to what a window measures; the rest is someone else's work. */
export const MEASURED_PROCESSES = new Set([
  'bench',
  'fixture-site',
  'worker',
  'postgres',
  'redis-server',
]);

export interface Settings {
  workers: number;
  postings: number;
  pageBytes: number;
  crawlConcurrency: number;
  extractConcurrency: number;
  extractThreads: number;
  timeoutMs: number;
  skipCrawlee: boolean;
  warmUpPages: number;
  rounds: number;
}

const progress = progressFor('pipeline');

// ---------------------------------------------------------------------------------------------
// Settings

/**
 * Pages each worker crawls before it is timed (and the baseline loop reads before it is): a
 * worker that runs for hours has its hot code compiled. A profile of the timed run after 500
 * warm-up pages had the worker's compiler threads at about a fifth of its CPU, still optimising
 * what the run was measuring; after 3,000, at under a tenth. `pnpm bench fleet` warms its
 * workers the same way (`runSettingsFrom`).
 */
const STEADY_STATE_WARM_UP_PAGES = 3000;

/**
 * What a run of the fixture site through the workers takes from the environment, shared with
 * `pnpm bench fleet`.
 */
export function runSettingsFrom(
  usage: string,
  defaultPostings: number,
): Omit<Settings, 'workers' | 'rounds' | 'skipCrawlee'> {
  return {
    postings: integerFrom('BENCH_POSTINGS', defaultPostings, { min: 1 }, usage),
    pageBytes: integerFrom('BENCH_PAGE_BYTES', 30_000, { min: 0 }, usage),
    crawlConcurrency: concurrencyFrom(
      'BENCH_CRAWL_CONCURRENCY',
      workerFragment.WORKER_CONCURRENCY_CRAWL,
      usage,
    ),
    extractConcurrency: concurrencyFrom(
      'BENCH_EXTRACT_CONCURRENCY',
      workerFragment.WORKER_CONCURRENCY_EXTRACT,
      usage,
    ),
    extractThreads: concurrencyFrom(
      'BENCH_EXTRACT_THREADS',
      workerFragment.WORKER_EXTRACT_THREADS,
      usage,
    ),
    timeoutMs: integerFrom('BENCH_TIMEOUT_MS', 300_000, { min: 1000 }, usage),
    warmUpPages: integerFrom('BENCH_WARM_UP_PAGES', STEADY_STATE_WARM_UP_PAGES, { min: 0 }, usage),
  };
}

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  return {
    ...runSettingsFrom(USAGE, 2000),
    workers: integerFrom('BENCH_WORKERS', 1, { min: 1 }, USAGE),
    rounds: integerFrom('BENCH_ROUNDS', 3, { min: 1, max: 25 }, USAGE),
    skipCrawlee: ['1', 'true'].includes(process.env.BENCH_SKIP_CRAWLEE ?? ''),
  };
}

// ---------------------------------------------------------------------------------------------
// Fixture site process

export interface FixtureSiteProcess {
  url: string;
  sitemapUrl: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** The fixture career site as its own process, on 127.0.0.1 and a free port unless told. */
export async function startFixtureSite(options: {
  postings: number;
  pageBytes: number;
  host?: string;
  port?: number;
  seed?: number;
}): Promise<FixtureSiteProcess> {
  const entry = path.join(repoRoot, 'packages/testing/dist/bin/fixture-site.js');
  const port = options.port ?? (await freePort());
  const args = [
    '--postings',
    String(options.postings),
    '--page-bytes',
    String(options.pageBytes),
    '--host',
    options.host ?? '127.0.0.1',
    '--port',
    String(port),
    '--seed',
    String(options.seed ?? 1),
  ];
  const child = spawn(process.execPath, [entry, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-10_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = (): Promise<void> => stopChild(child, exited);
  try {
    const ready = await new Promise<{ url: string; sitemapUrl: string }>((resolve, reject) => {
      let pending = '';
      const timer = setTimeout(
        () => reject(new Error('fixture site did not report ready within 60 s')),
        60_000,
      );
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`fixture site exited with ${code} before it was ready: ${stderr.trim()}`));
      });
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        pending += chunk;
        const newline = pending.indexOf('\n');
        if (newline === -1) return;
        clearTimeout(timer);
        try {
          resolve(JSON.parse(pending.slice(0, newline)) as { url: string; sitemapUrl: string });
        } catch {
          reject(
            new Error(
              `fixture site printed an unexpected first line: ${pending.slice(0, newline)}`,
            ),
          );
        }
      });
    });
    return { url: ready.url, sitemapUrl: ready.sitemapUrl, child, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** CPU seconds the bench did not ask for in a window: another build or test run, or the host. */
export function noiseSeconds(cpuSeconds: Record<string, number>): number {
  return round2(otherCpuSeconds(cpuSeconds, MEASURED_PROCESSES));
}

function warnIfNoisy(phase: string, cpuSeconds: Record<string, number>): void {
  const noise = noiseSeconds(cpuSeconds);
  if (noise > NOISE_WARNING_CPU_SECONDS) {
    progress(
      `WARNING: ${noise} CPU s went to other processes or the host during the ${phase}; its numbers are suspect (machine not idle)`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Shared HTTP helpers (this process)

function isJobPosting(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(isJobPosting);
  if (typeof value !== 'object' || value === null) return false;
  const node = value as Record<string, unknown>;
  const type = node['@type'];
  if (type === 'JobPosting' || (Array.isArray(type) && type.includes('JobPosting'))) return true;
  return isJobPosting(node['@graph']);
}

async function fetchText(agent: Agent, url: string): Promise<string> {
  const { statusCode, body } = await request(url, { dispatcher: agent });
  if (statusCode !== 200) {
    await body.dump();
    throw new Error(`${url} answered ${statusCode}`);
  }
  return body.text();
}

async function fetchSitemapUrls(agent: Agent, sitemapUrl: string): Promise<string[]> {
  const $ = load(await fetchText(agent, sitemapUrl), { xml: true });
  return $('url > loc')
    .map((_, element) => $(element).text().trim())
    .get();
}

/** Runs `task` over `items` with `concurrency` lanes; rejects on the first failure. */
async function forEachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}

// ---------------------------------------------------------------------------------------------
// Phases

/**
 * The baseline's work on the sitemap and the first `pages` pages, untimed: the fixture server's
 * code and the baseline's own (undici, cheerio) are compiled before timing, as the pipeline's
 * worker is warmed on the same number of pages (`warmUpWorkers`).
 */
async function warmUp(sitemapUrl: string, concurrency: number, pages: number): Promise<string[]> {
  const agent = new Agent({ connections: concurrency });
  try {
    const urls = await fetchSitemapUrls(agent, sitemapUrl);
    // Past the site's size, the list again from its start, as the workers' warm-up runs do.
    for (let done = 0; done < pages && urls.length > 0; done += urls.length) {
      await forEachConcurrently(urls.slice(0, pages - done), concurrency, async (url) => {
        const $ = load(await fetchText(agent, url));
        $('script[type="application/ld+json"]').each((_, element) => {
          JSON.parse($(element).text());
        });
      });
    }
    return urls;
  } finally {
    await agent.close();
  }
}

interface BaselineResult {
  seconds: number;
  pages: number;
  postingsFound: number;
  cpuSeconds: Record<string, number>;
}

/** The floor of the work: sitemap, then fetch + DOM + JSON-LD for every URL, nothing else. */
async function runBaseline(site: FixtureSiteProcess, concurrency: number): Promise<BaselineResult> {
  const agent = new Agent({ connections: concurrency, keepAliveTimeout: 10_000 });
  try {
    const cpuBefore = cpuSnapshot();
    const started = performance.now();
    const sitemapUrl = site.sitemapUrl;
    const urls = await fetchSitemapUrls(agent, sitemapUrl);
    let pages = 0;
    let postingsFound = 0;
    await forEachConcurrently(urls, concurrency, async (url) => {
      const $ = load(await fetchText(agent, url));
      let found = false;
      $('script[type="application/ld+json"]').each((_, element) => {
        if (isJobPosting(JSON.parse($(element).text()) as unknown)) found = true;
      });
      pages += 1;
      if (found) postingsFound += 1;
    });
    const seconds = (performance.now() - started) / 1000;
    const cpuSeconds = cpuSecondsBetween(
      cpuBefore,
      cpuSnapshot(),
      new Map([
        [process.pid, 'bench'],
        [site.child.pid ?? -1, 'fixture-site'],
      ]),
    );
    return { seconds, pages, postingsFound, cpuSeconds };
  } finally {
    await agent.close();
  }
}

/** The worker processes and their stack, warmed up, kept for every round. */
export interface PipelineStack {
  stack: BenchStack;
  workers: ServiceProcess[];
  pids: number[];
  samplers: ReturnType<typeof sampleRss>[];
  /** The workers' CPU seconds during the warm-up (0 without one): what a fresh process costs. */
  warmUpCpuSeconds: number;
}

export interface PipelineRound {
  seconds: number;
  /** From the rows' own timestamps: enqueue → run started → first posting stored → last posting settled → run finished. */
  phases: { pickup: number; listing: number; pages: number; close: number } | null;
  run: RunRow;
  /** CPU seconds per process kind (worker, postgres, redis-server, fixture-site…) during the run. */
  cpuSeconds: Record<string, number>;
}

/** Starts the workers on a fresh database and Redis prefix and warms them up; the teardown stops them. */
export async function startPipeline(
  settings: Settings,
  site: FixtureSiteProcess,
  teardown: Teardown,
): Promise<PipelineStack> {
  const stack = await createBenchStack('pipeline', teardown, { poolMax: 2 });
  const env: Record<string, string> = {
    ...stack.workerEnv,
    WORKER_CONCURRENCY_CRAWL: String(settings.crawlConcurrency),
    WORKER_CONCURRENCY_EXTRACT: String(settings.extractConcurrency),
    WORKER_EXTRACT_THREADS: String(settings.extractThreads),
  };
  const workers = await startWorkerProcesses(settings.workers, env, stack, teardown);
  const pids = workers.map((worker) => {
    const pid = worker.child.pid;
    if (pid === undefined) throw new Error(`${worker.name} did not start`);
    return pid;
  });
  const samplers = pids.map((pid) => sampleRss(pid));
  teardown.add('stop RSS samplers', async () => samplers.forEach((sampler) => sampler.stop()));
  progress(
    `${workers.length} worker process(es) ready, pids ${pids.join(', ')} (crawl ${settings.crawlConcurrency}, extract ${settings.extractConcurrency}, ${settings.extractThreads} analyser thread(s) each)`,
  );
  let warmUpCpuSeconds = 0;
  if (settings.warmUpPages > 0) {
    const before = cpuSnapshot();
    await warmUpWorkers(settings, site, stack.handle, stack.queues, workers);
    const labels = new Map(pids.map((pid) => [pid, 'worker'] as const));
    warmUpCpuSeconds = cpuSecondsBetween(before, cpuSnapshot(), labels).worker ?? 0;
    progress(`worker(s) warmed up on ${settings.warmUpPages} pages`);
  }
  return { stack, workers, pids, samplers, warmUpCpuSeconds };
}

/**
 * One timed run: the site registered anew (its postings are new rows), every page stored by the
 * run itself, from the scrape enqueue until the run row is terminal.
 */
export async function runPipelineRound(
  settings: Settings,
  site: FixtureSiteProcess,
  pipeline: PipelineStack,
  round: number,
): Promise<PipelineRound> {
  const { handle, queues, databaseName } = pipeline.stack;
  await handle.pool.query('TRUNCATE page_bodies');
  const siteRow = await registerFixtureSite(
    handle,
    site,
    settings,
    `bench-fixture-careers-${round}`,
  );
  const cpuBefore = cpuSnapshot();
  const started = performance.now();
  const enqueuedAt = new Date();
  const created = await startScrapeRun(
    { db: handle.db, queues },
    { siteId: siteRow.id, trigger: 'manual' },
  );
  let run: RunRow | undefined;
  let lastReport = started;
  for (;;) {
    await sleep(RUN_POLL_MS);
    run = await getRun(handle.db, created.id);
    if (run && TERMINAL_RUN_STATUSES.has(run.status)) break;
    assertWorkersAlive(pipeline.workers, ' mid-run');
    const now = performance.now();
    if (now - started > settings.timeoutMs) {
      throw new Error(
        `run ${created.runId} still ${run?.status ?? 'missing'} after ${settings.timeoutMs} ms`,
      );
    }
    if (now - lastReport >= 5_000) {
      lastReport = now;
      progress(`  … ${((now - started) / 1000).toFixed(0)} s, run ${run?.status ?? '?'}`);
    }
  }
  // The run's own finished_at (Postgres's clock, this machine's): the poll's delay in seeing it
  // is no part of the pipeline's time.
  const seconds =
    run.finishedAt === null
      ? (performance.now() - started) / 1000
      : (run.finishedAt.getTime() - enqueuedAt.getTime()) / 1000;
  const cpuLabels = new Map([
    ...pipeline.pids.map((pid) => [pid, 'worker'] as const),
    [process.pid, 'bench'],
    [site.child.pid ?? -1, 'fixture-site'],
  ]);
  const cpuSeconds = cpuSecondsBetween(cpuBefore, cpuSnapshot(), cpuLabels, databaseName);
  const phases = await runPhases(handle, created.id, enqueuedAt);
  return { seconds, phases, run, cpuSeconds };
}

/** Stops the workers: their exit codes on SIGTERM, their peak RSS and their warnings. */
export async function stopPipeline(pipeline: PipelineStack): Promise<{
  peakRssMB: number;
  exitCodes: (number | null)[];
  warnings: number;
}> {
  // Before the workers exit, while /proc/<pid> still exists: the largest of any one worker.
  const peakRssMB = Math.max(...pipeline.samplers.map((sampler) => sampler.peakMb()));
  pipeline.samplers.forEach((sampler) => sampler.stop());
  const exitCodes = await Promise.all(pipeline.workers.map((worker) => worker.stop()));
  const warnings = workerWarnings(pipeline.workers);
  for (const line of warnings.slice(0, 5))
    progress(`worker: ${JSON.stringify(line).slice(0, 500)}`);
  return { peakRssMB, exitCodes, warnings: warnings.length };
}

/**
 * The fixture site as a site row. Measures the pipeline, not politeness: no pauses, and as many
 * concurrent fetches as one worker runs crawl jobs (the same concurrency the baseline loop
 * gets), across all workers.
 *
 * Each registration is a tenant of its own. Registered again in one tenant, the site's jobs are
 * the same jobs seen through several sites, which the cross-source rule (decision 0027) links as
 * each run closes, against every copy registered before it: the warm-up's and earlier rounds'.
 * That work would grow with the warm-up (four workers warm up on four times the pages) and with
 * the round, not with the run, and the closing worker's CPU would carry it.
 */
function registerFixtureSite(
  handle: DbHandle,
  site: FixtureSiteProcess,
  settings: Settings,
  siteName: string,
  config: { maxPostings?: number } = {},
) {
  return insertSite(handle.db, {
    siteName,
    tenantId: siteName,
    kind: 'career-site',
    config: { url: site.url, sitemapUrl: site.sitemapUrl, ...config },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    maxConcurrency: settings.crawlConcurrency,
  });
}

/**
 * A long-running worker has its code compiled and its pools open; a fresh process has neither,
 * and would spend the timed run compiling. So the workers first crawl `warmUpPages` postings of
 * the same site, in runs of at most the site's size, each registered as a site of its own (its
 * postings are other rows), and the bodies those runs stored are removed again so the timed run
 * stores every page itself.
 */
async function warmUpWorkers(
  settings: Settings,
  site: FixtureSiteProcess,
  handle: DbHandle,
  queues: Queues,
  workers: Parameters<typeof assertWorkersAlive>[0],
): Promise<void> {
  for (let done = 0, part = 1; done < settings.warmUpPages; part++) {
    const pages = Math.min(settings.warmUpPages - done, settings.postings);
    const warmUpSite = await registerFixtureSite(handle, site, settings, `bench-warm-up-${part}`, {
      maxPostings: pages,
    });
    const created = await startScrapeRun(
      { db: handle.db, queues },
      { siteId: warmUpSite.id, trigger: 'manual' },
    );
    const outcome = await waitForRuns(handle, [created.id], {
      workers,
      startedAt: performance.now(),
      timeoutMs: settings.timeoutMs,
      pollMs: RUN_POLL_MS,
    });
    const run = outcome.runs.get(created.id);
    if (outcome.timedOut || run?.status !== 'succeeded')
      throw new Error(
        `warm-up run ${outcome.timedOut ? 'still' : 'ended'} ${run?.status ?? 'missing'}: ${run?.message ?? ''}`,
      );
    await handle.pool.query('TRUNCATE page_bodies');
    done += pages;
  }
}

/** Where the run's wall time went, from Postgres timestamps (same clock as this process). */
async function runPhases(
  handle: DbHandle,
  runId: string,
  enqueuedAt: Date,
): Promise<PipelineRound['phases']> {
  const { rows } = await handle.pool.query<{
    started_at: Date | null;
    first_fetch: Date | null;
    last_settle: Date | null;
    finished_at: Date | null;
  }>(
    `SELECT r.started_at, r.finished_at,
            (SELECT min(p.fetched_at) FROM postings p WHERE p.run_id = r.id) AS first_fetch,
            (SELECT max(p.extracted_at) FROM postings p WHERE p.run_id = r.id) AS last_settle
     FROM scrape_runs r WHERE r.id = $1`,
    [runId],
  );
  const row = rows[0];
  if (!row?.started_at || !row.first_fetch || !row.last_settle || !row.finished_at) return null;
  const seconds = (from: Date, to: Date): number => round2((to.getTime() - from.getTime()) / 1000);
  return {
    pickup: seconds(enqueuedAt, row.started_at),
    listing: seconds(row.started_at, row.first_fetch),
    pages: seconds(row.first_fetch, row.last_settle),
    close: seconds(row.last_settle, row.finished_at),
  };
}

interface CrawleeResult {
  cpuSeconds: Record<string, number>;
  seconds: number;
  pages: number;
  failed: number;
  postingsFound: number;
}

async function runCrawlee(
  urls: readonly string[],
  site: FixtureSiteProcess,
): Promise<CrawleeResult> {
  // Nothing may land in the repository: memory storage only, and a scratch directory in case
  // some store still decides to write.
  const storageDir = mkdtempSync(path.join(tmpdir(), 'gleaner-bench-crawlee-'));
  process.env.CRAWLEE_STORAGE_DIR = storageDir;
  try {
    const { CheerioCrawler, Configuration, log, LogLevel } = await import('@crawlee/cheerio');
    log.setLevel(LogLevel.OFF);
    let postingsFound = 0;
    const crawler = new CheerioCrawler(
      {
        requestHandler: async ({ $ }) => {
          let found = false;
          $('script[type="application/ld+json"]').each((_, element) => {
            if (isJobPosting(JSON.parse($(element).text()) as unknown)) found = true;
          });
          if (found) postingsFound += 1;
        },
      },
      new Configuration({ persistStorage: false }),
    );
    const cpuBefore = cpuSnapshot();
    const started = performance.now();
    const stats = await crawler.run([...urls]);
    const seconds = (performance.now() - started) / 1000;
    const cpuSeconds = cpuSecondsBetween(
      cpuBefore,
      cpuSnapshot(),
      new Map([
        [process.pid, 'bench'],
        [site.child.pid ?? -1, 'fixture-site'],
      ]),
    );
    return {
      seconds,
      pages: stats.requestsFinished,
      failed: stats.requestsFailed,
      postingsFound,
      cpuSeconds,
    };
  } finally {
    rmSync(storageDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------

interface Round {
  baseline: BaselineResult;
  baselinePagesPerSec: number;
  pipeline: PipelineRound | null;
  pagesPerSec: number | null;
  crawlee: CrawleeResult | null;
  crawleePagesPerSec: number | null;
  /** pipeline ÷ baseline */
  ratio: number | null;
  /** pipeline ÷ Crawlee */
  crawleeMultiple: number | null;
  /** baseline ÷ Crawlee: what the bare loop itself makes of the same round's Crawlee */
  baselineCrawleeMultiple: number | null;
}

async function bench(settings: Settings, teardown: Teardown): Promise<number> {
  progress(`fixture site: ${settings.postings} postings of ~${settings.pageBytes} bytes`);
  const site = await startFixtureSite(settings);
  teardown.add('stop fixture site', () => site.stop());
  progress(`fixture site ${site.url} (pid ${site.child.pid})`);

  const urls = await warmUp(site.sitemapUrl, settings.crawlConcurrency, settings.warmUpPages);
  if (urls.length !== settings.postings)
    throw new Error(`sitemap lists ${urls.length} URLs, expected ${settings.postings}`);
  progress(`warm-up done (${settings.warmUpPages} pages)`);
  if (!settings.skipCrawlee) {
    // Crawlee's code is compiled before timing too: without this run, the first round's Crawlee
    // ran on cold code (144 pages/s against 196 and 202 in one run), which lifted that round's
    // multiple.
    const warmUpCrawlee = await runCrawlee(urls, site);
    progress(
      `Crawlee warmed up on ${warmUpCrawlee.pages} pages (${(warmUpCrawlee.pages / warmUpCrawlee.seconds).toFixed(1)} pages/s)`,
    );
  }

  const failures: string[] = [];
  progress(`pipeline: ${settings.workers} worker process(es), scrape → crawl → extract`);
  const pipeline = await startPipeline(settings, site, teardown);

  const rounds: Round[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    // The baseline opens each round on a quiet machine: the first round follows the workers'
    // warm-up, whose runs are still being closed and written back when it ends.
    const quiet = await waitUntilQuiet();
    progress(
      `round ${round}: machine quiet after ${(quiet.waitedMs / 1000).toFixed(1)} s (${quiet.busyCores.toFixed(2)} cores busy)`,
    );
    const baseline = await runBaseline(site, settings.crawlConcurrency);
    const baselinePagesPerSec = baseline.pages / baseline.seconds;
    warnIfNoisy(`round ${round}'s baseline`, baseline.cpuSeconds);
    if (baseline.postingsFound !== settings.postings)
      failures.push(
        `round ${round}: baseline found ${baseline.postingsFound} JobPostings, expected ${settings.postings}`,
      );

    let timed: PipelineRound | null = null;
    try {
      timed = await runPipelineRound(settings, site, pipeline, round);
    } catch (error) {
      failures.push(
        `round ${round}: pipeline: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const pagesPerSec = timed ? settings.postings / timed.seconds : null;
    if (timed) {
      const { run } = timed;
      warnIfNoisy(`round ${round}'s pipeline run`, timed.cpuSeconds);
      if (run.status !== 'succeeded' || run.readyCount !== settings.postings)
        failures.push(
          `round ${round}: run ended ${run.status} with ${run.readyCount}/${settings.postings} ready (${run.errorsCount} errors): ${run.message ?? ''}`,
        );
    }

    let crawlee: CrawleeResult | null = null;
    if (!settings.skipCrawlee) {
      crawlee = await runCrawlee(urls, site);
      warnIfNoisy(`round ${round}'s Crawlee run`, crawlee.cpuSeconds);
      if (crawlee.postingsFound !== settings.postings)
        failures.push(
          `round ${round}: Crawlee found ${crawlee.postingsFound} JobPostings, expected ${settings.postings}`,
        );
    }
    const crawleePagesPerSec = crawlee ? crawlee.pages / crawlee.seconds : null;
    const ratio = pagesPerSec === null ? null : pagesPerSec / baselinePagesPerSec;
    const crawleeMultiple =
      pagesPerSec === null || crawleePagesPerSec === null ? null : pagesPerSec / crawleePagesPerSec;
    const baselineCrawleeMultiple =
      crawleePagesPerSec === null ? null : baselinePagesPerSec / crawleePagesPerSec;
    rounds.push({
      baseline,
      baselinePagesPerSec,
      pipeline: timed,
      pagesPerSec,
      crawlee,
      crawleePagesPerSec,
      ratio,
      crawleeMultiple,
      baselineCrawleeMultiple,
    });
    progress(
      `round ${round}: baseline ${baselinePagesPerSec.toFixed(1)} pages/s, pipeline ${pagesPerSec?.toFixed(1) ?? '-'} pages/s` +
        ` (ratio ${ratio?.toFixed(2) ?? '-'})` +
        (crawleePagesPerSec === null
          ? ''
          : `, Crawlee ${crawleePagesPerSec.toFixed(1)} pages/s (pipeline ${crawleeMultiple?.toFixed(2) ?? '-'}×, baseline ${baselineCrawleeMultiple?.toFixed(2) ?? '-'}×)`),
    );
    if (timed) progress(`round ${round}: pipeline CPU seconds ${JSON.stringify(timed.cpuSeconds)}`);
  }

  const stopped = await stopPipeline(pipeline);
  for (const [index, code] of stopped.exitCodes.entries())
    if (code !== 0) failures.push(`worker ${index + 1} exited with ${code} on SIGTERM`);

  const timedRounds = rounds.filter((round) => round.ratio !== null);
  const median = timedRounds.length > 0 ? medianBy(timedRounds, (round) => round.ratio!) : null;
  const crawleeRounds = rounds.filter((round) => round.crawleeMultiple !== null);
  const medianCrawleeMultiple =
    crawleeRounds.length > 0
      ? medianBy(crawleeRounds, (round) => round.crawleeMultiple!).crawleeMultiple
      : null;
  if (median?.ratio != null && median.ratio < TARGET_RATIO)
    failures.push(`target missed: median ratio ${median.ratio.toFixed(2)} < ${TARGET_RATIO}`);
  if (medianCrawleeMultiple !== null && medianCrawleeMultiple < TARGET_CRAWLEE_MULTIPLE)
    failures.push(
      `target missed: median pipeline ÷ Crawlee ${medianCrawleeMultiple.toFixed(2)} < ${TARGET_CRAWLEE_MULTIPLE}`,
    );
  if (stopped.peakRssMB > TARGET_PEAK_RSS_MB)
    failures.push(
      `target missed: peak RSS ${stopped.peakRssMB.toFixed(1)} MB > ${TARGET_PEAK_RSS_MB}`,
    );

  // CPU per page over every round: the pipeline's processes against the bare loop's.
  const pipelineCpu = sumCpuSeconds(timedRounds.map((round) => round.pipeline!.cpuSeconds));
  const baselineCpu = sumCpuSeconds(rounds.map((round) => round.baseline.cpuSeconds));
  const pipelinePages = settings.postings * timedRounds.length;
  const baselinePages = rounds.reduce((sum, round) => sum + round.baseline.pages, 0);
  const crawleeRuns = rounds.flatMap((round) => (round.crawlee ? [round.crawlee] : []));
  const crawleeCpu = sumCpuSeconds(crawleeRuns.map((crawlee) => crawlee.cpuSeconds));
  const crawleePages = crawleeRuns.reduce((sum, crawlee) => sum + crawlee.pages, 0);
  /** The measured processes' CPU seconds ÷ wall seconds: pages/s is this ÷ CPU seconds a page. */
  const coresBusy = (cpu: Record<string, number>, seconds: number) =>
    seconds > 0 ? round2(cpuSecondsOf(cpu, [...MEASURED_PROCESSES]) / seconds) : null;
  const sumSeconds = (each: readonly { seconds: number }[]) =>
    each.reduce((sum, item) => sum + item.seconds, 0);
  const orNull = (value: number | null | undefined) =>
    value === null || value === undefined ? null : round2(value);

  const result = {
    pagesPerSec: orNull(median?.pagesPerSec),
    baselinePagesPerSec: orNull(median?.baselinePagesPerSec),
    ratio: orNull(median?.ratio),
    crawleePagesPerSec: orNull(median?.crawleePagesPerSec),
    crawleeMultiple: orNull(medianCrawleeMultiple),
    peakRssMB: round2(stopped.peakRssMB),
    rounds: rounds.map((round) => ({
      pagesPerSec: orNull(round.pagesPerSec),
      baselinePagesPerSec: round2(round.baselinePagesPerSec),
      ratio: orNull(round.ratio),
      crawleePagesPerSec: orNull(round.crawleePagesPerSec),
      crawleeMultiple: orNull(round.crawleeMultiple),
      baselineCrawleeMultiple: orNull(round.baselineCrawleeMultiple),
      runStatus: round.pipeline?.run.status ?? null,
      readyCount: round.pipeline?.run.readyCount ?? null,
      pipelinePhases: round.pipeline?.phases ?? null,
      otherCpuSeconds: {
        baseline: noiseSeconds(round.baseline.cpuSeconds),
        pipeline: round.pipeline ? noiseSeconds(round.pipeline.cpuSeconds) : null,
        crawlee: round.crawlee ? noiseSeconds(round.crawlee.cpuSeconds) : null,
      },
    })),
    cpuMsPerPage: {
      pipeline: cpuMsPer(pipelineCpu, pipelinePages, [...MEASURED_PROCESSES]),
      worker: cpuMsPer(pipelineCpu, pipelinePages, ['worker']),
      postgres: cpuMsPer(pipelineCpu, pipelinePages, ['postgres']),
      redis: cpuMsPer(pipelineCpu, pipelinePages, ['redis-server']),
      fixtureSite: cpuMsPer(pipelineCpu, pipelinePages, ['fixture-site']),
      baseline: cpuMsPer(baselineCpu, baselinePages, [...MEASURED_PROCESSES]),
      baselineLoop: cpuMsPer(baselineCpu, baselinePages, ['bench']),
      baselineFixtureSite: cpuMsPer(baselineCpu, baselinePages, ['fixture-site']),
      crawlee:
        crawleePages > 0 ? cpuMsPer(crawleeCpu, crawleePages, [...MEASURED_PROCESSES]) : null,
      crawleeLoop: crawleePages > 0 ? cpuMsPer(crawleeCpu, crawleePages, ['bench']) : null,
    },
    coresBusy: {
      pipeline: coresBusy(pipelineCpu, sumSeconds(timedRounds.map((round) => round.pipeline!))),
      baseline: coresBusy(baselineCpu, sumSeconds(rounds.map((round) => round.baseline))),
      crawlee: coresBusy(crawleeCpu, sumSeconds(crawleeRuns)),
    },
    postings: settings.postings,
    pageBytes: settings.pageBytes,
    workers: settings.workers,
    crawlConcurrency: settings.crawlConcurrency,
    extractConcurrency: settings.extractConcurrency,
    extractThreads: settings.extractThreads,
    workerWarnings: stopped.warnings,
    targets: {
      ratio: TARGET_RATIO,
      crawleeMultiple: settings.skipCrawlee ? null : TARGET_CRAWLEE_MULTIPLE,
      peakRssMB: TARGET_PEAK_RSS_MB,
    },
  };
  return report(progress, failures, result);
}

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, bench);
