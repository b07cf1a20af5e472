import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@gleaner/logger';
import {
  noRepairs,
  type PassReport,
  type RepairCounts,
  type SchedulerReplicaStatus,
} from '@gleaner/queue';

export interface SchedulerLoopOptions {
  replica: string;
  intervalMs: number;
  logger: Logger;
  /** One pass (pass.ts): never throws, reports what it could not do. */
  pass(trigger: PassReport['trigger'], site?: string): Promise<PassReport>;
  /** Shares the replica's status after each pass (Redis, for `GET /scheduler/status`). */
  publish(status: SchedulerReplicaStatus): Promise<void>;
}

export interface SchedulerLoop {
  start(): void;
  /** Stops the loop, mid-sleep at once, and waits for a pass under way. */
  stop(): Promise<void>;
  /** Runs a pass now, after the one under way if any (`POST /scheduler/run`). */
  runNow(site?: string): Promise<PassReport>;
  status(): SchedulerReplicaStatus & { healthy: boolean };
}

const addRepairs = (total: RepairCounts, pass: RepairCounts) => {
  for (const key of Object.keys(total) as (keyof RepairCounts)[]) total[key] += pass[key];
};

/**
 * The scheduler's pass loop: one pass per interval, never two at once in a replica (passes asked
 * for through the API wait for the one under way), stoppable mid-sleep. After each pass the
 * replica's status, with the pass report and its repairs so far, is published.
 */
export function createSchedulerLoop(options: SchedulerLoopOptions): SchedulerLoop {
  const { logger, intervalMs } = options;
  const controller = new AbortController();
  const status: SchedulerReplicaStatus = {
    replica: options.replica,
    host: hostname(),
    pid: process.pid,
    startedAt: new Date().toISOString(),
    seenAt: new Date().toISOString(),
    intervalMs,
    passes: 0,
    lastPass: null,
    repairsTotal: noRepairs(),
  };
  let looping: Promise<void> | undefined;
  let queue: Promise<unknown> = Promise.resolve();

  function runPass(trigger: PassReport['trigger'], site?: string): Promise<PassReport> {
    const next = queue.then(async () => {
      const report = await options.pass(trigger, site);
      status.passes += 1;
      status.lastPass = report;
      status.seenAt = new Date().toISOString();
      addRepairs(status.repairsTotal, report.repairs);
      const log = report.errors.length > 0 ? logger.warn.bind(logger) : logger.debug.bind(logger);
      log(
        {
          trigger,
          site,
          durationMs: report.durationMs,
          due: report.due,
          started: report.startedCount,
          skipped: report.skipped,
          repairs: report.repairs,
          errors: report.errors,
        },
        report.errors.length > 0 ? 'scheduler pass incomplete' : 'scheduler pass',
      );
      await options.publish({ ...status }).catch((error: unknown) => {
        logger.warn({ err: error }, 'could not publish the scheduler status');
      });
      return report;
    });
    queue = next.catch(() => undefined);
    return next;
  }

  async function loop(): Promise<void> {
    while (!controller.signal.aborted) {
      await runPass('interval').catch((error: unknown) => {
        logger.error({ err: error }, 'scheduler pass failed');
      });
      try {
        await sleep(intervalMs, undefined, { signal: controller.signal });
      } catch {
        return; // aborted: stop() was called
      }
    }
  }

  return {
    start() {
      looping ??= loop();
    },
    async stop() {
      controller.abort();
      await looping;
      await queue;
    },
    runNow: (site) => runPass('request', site),
    status: () => ({
      ...status,
      healthy: status.lastPass === null || status.lastPass.errors.length === 0,
    }),
  };
}
