/**
 * `pnpm chaos kill`: workers SIGKILLed at random while runs are in flight lose no posting, apply
 * none twice, and fail none: a worker's death is not the page's fault.
 *
 * CHAOS_ROUNDS (3) runs, one after the other, each of a fresh fixture site (its own seed, so its
 * CHAOS_POSTINGS (2000) postings are new content and the work is real) whose pages answer in
 * CHAOS_PAGE_DELAY_MS (200), crawled by CHAOS_WORKERS (3) worker processes; every
 * CHAOS_KILL_EVERY_MS (2000) a random worker is SIGKILLed and restarted at once, until the run
 * ends or CHAOS_RUN_TIMEOUT_MS (600000) passes. The first CHAOS_NO_SCHEDULER_ROUNDS (1) rounds
 * run with no scheduler process, so no reconciler: the workers alone must end the run. The
 * others run with one scheduler beside the workers, as deployed. Each run is then checked by
 * `verifyRun` (verify.ts), a few seconds after it ended so that late duplicate work would show,
 * and must have `succeeded` with no posting in `error`: every page is good. At the end the change
 * feed is read from the start and checked against the postings (`verifyChangeFeed`): one
 * `created` per posting, one `updated` per page read, no gap or repeat. CHAOS_REDIS=cluster
 * runs it all on a 3-master Redis Cluster of its own instead of one `redis-server`.
 *
 * Last stdout line: {"pass","rounds":[{runId,status,seconds,kills,postings,counters,…,failures}],
 * "changeFeed":{events,byType,postings},"timing",…}. Exit code 1 when any run missed a check.
 */
import { setTimeout as sleep } from 'node:timers/promises';
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
import { getRun } from '@gleaner/db';
import { startScrapeRun } from '@gleaner/queue';
import { verifyChangeFeed } from '@gleaner/testing';
import {
  createChaosStack,
  redisKindFrom,
  insertFixtureSite,
  progressFor,
  startKiller,
  type Replicas,
  startReplicas,
  timingFrom,
  TIMING_USAGE,
  waitForRunEnd,
  warningSummary,
  type ServiceTiming,
} from './support.js';
import { finalizedLogLines, verifyBodies, verifyRun, type RunVerdict } from './verify.js';

const USAGE = `usage: pnpm chaos kill
environment: CHAOS_ROUNDS (3), CHAOS_POSTINGS (2000), CHAOS_WORKERS (3), CHAOS_KILL_EVERY_MS (2000),
  CHAOS_RUN_TIMEOUT_MS (600000), CHAOS_PAGE_BYTES (8000), CHAOS_PAGE_DELAY_MS (200),
  CHAOS_NO_SCHEDULER_ROUNDS (1), CHAOS_QUIET_MS (5000), CHAOS_REDIS (server | cluster),
${TIMING_USAGE}`;

interface Settings {
  rounds: number;
  postings: number;
  workers: number;
  killEveryMs: number;
  runTimeoutMs: number;
  pageBytes: number;
  pageDelayMs: number;
  noSchedulerRounds: number;
  quietMs: number;
  redis: 'server' | 'cluster';
  timing: ServiceTiming;
}

const progress = progressFor('kill');

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  return {
    rounds: integerFrom('CHAOS_ROUNDS', 3, { min: 1 }, USAGE),
    postings: integerFrom('CHAOS_POSTINGS', 2000, { min: 1 }, USAGE),
    workers: integerFrom('CHAOS_WORKERS', 3, { min: 1 }, USAGE),
    killEveryMs: integerFrom('CHAOS_KILL_EVERY_MS', 2000, { min: 100 }, USAGE),
    runTimeoutMs: integerFrom('CHAOS_RUN_TIMEOUT_MS', 600_000, { min: 1000 }, USAGE),
    pageBytes: integerFrom('CHAOS_PAGE_BYTES', 8000, { min: 0 }, USAGE),
    pageDelayMs: integerFrom('CHAOS_PAGE_DELAY_MS', 200, { min: 0 }, USAGE),
    noSchedulerRounds: integerFrom('CHAOS_NO_SCHEDULER_ROUNDS', 1, { min: 0 }, USAGE),
    quietMs: integerFrom('CHAOS_QUIET_MS', 5000, { min: 0 }, USAGE),
    redis: redisKindFrom(USAGE),
    timing: timingFrom(USAGE),
  };
}

interface Round extends Partial<RunVerdict> {
  round: number;
  /** Whether a scheduler (its reconciler) ran beside the workers. */
  scheduler: boolean;
  seconds: number;
  timedOut: boolean;
  kills: number;
  failures: string[];
}

