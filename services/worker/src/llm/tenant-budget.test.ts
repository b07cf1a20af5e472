import { createTestRedisNamespace } from '@gleaner/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenantTokenBudget } from './tenant-budget.js';

const namespace = createTestRedisNamespace('llm-budget');
const { prefix } = namespace;
let redis: Redis;

beforeAll(() => {
  redis = new Redis(namespace.url, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  await namespace.cleanup();
  redis.disconnect();
});

describe('createTenantTokenBudget', () => {
  it('counts each tenant apart and rolls over at UTC midnight', async () => {
    const budget = createTenantTokenBudget({ redis, prefix, dailyTokens: 1_000 });
    const lateEvening = Date.parse('2026-03-01T23:59:59.900Z');
    const justAfterMidnight = Date.parse('2026-03-02T00:00:00.000Z');

    expect(await budget.remaining('acme', lateEvening)).toBe(1_000);
    expect(await budget.charge('acme', 700, lateEvening)).toBe(300);
    expect(await budget.charge('acme', 400.2, lateEvening)).toBe(0);
    expect(await budget.remaining('acme', lateEvening)).toBe(0);
    expect(await budget.remaining('globex', lateEvening)).toBe(1_000);

    expect(budget.nextResetAt(lateEvening)).toBe(justAfterMidnight);
    expect(budget.nextResetAt(justAfterMidnight)).toBe(Date.parse('2026-03-03T00:00:00Z'));
    expect(await budget.remaining('acme', justAfterMidnight)).toBe(1_000);

    const key = `${prefix}:llm:tokens:acme:2026-03-01`;
    expect(await redis.get(key)).toBe('1101');
    // Kept a day past its own: between 1 and 2 days from the charge.
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(86_000_000);
    expect(ttl).toBeLessThanOrEqual(2 * 86_400_000);
  });

  it('is unlimited at 0 or below', async () => {
    const budget = createTenantTokenBudget({ redis, prefix, dailyTokens: 0 });
    expect(await budget.remaining('acme')).toBe(Number.POSITIVE_INFINITY);
    expect(await budget.charge('unlimited', 1_000_000)).toBe(Number.POSITIVE_INFINITY);
  });
});
