/**
 * `pnpm chaos redis-outage`: Redis goes away (connections refused) in the middle of a run and
 * comes back on the same port with its AOF; every process rides it out on its own.
 *
 * An API, CHAOS_WORKERS (2) workers and one scheduler run throughout and are never restarted.
 * For each outage in CHAOS_OUTAGES_MS (2000,15000,60000): a fresh fixture site of
 * CHAOS_POSTINGS (1000) postings is scraped through `POST /jobs/scrape`; once
 * CHAOS_STOP_AT_PERCENT (30) % of its postings settled, the check's `redis-server` is shut down
 * (SIGTERM: it writes its AOF and exits), stays down for the outage, and is started again on the
 * same port and directory. The run must end within CHAOS_RUN_TIMEOUT_MS (600000) and pass
 * `verifyRun` (verify.ts). Afterwards `GET /health` must answer 200 healthy (within 30 s of the
 * last run's end), `POST /jobs/scrape` of a new 20-posting site must be accepted and its run
 * must end within 2 minutes (the workers still work), and no process may have exited.
 *
 * Last stdout line: {"pass","outages":[{outageMs,run:{…},…}],"afterwards":{…},…}. Exit code 1
 * when a check failed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { getRun, getRunByPublicId, type DbHandle, type RunRow } from '@gleaner/db';
import { adminHeaders, freePort } from '@gleaner/testing';
import type { BenchModule } from '../bench/bench.js';
import {
  benchRun,
  integerFrom,
  report,
  round2,
  startFixtureSites,
  wantsHelp,
  type Teardown,
} from '../bench/support.js';
import { BenchUsageError } from '../bench/bench.js';
import {
  createChaosStack,
  insertFixtureSite,
  progressFor,
  startReplicas,
  timingFrom,
  TIMING_USAGE,
  waitForRunEnd,
  waitForSettledFraction,
  warningSummary,
  type ServiceTiming,
} from './support.js';
import { finalizedLogLines, verifyBodies, verifyRun, type RunVerdict } from './verify.js';

const USAGE = `usage: pnpm chaos redis-outage
environment: CHAOS_OUTAGES_MS (2000,15000,60000), CHAOS_POSTINGS (1000), CHAOS_WORKERS (2),
  CHAOS_STOP_AT_PERCENT (30), CHAOS_RUN_TIMEOUT_MS (600000), CHAOS_PAGE_BYTES (8000),
  CHAOS_QUIET_MS (5000),
${TIMING_USAGE}`;

/** Postings of the site scraped after the outages, to show the pipeline still works. */
const FINAL_POSTINGS = 20;
const FINAL_RUN_TIMEOUT_MS = 120_000;
const HEALTHY_WITHIN_MS = 30_000;

interface Settings {
  outagesMs: number[];
  postings: number;
  workers: number;
  stopAtPercent: number;
  runTimeoutMs: number;
  pageBytes: number;
  quietMs: number;
  timing: ServiceTiming;
}

const progress = progressFor('redis-outage');

function outagesFrom(variable: string, fallback: number[]): number[] {
  const raw = process.env[variable];
  if (raw === undefined || raw.trim() === '') return fallback;
  const values = raw.split(',').map((part) => part.trim());
  if (values.some((value) => !/^\d+$/.test(value)))
    throw new BenchUsageError(
      `${variable} must be whole numbers of ms, comma-separated (got "${raw}")`,
      USAGE,
    );
  return values.map(Number);
}

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  return {
    outagesMs: outagesFrom('CHAOS_OUTAGES_MS', [2_000, 15_000, 60_000]),
    postings: integerFrom('CHAOS_POSTINGS', 1000, { min: 1 }, USAGE),
    workers: integerFrom('CHAOS_WORKERS', 2, { min: 1 }, USAGE),
    stopAtPercent: integerFrom('CHAOS_STOP_AT_PERCENT', 30, { min: 0, max: 99 }, USAGE),
    runTimeoutMs: integerFrom('CHAOS_RUN_TIMEOUT_MS', 600_000, { min: 1000 }, USAGE),
    pageBytes: integerFrom('CHAOS_PAGE_BYTES', 8000, { min: 0 }, USAGE),
    quietMs: integerFrom('CHAOS_QUIET_MS', 5000, { min: 0 }, USAGE),
    timing: timingFrom(USAGE),
  };
}

