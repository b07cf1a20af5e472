import { PassThrough } from 'node:stream';
import { createLogger } from '@gleaner/logger';
import { noRepairs, type PassReport, type SchedulerReplicaStatus } from '@gleaner/queue';
import { describe, expect, it } from 'vitest';
import { createSchedulerLoop } from './loop.js';

const logger = createLogger({
  service: 'scheduler',
  level: 'silent',
  destination: new PassThrough(),
});

function report(trigger: PassReport['trigger'], changes: Partial<PassReport> = {}): PassReport {
  return {
    replica: 'test',
    trigger,
    site: null,
    startedAt: new Date().toISOString(),
    durationMs: 1,
    due: 0,
    started: [],
    startedCount: 0,
    skipped: {},
    repairs: { ...noRepairs(), crawlRequeued: 2 },
    redis: 'ok',
    postgres: 'ok',
    errors: [],
    ...changes,
  };
}

describe('scheduler loop', () => {
  it('passes, publishes its status with the repairs so far, and stops mid-sleep at once', async () => {
    const published: SchedulerReplicaStatus[] = [];
    const loop = createSchedulerLoop({
      replica: 'test',
      intervalMs: 60_000,
      logger,
      pass: async (trigger) => report(trigger),
      publish: async (status) => {
        published.push(status);
      },
    });
    expect(loop.status()).toMatchObject({ healthy: true, passes: 0, lastPass: null });
    loop.start();
    loop.start(); // a second start does not start a second loop
    await expect.poll(() => loop.status().passes).toBe(1);
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ replica: 'test', passes: 1, intervalMs: 60_000 });

    // A pass asked for through the API runs at once, between the loop's own passes.
    const forced = await loop.runNow('some-site');
    expect(forced.trigger).toBe('request');
    expect(loop.status()).toMatchObject({ passes: 2, repairsTotal: { crawlRequeued: 4 } });

    const started = performance.now();
    await loop.stop();
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(loop.status().passes).toBe(2);
  });

  it('never runs two passes at once, and reports an incomplete pass as unhealthy', async () => {
    let running = 0;
    let most = 0;
    const loop = createSchedulerLoop({
      replica: 'test',
      intervalMs: 10,
      logger,
      pass: async (trigger) => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running -= 1;
        return report(trigger, { redis: 'unavailable', errors: ['redis: down'] });
      },
      // A status that cannot be published does not stop the loop.
      publish: () => Promise.reject(new Error('redis down')),
    });
    loop.start();
    await Promise.all([loop.runNow(), loop.runNow()]);
    await expect.poll(() => loop.status().passes).toBeGreaterThanOrEqual(4);
    await loop.stop();
    expect(most).toBe(1);
    expect(loop.status()).toMatchObject({ healthy: false, lastPass: { errors: ['redis: down'] } });
  });
});
