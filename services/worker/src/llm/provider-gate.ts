import { createHash, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProviderRateLimit } from '@gleaner/llm';
import type { Cluster, Redis } from 'ioredis';
import { LlmProviderBusyError, LlmRequestTooLargeError } from './errors.js';

/**
 * The LLM provider's rate limits (Groq: requests and tokens per minute, per organization and
 * model), shared by every worker replica through Redis so that together they stay under them
 * instead of each learning the limits from 429s. See README.md for the accounting.
 */
export interface ProviderGateOptions {
  redis: Redis | Cluster;
  /** Key prefix (the queue prefix); keys are `<prefix>:llm:provider:{<name>}:<part>`. */
  prefix: string;
  /** Whose limits these are; Groq's are per model. Default 'default'. */
  name?: string;
  /** ≤ 0: no request limit. */
  requestsPerMinute: number;
  /** ≤ 0: no token limit. */
  tokensPerMinute: number;
  /** The rolling window's length; shorter in benches to scale time. Default 60 000. */
  minuteMs?: number;
}

export type ProviderReservation =
  { granted: true; reservationId: string } | { granted: false; waitMs: number };

export interface ProviderGate {
  /**
   * One call's room in the window now, or how long until there would be: granted when, over the
   * last `minuteMs`, requests + 1 ≤ requestsPerMinute and tokens + estimatedTokens ≤
   * tokensPerMinute and no block is active. Throws `LlmRequestTooLargeError` when the estimate
   * alone exceeds tokensPerMinute.
   */
  reserve(estimatedTokens: number): Promise<ProviderReservation>;
  /**
   * Reserves, sleeping between tries, and resolves with the reservation id. Rejects with the
   * signal's reason when aborted, and with `LlmProviderBusyError` (its `waitMs`) when the time
   * waited plus the next wait would exceed `maxWaitMs` (default no bound): delay the job then.
   */
  acquire(
    estimatedTokens: number,
    options?: { signal?: AbortSignal; maxWaitMs?: number },
  ): Promise<string>;
  /**
   * After the call: replaces the estimate by `actualTokens`, counts the call from now (the
   * provider counted it from some moment before its answer), and blocks every replica until
   * the provider's reset when it said a remaining count is 0, or for its retry-after. A
   * provider token limit (`x-ratelimit-limit-tokens`) lower than the configured one, or given
   * when none is configured, becomes the gate's (Groq's request limit header counts per day, so
   * only the token limit is taken).
   */
  settle(
    reservationId: string,
    outcome?: {
      actualTokens?: number;
      /** What the provider's answer said of its limits (`parseProviderRateLimit`). */
      rateLimit?: ProviderRateLimit;
      /** A 429's wait (`LlmProviderError.retryAfterMs`). */
      retryAfterMs?: number;
    },
  ): Promise<void>;
  /** Nobody is granted before `untilEpochMs` (Redis's clock); the latest of all blocks holds. */
  block(untilEpochMs: number): Promise<void>;
  /** Nobody is granted for `ms` from now on Redis's clock: a 429's retry-after. */
  blockFor(ms: number): Promise<void>;
  /** The active block's end (epoch ms, Redis's clock), or null. */
  blockedUntil(): Promise<number | null>;
}

// ---------------------------------------------------------------------------------------------
// Scripts. KEYS: window (zset: reservation id → when it counts from), tokens (hash: reservation
// id → tokens), state (hash: used = sum of tokens, blocked = epoch ms). The clock is Redis's.

const prologue = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local minute = tonumber(ARGV[1])
-- Entries that counted from minute ago or earlier leave the window, in bounded batches.
local function prune()
  local edge = now - minute
  while true do
    local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', edge, 'LIMIT', 0, 500)
    if #old == 0 then break end
    local freed = 0
    local amounts = redis.call('HMGET', KEYS[2], unpack(old))
    for i = 1, #old do freed = freed + (tonumber(amounts[i]) or 0) end
    redis.call('HDEL', KEYS[2], unpack(old))
    redis.call('ZREM', KEYS[1], unpack(old))
    redis.call('HINCRBY', KEYS[3], 'used', -freed)
  end
  if redis.call('ZCARD', KEYS[1]) == 0 then redis.call('HSET', KEYS[3], 'used', 0) end
end
local function blockedUntil() return tonumber(redis.call('HGET', KEYS[3], 'blocked')) or 0 end
-- The window outlives its newest entry by a minute; the state outlives the block too.
local function expire()
  redis.call('PEXPIRE', KEYS[1], minute + 1000)
  redis.call('PEXPIRE', KEYS[2], minute + 1000)
  redis.call('PEXPIRE', KEYS[3], math.max(minute, blockedUntil() - now) + 1000)