/** `POST /jobs/scrape` of a site by name: the run it started, or an error with the answer. */
async function scrapeThroughApi(
  apiUrl: string,
  handle: DbHandle,
  siteName: string,
): Promise<RunRow> {
  const response = await fetch(`${apiUrl}/jobs/scrape`, {
    method: 'POST',
    headers: { ...adminHeaders, 'content-type': 'application/json' },
    body: JSON.stringify({ site_name: siteName }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (response.status !== 202)
    throw new Error(`POST /jobs/scrape answered ${response.status}: ${text.slice(0, 500)}`);
  const publicId = (JSON.parse(text) as { data?: { run_id?: string } }).data?.run_id;
  const run = publicId === undefined ? undefined : await getRunByPublicId(handle.db, publicId);
  if (!run)
    throw new Error(`POST /jobs/scrape answered 202 with no known run: ${text.slice(0, 500)}`);
  return run;
}

/** Polls `GET /health` until it answers 200 healthy; the last answer and how long it took. */
async function waitForHealthy(
  apiUrl: string,
  timeoutMs: number,
): Promise<{ healthy: boolean; seconds: number; last: string }> {
  const started = performance.now();
  let last = '';
  for (;;) {
    try {
      const response = await fetch(`${apiUrl}/health`, { signal: AbortSignal.timeout(5_000) });
      last = `${response.status} ${await response.text()}`;
      if (response.status === 200 && last.includes('"healthy"'))
        return { healthy: true, seconds: (performance.now() - started) / 1000, last };
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    if (performance.now() - started > timeoutMs)
      return { healthy: false, seconds: (performance.now() - started) / 1000, last };
    await sleep(500);
  }
}

interface Outage extends Partial<RunVerdict> {
  outageMs: number;
  stoppedAtSettled: number | null;
  secondsAfterRestart: number;
  timedOut: boolean;
  failures: string[];
}

async function check(settings: Settings, teardown: Teardown): Promise<number> {
  progress(`settings ${JSON.stringify(settings)}`);
  const stack = await createChaosStack('redis-outage', settings.timing, teardown, progress);
  const fixture = await startFixtureSites(
    [
      ...settings.outagesMs.map((_, index) => ({
        postings: settings.postings,
        pageBytes: settings.pageBytes,
        seed: 3000 + index,
      })),
      { postings: FINAL_POSTINGS, pageBytes: settings.pageBytes, seed: 3999 },
    ],
    teardown,
    progress,
  );
  const apiPort = await freePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const workers = await startReplicas('worker', settings.workers, stack, teardown);
  const schedulers = await startReplicas('scheduler', 1, stack, teardown);
  const api = await startReplicas('api', 1, stack, teardown, {
    API_HOST: '127.0.0.1',
    API_PORT: String(apiPort),
  });
  const processes = [...workers.all, ...schedulers.all, ...api.all];
  progress(`${settings.workers} workers, 1 scheduler and the API (${apiUrl}) started`);

  const outages: Outage[] = [];
  for (const [index, outageMs] of settings.outagesMs.entries()) {
    const label = `outage ${index + 1}/${settings.outagesMs.length} (${outageMs} ms)`;
    const failures: string[] = [];
    const siteName = `chaos-outage-${index + 1}`;
    await insertFixtureSite(stack.handle, siteName, fixture.sites[index]!);
    const started = await scrapeThroughApi(apiUrl, stack.handle, siteName);
    progress(`${label}: run ${started.runId} started through the API`);
    let stoppedAtSettled: number | null = null;
    try {
      stoppedAtSettled = await waitForSettledFraction(
        stack.handle,
        started.id,
        settings.postings,
        settings.stopAtPercent / 100,
        settings.runTimeoutMs,
      );
    } catch (error) {
      failures.push(`before the outage: ${error instanceof Error ? error.message : String(error)}`);
    }
    await stack.redis.stop();
    if ((await getRun(stack.handle.db, started.id))?.finishedAt != null)
      failures.push('the run had ended before Redis stopped: nothing was tested');
    progress(`${label}: redis-server stopped at ${stoppedAtSettled}/${settings.postings} settled`);
    await sleep(outageMs);
    await stack.redis.start();
    progress(`${label}: redis-server started again on port ${stack.redis.port}`);

    const ended = await waitForRunEnd(
      stack.handle,
      started.id,
      settings.runTimeoutMs,
      progress,
      label,
    );
    progress(
      ended.timedOut
        ? `${label}: run not ended after ${Math.round(ended.seconds)} s`
        : `${label}: run ended ${ended.run?.status} ${Math.round(ended.seconds)} s after the restart`,
    );
    if (ended.timedOut)
      failures.push(`run not ended within ${settings.runTimeoutMs} ms of the restart`);
    await sleep(settings.quietMs);
    const latest = await getRun(stack.handle.db, started.id);
    const verdict = latest
      ? await verifyRun(stack.handle, latest, {
          postings: settings.postings,
          finalizedLogLines: finalizedLogLines(processes, latest),
        })
      : undefined;
    failures.push(...(verdict?.failures ?? ['run row missing']));
    outages.push({
      outageMs,
      ...verdict,
      stoppedAtSettled,
      secondsAfterRestart: round2(ended.seconds),
      timedOut: ended.timedOut,
      failures: failures.map((failure) => `${label} (${started.runId}): ${failure}`),
    });
    progress(`${label}: ${failures.length === 0 ? 'ok' : `${failures.length} failures`}`);
  }

  const failures = outages.flatMap((outage) => outage.failures);
  failures.push(...(await verifyBodies(stack.handle)));

  const health = await waitForHealthy(apiUrl, HEALTHY_WITHIN_MS);
  progress(
    `GET /health: ${health.healthy ? `healthy after ${round2(health.seconds)} s` : health.last}`,
  );
  if (!health.healthy)
    failures.push(
      `GET /health not healthy within ${HEALTHY_WITHIN_MS} ms: ${health.last.slice(0, 500)}`,
    );
  let finalRun: { runId: string; status: string | null; seconds: number } | null = null;
  try {
    await insertFixtureSite(stack.handle, 'chaos-outage-after', fixture.sites.at(-1)!);
    const started = await scrapeThroughApi(apiUrl, stack.handle, 'chaos-outage-after');
    const ended = await waitForRunEnd(
      stack.handle,
      started.id,
      FINAL_RUN_TIMEOUT_MS,
      progress,
      'after',
    );
    finalRun = {
      runId: started.runId,
      status: ended.run?.status ?? null,
      seconds: round2(ended.seconds),
    };
    progress(`after the outages: POST /jobs/scrape accepted, run ended ${finalRun.status}`);
    if (ended.timedOut)
      failures.push(
        `the run started after the outages did not end within ${FINAL_RUN_TIMEOUT_MS} ms`,
      );
  } catch (error) {
    failures.push(`after the outages: ${error instanceof Error ? error.message : String(error)}`);
  }
  for (const exit of [
    ...workers.unexpectedExits(),
    ...schedulers.unexpectedExits(),
    ...api.unexpectedExits(),
  ])
    failures.push(`a process exited (none may): ${exit}`);

  if (failures.length === 0) stack.passed();
  return report(progress, failures, {
    check: 'redis-outage',
    pass: failures.length === 0,
    outages,
    afterwards: { health, run: finalRun },
    settings,
    warnings: warningSummary(processes),
    logDir: failures.length === 0 ? null : stack.logDir,
    failures,
  });
}

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, check);