async function check(settings: Settings, teardown: Teardown): Promise<number> {
  progress(`settings ${JSON.stringify(settings)}`);
  const stack =
    settings.redis === 'cluster'
      ? await createChaosStack('kill', settings.timing, teardown, progress, 'cluster')
      : await createChaosStack('kill', settings.timing, teardown, progress);
  const fixture = await startFixtureSites(
    Array.from({ length: settings.rounds }, (_, round) => ({
      postings: settings.postings,
      pageBytes: settings.pageBytes,
      responseDelayMs: settings.pageDelayMs,
      seed: 1000 + round,
    })),
    teardown,
    progress,
  );
  const workers = await startReplicas('worker', settings.workers, stack, teardown);
  progress(`${settings.workers} workers started`);
  let schedulers: Replicas | undefined;

  const rounds: Round[] = [];
  for (let round = 0; round < settings.rounds; round++) {
    if (round >= settings.noSchedulerRounds && !schedulers) {
      schedulers = await startReplicas('scheduler', 1, stack, teardown);
      progress('1 scheduler started beside the workers');
    }
    const label = `round ${round + 1}/${settings.rounds}${schedulers ? '' : ' (no scheduler)'}`;
    const site = await insertFixtureSite(
      stack.handle,
      `chaos-kill-${round + 1}`,
      fixture.sites[round]!,
    );
    const run = await startScrapeRun(
      { db: stack.handle.db, queues: stack.queues },
      { siteId: site.id, trigger: 'manual', correlationId: `chaos-kill-${round + 1}` },
    );
    progress(
      `${label}: run ${run.runId} started; killing a worker every ${settings.killEveryMs} ms`,
    );
    const killer = startKiller(workers, settings.killEveryMs, progress);
    const ended = await waitForRunEnd(stack.handle, run.id, settings.runTimeoutMs, progress, label);
    const victims = await killer.stop();
    progress(
      `${label}: ${ended.timedOut ? `not ended after ${Math.round(ended.seconds)} s` : `ended ${ended.run?.status} after ${Math.round(ended.seconds)} s`}, ${victims.length} kills; checking after ${settings.quietMs} ms of quiet`,
    );
    await sleep(settings.quietMs);
    const latest = await getRun(stack.handle.db, run.id);
    const processes = [...workers.all, ...(schedulers?.all ?? [])];
    const verdict = latest
      ? await verifyRun(stack.handle, latest, {
          postings: settings.postings,
          finalizedLogLines: finalizedLogLines(processes, latest),
        })
      : undefined;
    const failures = [
      ...(ended.timedOut ? [`run not ended within ${settings.runTimeoutMs} ms`] : []),
      ...(victims.length === 0
        ? ['no worker was killed while it ran: nothing was tested (more postings, or kill sooner)']
        : []),
      ...(verdict?.failures ?? []),
      // Every page is good: a posting in error was failed by a worker's death.
      ...(verdict && verdict.status !== 'succeeded' ? [`run ended ${verdict.status}`] : []),
      ...(verdict && (verdict.postings.error ?? 0) > 0
        ? [`${verdict.postings.error} postings in error`]
        : []),
    ].map((failure) => `${label} (${run.runId}): ${failure}`);
    rounds.push({
      round: round + 1,
      scheduler: schedulers !== undefined,
      ...verdict,
      seconds: round2(ended.seconds),
      timedOut: ended.timedOut,
      kills: victims.length,
      failures,
    });
    progress(
      `${label}: ${failures.length === 0 ? 'ok' : `${failures.length} failures`} ${JSON.stringify(verdict?.postings ?? {})}`,
    );
  }

  const failures = rounds.flatMap((round) => round.failures);
  failures.push(...(await verifyBodies(stack.handle)));
  // The change feed read from the start, as a consumer would: one `created` per posting, no gap
  // or repeat, and folded it gives the table. Each fixture page is read once, so each posting
  // that ended `ready` was changed once by its extraction: one `updated` each, no more.
  const changeFeed = await verifyChangeFeed(stack.handle.db);
  failures.push(...changeFeed.failures.map((failure) => `change feed: ${failure}`));
  const ready = rounds.reduce((sum, round) => sum + (round.postings?.ready ?? 0), 0);
  if ((changeFeed.byType.updated ?? 0) !== ready) {
    failures.push(
      `change feed: ${changeFeed.byType.updated ?? 0} updated events for ${ready} postings read`,
    );
  }
  for (const exit of [...workers.unexpectedExits(), ...(schedulers?.unexpectedExits() ?? [])])
    failures.push(`unexpected exit: ${exit}`);
  if (failures.length === 0) stack.passed();
  return report(progress, failures, {
    check: 'kill',
    pass: failures.length === 0,
    rounds,
    changeFeed: {
      events: changeFeed.events,
      byType: changeFeed.byType,
      postings: changeFeed.postings,
    },
    kills: workers.kills,
    settings,
    warnings: warningSummary([...workers.all, ...(schedulers?.all ?? [])]),
    logDir: failures.length === 0 ? null : stack.logDir,
    failures,
  });
}

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, check);