end
`;

/**
 * reserve — ARGV: minuteMs, requestsPerMinute, tokensPerMinute, id, estimated.
 * Returns {1, 0} granted, {0, waitMs} refused, {-1, tokensPerMinute} never fits.
 */
const reserveSource = `${prologue}
local rpm, tpm = tonumber(ARGV[2]), tonumber(ARGV[3])
local id, estimated = ARGV[4], tonumber(ARGV[5])
-- The provider's own token limit (x-ratelimit-limit-tokens) when it is the lower one.
local learned = tonumber(redis.call('HGET', KEYS[3], 'tpm')) or 0
if learned > 0 and (tpm <= 0 or learned < tpm) then tpm = learned end
if tpm > 0 and estimated > tpm then return {-1, tpm} end
prune()
local blocked = blockedUntil()
if blocked > now then return {0, blocked - now} end
local count = redis.call('ZCARD', KEYS[1])
local used = tonumber(redis.call('HGET', KEYS[3], 'used')) or 0
local wait = 0
if rpm > 0 and count + 1 > rpm then
  -- One slot frees when the (count - rpm + 1)th oldest entry leaves.
  local entry = redis.call('ZRANGE', KEYS[1], count - rpm, count - rpm, 'WITHSCORES')
  wait = tonumber(entry[2]) + minute - now
end
if tpm > 0 and used + estimated > tpm then
  -- The estimate fits once enough of the oldest entries' tokens have left.
  local excess, offset, at = used + estimated - tpm, 0, 0
  while excess > 0 do
    local batch = redis.call('ZRANGE', KEYS[1], offset, offset + 199, 'WITHSCORES')
    if #batch == 0 then break end
    local ids = {}
    for i = 1, #batch, 2 do ids[#ids + 1] = batch[i] end
    local amounts = redis.call('HMGET', KEYS[2], unpack(ids))
    for i = 1, #ids do
      excess = excess - (tonumber(amounts[i]) or 0)
      at = tonumber(batch[2 * i]) + minute - now
      if excess <= 0 then break end
    end
    offset = offset + 200
  end
  wait = math.max(wait, at)
end
if wait > 0 then return {0, wait} end
redis.call('ZADD', KEYS[1], now, id)
redis.call('HSET', KEYS[2], id, estimated)
redis.call('HINCRBY', KEYS[3], 'used', estimated)
expire()
return {1, 0}
`;

/**
 * settle — ARGV: minuteMs, id ('' = none), actualTokens (-1 = keep the estimate),
 * blockForMs (-1 = none), blockUntil (epoch ms, -1 = none), limitTokens (the provider's tokens
 * per minute, -1 = not said). Returns the block's end or 0.
 */
const settleSource = `${prologue}
local id, actual = ARGV[2], tonumber(ARGV[3])
local blockFor, blockUntil = tonumber(ARGV[4]), tonumber(ARGV[5])
local limitTokens = tonumber(ARGV[6])
if limitTokens > 0 then
  local known = tonumber(redis.call('HGET', KEYS[3], 'tpm')) or 0
  if known == 0 or limitTokens < known then redis.call('HSET', KEYS[3], 'tpm', limitTokens) end
end
prune()
if id ~= '' and redis.call('ZSCORE', KEYS[1], id) then
  redis.call('ZADD', KEYS[1], 'GT', now, id)
  if actual >= 0 then
    local old = tonumber(redis.call('HGET', KEYS[2], id)) or 0
    redis.call('HSET', KEYS[2], id, actual)
    redis.call('HINCRBY', KEYS[3], 'used', actual - old)
  end
