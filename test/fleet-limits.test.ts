import { createQueues, closeQueues, createRedisConnection, type Queues } from '@gleaner/queue';
import { createTestRedisNamespace, waitForLog, type ServiceProcess } from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useServiceProcesses } from './support/service-processes.js';

/**
 * Limits that hold across the fleet, as worker processes meet them. A worker sets the fleet-wide
 * caps of the queues it serves from FLEET_CONCURRENCY_* when it starts (extract's default is seed
 * 000's 5); the replica started last sets them. That BullMQ then holds every replica to a cap is
 * packages/queue's fleet-concurrency test. A worker whose Postgres pool would take the fleet past
 * DATABASE_MAX_CONNECTIONS does not start (packages/service's connection-budget test has the rest).
 */
const fleet = useServiceProcesses('fleet-limits');
/** A fleet of its own for the budget test: the other tests' workers hold claims under theirs. */
const budgetNamespace = createTestRedisNamespace('fleet-limits-budget');
let redis: Redis;
let queues: Queues;

beforeAll(() => {
  redis = createRedisConnection(fleet.namespace.url, 'producer');
  queues = createQueues(redis, fleet.namespace.prefix);
});

afterAll(async () => {
  if (queues) await closeQueues(queues);
  redis?.disconnect();
  await budgetNamespace.cleanup();
});

function worker(env: Record<string, string>): ServiceProcess {
  return fleet.start('worker', {
    WORKER_QUEUES: 'extract,backfill',
    DATABASE_POOL_MAX: '2',
    ...env,
  });
}

describe('a worker process', () => {
  it('sets the fleet-wide caps of the queues it serves, and a later replica sets them anew', async () => {
    const first = worker({});
    await waitForLog(first, 'fleet-wide concurrency set');
    expect(await queues.extract.getGlobalConcurrency()).toBe(5);
    expect(await queues.backfill.getGlobalConcurrency()).toBe(1);
    // Queues it does not serve are left alone.
    expect(await queues.crawl.getGlobalConcurrency()).toBeNull();

    const second = worker({ FLEET_CONCURRENCY_EXTRACT: '0' });
    await waitForLog(second, 'fleet-wide concurrency set');
    expect(await queues.extract.getGlobalConcurrency()).toBeNull();
  });

  it('does not start when its pool would take the fleet past its Postgres budget', async () => {
    const budget = {
      QUEUE_PREFIX: budgetNamespace.prefix,
      DATABASE_POOL_MAX: '2',
      DATABASE_MAX_CONNECTIONS: '3',
    };
    const first = worker(budget);
    await waitForLog(first, 'worker started');
    expect(
      first.logs.find((line) => line.msg === 'postgres connections claimed from the fleet budget'),
    ).toMatchObject({ pool: 2, budget: 3 });

    const second = worker(budget);
    const code = await new Promise<number | null>((resolve) => second.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(second.stderr()).toMatch(
      /pool of 2 \(DATABASE_POOL_MAX\) and the \d+ the rest of the fleet holds .* over the budget of 3 \(DATABASE_MAX_CONNECTIONS\)/,
    );

    // Once the first has stopped, its claim is gone and another starts.
    expect(await first.stop()).toBe(0);
    const third = worker(budget);
    await waitForLog(third, 'worker started');
    // Stopped here, so that nothing writes under the budget's prefix once it is cleaned up.
    expect(await third.stop()).toBe(0);
  });

  it('refuses a negative cap, naming the setting', async () => {
    const refused = worker({ FLEET_CONCURRENCY_EXTRACT: '-1' });
    const code = await new Promise<number | null>((resolve) => refused.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(refused.stderr()).toMatch(/FLEET_CONCURRENCY_EXTRACT/);
  });
});
