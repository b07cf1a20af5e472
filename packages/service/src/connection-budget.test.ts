import { createRedisConnection, nodeOf, waitForRedis, type RedisClient } from '@gleaner/queue';
import { createTestDatabase, createTestRedisNamespace } from '@gleaner/testing';
import { createDb } from '@gleaner/db';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BUDGET_MARGIN,
  budgetKey,
  claimConnectionBudget,
  ConnectionBudgetExceededError,
  serverConnectionBudget,
  type BudgetClaim,
} from './connection-budget.js';

const namespace = createTestRedisNamespace('connection-budget');
const opened: RedisClient[] = [];

/**
 * A process's own connection, as each service has its producer connection: to one Redis, or to
 * a cluster when the suite runs on one (npm test's cluster pass).
 */
async function connection() {
  const redis = createRedisConnection(namespace.target, 'producer');
  opened.push(redis);
  await waitForRedis(redis);
  return redis;
}

afterAll(async () => {
  opened.forEach((redis) => redis.disconnect());
  await namespace.cleanup();
});

const fixed = (connections: number) => () =>
  Promise.resolve({ connections, source: 'DATABASE_MAX_CONNECTIONS' as const });

async function claim(prefix: string, pool: number, budget: number, waitMs = 0) {
  return claimConnectionBudget({
    redis: await connection(),
    prefix,
    service: 'worker',
    pool,
    budget: fixed(budget),
    waitMs,
    retryMs: 50,
  });
}

describe('the fleet connection budget', () => {
  it('lets pools in while they fit, refuses the one that would not, and makes room on release', async () => {
    const prefix = `${namespace.prefix}:fit`;
    const first = await claim(prefix, 4, 10);
    const second = await claim(prefix, 4, 10);
    expect(second.usedByOthers).toBe(4);
    const refused = await claim(prefix, 4, 10).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConnectionBudgetExceededError);
    expect((refused as Error).message).toMatch(
      /pool of 4 \(DATABASE_POOL_MAX\) and the 8 the rest of the fleet holds come to 12, over the budget of 10 \(DATABASE_MAX_CONNECTIONS\)/,
    );
    // Two fit exactly.
    const third = await claim(prefix, 2, 10);
    expect(third.usedByOthers).toBe(8);

    await first.release();
    await first.release();
    const fourth = await claim(prefix, 4, 10);
    expect(fourth.usedByOthers).toBe(6);
    await Promise.all([second, third, fourth].map((held) => held.release()));
    expect(await (await connection()).exists(budgetKey(prefix))).toBe(0);
  });

  it('drops the claim of a process whose connection is gone, at once', async () => {
    const prefix = `${namespace.prefix}:killed`;
    const killedConnection = await connection();
    await claimConnectionBudget({
      redis: killedConnection,
      prefix,
      service: 'worker',
      pool: 8,
      budget: fixed(10),
      waitMs: 0,
    });
    // Killed: its connection closes without a release. Its replacement waits, as a service does,
    // for Redis to see the close.
    killedConnection.disconnect();
    const replacement = await claim(prefix, 8, 10, 5_000);
    expect(replacement.usedByOthers).toBe(0);
    await replacement.release();
  });

  it('drops a claim that ran out without renewal, and waits for room up to its limit', async () => {
    const prefix = `${namespace.prefix}:expired`;
    const redis = await connection();
    // A live connection's claim that expires in 300 ms: a host that stopped renewing.
    const id = String(await nodeOf(redis, budgetKey(prefix))!.client('ID'));
    const { 0: seconds, 1: micros } = await redis.time();
    const expires = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) + 300;
    await redis.hset(budgetKey(prefix), 'worker:gone:1:abc', `8:${expires}:${id}`);

    await expect(claim(prefix, 8, 10)).rejects.toBeInstanceOf(ConnectionBudgetExceededError);
    const waited = await claim(prefix, 8, 10, 5_000);
    expect(waited.usedByOthers).toBe(0);
    expect(Object.keys(await redis.hgetall(budgetKey(prefix)))).toEqual([waited.member]);
    await waited.release();
  });

  it('keeps a claim alive by renewing it while the process runs', async () => {
    const prefix = `${namespace.prefix}:renewed`;
    const held: BudgetClaim = await claimConnectionBudget({
      redis: await connection(),
      prefix,
      service: 'api',
      pool: 6,
      budget: fixed(10),
      ttlMs: 300,
      waitMs: 0,
    });
    await new Promise((resolve) => setTimeout(resolve, 900));
    await expect(claim(prefix, 6, 10)).rejects.toBeInstanceOf(ConnectionBudgetExceededError);
    await held.release();
  });

  it('leaves no claim behind when released while a renewal is under way', async () => {
    const prefix = `${namespace.prefix}:released`;
    const redis = await connection();
    let renewalStarted!: () => void;
    const renewalUnderWay = new Promise<void>((resolve) => (renewalStarted = resolve));
    // The same connection, its renewals held back a while: the release comes in between.
    const slowRenewals = new Proxy(redis, {
      get(target, property, receiver) {
        if (property !== 'eval') return Reflect.get(target, property, receiver) as unknown;
        return async (...args: Parameters<RedisClient['eval']>) => {
          // (script, keys, key, member, pool, budget, ttl, renew, …)
          if (args[7] === '1') {
            renewalStarted();
            await new Promise((resolve) => setTimeout(resolve, 300));
          }
          return target.eval(...args);
        };
      },
    });
    const held = await claimConnectionBudget({
      redis: slowRenewals,
      prefix,
      service: 'api',
      pool: 6,
      budget: fixed(10),
      ttlMs: 150,
      waitMs: 0,
    });
    await renewalUnderWay;
    await held.release();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await redis.exists(budgetKey(prefix))).toBe(0);
  });

  it('says why it could not claim when Redis cannot be asked', async () => {
    const redis = await connection();
    redis.disconnect();
    await expect(
      claimConnectionBudget({
        redis,
        prefix: `${namespace.prefix}:down`,
        service: 'worker',
        pool: 2,
        budget: fixed(10),
        waitMs: 200,
        retryMs: 50,
      }),
    ).rejects.toThrow(/could not claim Postgres connections from the fleet's budget: /);
  });

  it("reads the server's budget as max_connections less the reserved ones and a margin", async () => {
    const database = await createTestDatabase('connection_budget');
    const handle = createDb({ url: database.url, poolMax: 1, applicationName: 'budget-test' });
    try {
      const { rows } = await handle.pool.query<{ max: number; reserved: number }>(
        `SELECT current_setting('max_connections')::int AS max,
                current_setting('superuser_reserved_connections')::int AS reserved`,
      );
      expect(await serverConnectionBudget(handle.pool)).toBe(
        rows[0]!.max - rows[0]!.reserved - BUDGET_MARGIN,
      );
    } finally {
      await handle.close();
      await database.drop();
    }
  });
});