end
local blocked = blockedUntil()
local upto = math.max(blocked, blockUntil)
if blockFor >= 0 then upto = math.max(upto, now + blockFor) end
if upto > blocked then redis.call('HSET', KEYS[3], 'blocked', upto) end
expire()
if upto > now then return upto end
return 0
`;

interface LuaScript {
  source: string;
  sha: string;
}

const script = (source: string): LuaScript => ({
  source,
  sha: createHash('sha1').update(source).digest('hex'),
});
const reserveScript = script(reserveSource);
const settleScript = script(settleSource);

function limitOption(name: string, value: number): number {
  if (!Number.isFinite(value))
    throw new RangeError(`provider gate ${name} must be a number, got ${value}`);
  return value <= 0 ? 0 : Math.floor(value);
}

function nonNegative(value: number | undefined): number {
  return value === undefined || !Number.isFinite(value) || value < 0 ? -1 : Math.ceil(value);
}

export function createProviderGate(options: ProviderGateOptions): ProviderGate {
  const { redis, prefix } = options;
  const name = options.name ?? 'default';
  if (prefix.includes('{') || /[{}]/.test(name) || name === '')
    throw new RangeError(`provider gate prefix and name must not contain a hash tag`);
  const requestsPerMinute = limitOption('requestsPerMinute', options.requestsPerMinute);
  const tokensPerMinute = limitOption('tokensPerMinute', options.tokensPerMinute);
  const minuteMs = options.minuteMs ?? 60_000;
  if (!Number.isSafeInteger(minuteMs) || minuteMs <= 0)
    throw new RangeError(`provider gate minuteMs must be an integer > 0, got ${minuteMs}`);
  // One hash tag: in Redis Cluster the three keys share a slot, so one script may touch them.
  const base = `${prefix}:llm:provider:{${name}}`;
  const keys = [`${base}:window`, `${base}:tokens`, `${base}:state`];

  async function run(lua: LuaScript, args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(lua.sha, keys.length, ...keys, minuteMs, ...args);
    } catch (error) {
      // First use on this server (or after SCRIPT FLUSH / a failover): send the body once.
      if (error instanceof Error && error.message.startsWith('NOSCRIPT'))
        return redis.eval(lua.source, keys.length, ...keys, minuteMs, ...args);
      throw error;
    }
  }

  async function settle(
    reservationId: string,
    block: { actualTokens?: number; forMs?: number; untilEpochMs?: number; limitTokens?: number },
  ): Promise<void> {
    await run(settleScript, [
      reservationId,
      nonNegative(block.actualTokens),
      nonNegative(block.forMs),
      nonNegative(block.untilEpochMs),
      nonNegative(block.limitTokens),
    ]);
  }

  const gate: ProviderGate = {
    async reserve(estimatedTokens) {
      const estimated = Math.max(0, Math.ceil(estimatedTokens));
      const reservationId = randomUUID();
      const [granted, waitMs] = (await run(reserveScript, [
        requestsPerMinute,
        tokensPerMinute,
        reservationId,
        estimated,
      ])) as [number, number];
      if (granted === -1) throw new LlmRequestTooLargeError(estimated, waitMs);
      return granted === 1 ? { granted: true, reservationId } : { granted: false, waitMs };
    },

    async acquire(estimatedTokens, { signal, maxWaitMs = Number.POSITIVE_INFINITY } = {}) {
      const startedAt = performance.now();
      for (;;) {
        signal?.throwIfAborted();
        const reservation = await gate.reserve(estimatedTokens);
        if (reservation.granted) return reservation.reservationId;
        const waited = performance.now() - startedAt;
        if (waited + reservation.waitMs > maxWaitMs)
          throw new LlmProviderBusyError(reservation.waitMs);
        // Replicas waiting for the same freed slot spread out over up to 10 % of the wait
        // (at most 250 ms) instead of all asking at once; the losers are told the next wait.
        const jitter = Math.random() * Math.min(250, reservation.waitMs * 0.1);
        try {
          await sleep(reservation.waitMs + jitter, undefined, signal ? { signal } : undefined);
        } catch (error) {
          // The signal's own reason (a timeout, a cancelled run) rather than a bare AbortError.
          signal?.throwIfAborted();
          throw error;
        }
      }
    },

    async settle(reservationId, outcome = {}) {
      const limit = outcome.rateLimit ?? {};
      let forMs: number | undefined = outcome.retryAfterMs;
      if (limit.remainingRequests === 0 && limit.resetRequestsMs !== undefined)
        forMs = Math.max(forMs ?? 0, limit.resetRequestsMs);
      if (limit.remainingTokens === 0 && limit.resetTokensMs !== undefined)
        forMs = Math.max(forMs ?? 0, limit.resetTokensMs);
      await settle(reservationId, {
        actualTokens: outcome.actualTokens,
        forMs,
        limitTokens: limit.limitTokens,
      });
    },

    async block(untilEpochMs) {
      await settle('', { untilEpochMs });
    },

    async blockFor(ms) {
      await settle('', { forMs: ms });
    },

    async blockedUntil() {
      const [until, [seconds, micros]] = await Promise.all([
        redis.hget(keys[2]!, 'blocked'),
        redis.time(),
      ]);
      const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      return until !== null && Number(until) > now ? Number(until) : null;
    },
  };
  return gate;
}
