/**
 * `pnpm chaos flush`: Redis forgets everything mid-run, and the run still ends with every
 * posting settled once.
 *
 * One run of a fresh fixture site with CHAOS_POSTINGS (1000) postings, crawled by CHAOS_WORKERS
 * (2) worker processes with one scheduler process (its reconciler). Once CHAOS_FLUSH_AT_PERCENT
 * (30) % of the postings settled, `FLUSHALL` wipes the check's own Redis: queued and delayed
 * jobs, locks, site gates, all gone. Postgres still says which postings are pending; the
 * reconciler must put their work back. No process is restarted. The run must end within
 * CHAOS_RUN_TIMEOUT_MS (600000) and pass `verifyRun` (verify.ts).
 *
 * Last stdout line: {"pass","run":{…},"flushedAtSettled",…}. Exit code 1 when a check failed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { getRun } from '@gleaner/db';
import { startScrapeRun } from '@gleaner/queue';
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
import { finalizedLogLines, verifyBodies, verifyRun } from './verify.js';

const USAGE = `usage: pnpm chaos flush
environment: CHAOS_POSTINGS (1000), CHAOS_WORKERS (2), CHAOS_FLUSH_AT_PERCENT (30),
  CHAOS_RUN_TIMEOUT_MS (600000), CHAOS_PAGE_BYTES (8000), CHAOS_QUIET_MS (5000),
${TIMING_USAGE}`;

interface Settings {
  postings: number;
  workers: number;
  flushAtPercent: number;
  runTimeoutMs: number;
  pageBytes: number;
  quietMs: number;
  timing: ServiceTiming;
}

const progress = progressFor('flush');

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  return {
    postings: integerFrom('CHAOS_POSTINGS', 1000, { min: 1 }, USAGE),
    workers: integerFrom('CHAOS_WORKERS', 2, { min: 1 }, USAGE),
    flushAtPercent: integerFrom('CHAOS_FLUSH_AT_PERCENT', 30, { min: 0, max: 99 }, USAGE),
    runTimeoutMs: integerFrom('CHAOS_RUN_TIMEOUT_MS', 600_000, { min: 1000 }, USAGE),
    pageBytes: integerFrom('CHAOS_PAGE_BYTES', 8000, { min: 0 }, USAGE),
    quietMs: integerFrom('CHAOS_QUIET_MS', 5000, { min: 0 }, USAGE),
    timing: timingFrom(USAGE),
  };
}

async function check(settings: Settings, teardown: Teardown): Promise<number> {
  progress(`settings ${JSON.stringify(settings)}`);
  const stack = await createChaosStack('flush', settings.timing, teardown, progress);
  const fixture = await startFixtureSites(
    [{ postings: settings.postings, pageBytes: settings.pageBytes, seed: 2000 }],
    teardown,
    progress,
  );
  const workers = await startReplicas('worker', settings.workers, stack, teardown);
  const schedulers = await startReplicas('scheduler', 1, stack, teardown);
  progress(`${settings.workers} workers and 1 scheduler started`);

  const site = await insertFixtureSite(stack.handle, 'chaos-flush', fixture.sites[0]!);
  const started = await startScrapeRun(
    { db: stack.handle.db, queues: stack.queues },
    { siteId: site.id, trigger: 'manual', correlationId: 'chaos-flush' },
  );
  progress(`run ${started.runId} started`);
  const failures: string[] = [];
  let flushedAtSettled: number | null = null;
  try {
    flushedAtSettled = await waitForSettledFraction(
      stack.handle,
      started.id,
      settings.postings,
      settings.flushAtPercent / 100,
      settings.runTimeoutMs,
    );
    await stack.producer.flushall();
    progress(`FLUSHALL at ${flushedAtSettled}/${settings.postings} postings settled`);
    const atFlush = await getRun(stack.handle.db, started.id);
    if (atFlush?.finishedAt != null)
      failures.push('the run had ended before the flush: nothing was tested');
  } catch (error) {
    failures.push(`before the flush: ${error instanceof Error ? error.message : String(error)}`);
  }

  const ended = await waitForRunEnd(
    stack.handle,
    started.id,
    settings.runTimeoutMs,
    progress,
    'run',
  );
  progress(
    ended.timedOut
      ? `run not ended after ${Math.round(ended.seconds)} s`
      : `run ended ${ended.run?.status} ${Math.round(ended.seconds)} s after the flush; checking after ${settings.quietMs} ms of quiet`,
  );
  if (ended.timedOut)
    failures.push(`run not ended within ${settings.runTimeoutMs} ms of the flush`);
  await sleep(settings.quietMs);
  const latest = await getRun(stack.handle.db, started.id);
  const processes = [...workers.all, ...schedulers.all];
  const verdict = latest
    ? await verifyRun(stack.handle, latest, {
        postings: settings.postings,
        finalizedLogLines: finalizedLogLines(processes, latest),
      })
    : undefined;
  failures.push(...(verdict?.failures ?? ['run row missing']));
  failures.push(...(await verifyBodies(stack.handle)));
  for (const exit of [...workers.unexpectedExits(), ...schedulers.unexpectedExits()])
    failures.push(`unexpected exit (nothing is restarted in this check): ${exit}`);

  if (failures.length === 0) stack.passed();
  return report(progress, failures, {
    check: 'flush',
    pass: failures.length === 0,
    run: verdict ?? null,
    secondsAfterFlush: round2(ended.seconds),
    timedOut: ended.timedOut,
    flushedAtSettled,
    settings,
    warnings: warningSummary(processes),
    logDir: failures.length === 0 ? null : stack.logDir,
    failures,
  });
}

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, check);
