import { tenantTokensKey } from '@gleaner/queue';
import type { Cluster, Redis } from 'ioredis';

/**
 * Each tenant's LLM tokens per UTC day, so one tenant's backlog cannot spend everyone's
 * provider quota. One counter per tenant and day, `<prefix>:llm:tokens:<tenant>:<YYYY-MM-DD>`,
 * that expires a day after its day ends (kept for a day of inspection, never left behind).
 */
export interface TenantTokenBudgetOptions {
  redis: Redis | Cluster;
  prefix: string;
  /** Tokens per tenant per UTC day; ≤ 0: unlimited. */
  dailyTokens: number;
}

export interface TenantTokenBudget {
  /** Tokens the tenant may still spend today (UTC); Infinity when unlimited, never below 0. */
  remaining(tenant: string, now?: number): Promise<number>;
  /** Adds spent tokens to the tenant's day; returns what remains of it (as `remaining`). */
  charge(tenant: string, tokens: number, now?: number): Promise<number>;
  /** The next UTC midnight after `now` (epoch ms): when every tenant's budget is whole again. */
  nextResetAt(now?: number): number;
}

const DAY_MS = 86_400_000;

export function createTenantTokenBudget(options: TenantTokenBudgetOptions): TenantTokenBudget {
  const { redis, prefix } = options;
  if (!Number.isFinite(options.dailyTokens))
    throw new RangeError(`tenant dailyTokens must be a number, got ${options.dailyTokens}`);
  const dailyTokens = options.dailyTokens <= 0 ? 0 : Math.floor(options.dailyTokens);

  const keyOf = (tenant: string, now: number): string => {
    if (tenant === '') throw new RangeError('tenant budget needs a tenant id');
    return tenantTokensKey(prefix, tenant, now);
  };
  const left = (used: number): number =>
    dailyTokens === 0 ? Number.POSITIVE_INFINITY : Math.max(0, dailyTokens - used);
  const nextResetAt = (now = Date.now()): number => (Math.floor(now / DAY_MS) + 1) * DAY_MS;

  return {
    async remaining(tenant, now = Date.now()) {
      const used = await redis.get(keyOf(tenant, now));
      return left(used === null ? 0 : Number(used));
    },

    async charge(tenant, tokens, now = Date.now()) {
      const key = keyOf(tenant, now);
      const amount = Math.max(0, Math.ceil(tokens));
      // Relative, so that a `now` from a test does not make the key expire at once.
      const results = await redis
        .multi()
        .incrby(key, amount)
        .pexpire(key, nextResetAt(now) + DAY_MS - now)
        .exec();
      const [error, used] = results?.[0] ?? [new Error('tenant budget charge was not run'), 0];
      if (error) throw error;
      return left(Number(used));
    },

    nextResetAt,
  };
}
