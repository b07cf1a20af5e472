import { setTimeout as sleep } from 'node:timers/promises';
import { pingDb } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import type { Redis } from 'ioredis';
import type pg from 'pg';

export interface SchedulerLoopOptions {
  intervalMs: number;
  logger: Logger;
  pool: pg.Pool;
  redis: Redis;
}

export interface SchedulerStatus {
  healthy: boolean;
  passes: number;
  lastPassAt: string | null;
  lastError: string | null;
}

/**
 * The scheduler's pass loop: one pass per interval, never overlapping, stoppable mid-sleep.
 * A pass currently verifies that Redis and Postgres answer; picking due `site_schedules` and
 * reconciling rows Redis forgot run inside this same loop.
 */
export function createSchedulerLoop(options: SchedulerLoopOptions) {
  const controller = new AbortController();
  const status: SchedulerStatus = { healthy: true, passes: 0, lastPassAt: null, lastError: null };
  let running: Promise<void> | undefined;

  async function pass(): Promise<void> {
    await Promise.all([options.redis.ping(), pingDb(options.pool)]);
  }

  async function loop(): Promise<void> {
    while (!controller.signal.aborted) {
      try {
        await pass();
        status.healthy = true;
        status.lastError = null;
      } catch (error) {
        status.healthy = false;
        status.lastError = (error as Error).message;
        options.logger.warn({ err: error }, 'scheduler pass failed');
      }
      status.passes += 1;
      status.lastPassAt = new Date().toISOString();
      try {
        await sleep(options.intervalMs, undefined, { signal: controller.signal });
      } catch {
        return; // aborted: stop() was called
      }
    }
  }

  return {
    start() {
      running ??= loop();
    },
    async stop() {
      controller.abort();
      await running;
    },
    status: (): SchedulerStatus => ({ ...status }),
  };
}
