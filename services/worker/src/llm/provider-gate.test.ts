import { setTimeout as sleep } from 'node:timers/promises';
import {
  buildResumeText,
  createTestRedisNamespace,
  llmPromptTokens,
  startLlmServer,
  type FixtureLlmServer,
} from '@gleaner/testing';
import { parseProviderRateLimit } from '@gleaner/llm';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LlmProviderBusyError, LlmRequestTooLargeError } from './errors.js';
import { createProviderGate, type ProviderGateOptions } from './provider-gate.js';

/**
 * The provider gate against real Redis. Two gates on two connections stand for two worker
 * replicas; the LLM fixture server stands for Groq, enforcing the same limits.
 */
const namespace = createTestRedisNamespace('llm-gate');
/** One Redis connection per replica. */
let replicaRedis: [Redis, Redis];
let gateCounter = 0;
const servers: FixtureLlmServer[] = [];

beforeAll(() => {
  replicaRedis = [
    new Redis(namespace.url, { maxRetriesPerRequest: 1 }),
    new Redis(namespace.url, { maxRetriesPerRequest: 1 }),
  ];
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

afterAll(async () => {
  await namespace.cleanup();
  for (const redis of replicaRedis) redis.disconnect();
});

/** Two replicas' gates over the same limits (a fresh name per test). */
function twoReplicas(limits: Omit<ProviderGateOptions, 'redis' | 'prefix' | 'name'>) {
  const name = `model-${++gateCounter}`;
  return replicaRedis.map((redis) =>
    createProviderGate({ redis, prefix: namespace.prefix, name, ...limits }),
  ) as [ReturnType<typeof createProviderGate>, ReturnType<typeof createProviderGate>];
}

describe('createProviderGate', () => {
  it('grants no more requests across replicas than the limit, and says when the next fits', async () => {
    const [a, b] = twoReplicas({ requestsPerMinute: 5, tokensPerMinute: 0 });
    const decisions = await Promise.all(
      Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? a : b).reserve(10)),
    );
    expect(decisions.filter((decision) => decision.granted)).toHaveLength(5);
    for (const decision of decisions) {
      if (decision.granted) continue;
      expect(decision.waitMs).toBeGreaterThan(59_000);
      expect(decision.waitMs).toBeLessThanOrEqual(60_000);
    }
  });

  it('counts estimated tokens until settled with actual usage', async () => {
    const [a, b] = twoReplicas({ requestsPerMinute: 0, tokensPerMinute: 100 });
    const first = await a.reserve(60);
    expect(first.granted).toBe(true);
    expect((await b.reserve(50)).granted).toBe(false);
    if (first.granted) await a.settle(first.reservationId, { actualTokens: 30 });
    expect((await b.reserve(50)).granted).toBe(true);
    expect((await a.reserve(25)).granted).toBe(false);
    await expect(a.reserve(101)).rejects.toBeInstanceOf(LlmRequestTooLargeError);
  });

  it('frees the window after minuteMs', async () => {
    const [a, b] = twoReplicas({ requestsPerMinute: 2, tokensPerMinute: 0, minuteMs: 300 });
    expect((await a.reserve(1)).granted).toBe(true);
    expect((await b.reserve(1)).granted).toBe(true);
    const refused = await a.reserve(1);
    expect(refused.granted).toBe(false);
    if (!refused.granted) await sleep(refused.waitMs + 5);
    expect((await b.reserve(1)).granted).toBe(true);
  });

  it('has no limit of a kind configured at 0 or below', async () => {
    const [a] = twoReplicas({ requestsPerMinute: 0, tokensPerMinute: -1 });
    const decisions = await Promise.all(Array.from({ length: 50 }, () => a.reserve(10_000)));
    expect(decisions.every((decision) => decision.granted)).toBe(true);
  });

  it('makes every replica honour a block set by one of them', async () => {
    const [a, b] = twoReplicas({ requestsPerMinute: 100, tokensPerMinute: 0 });
    await a.blockFor(300);
    const refused = await b.reserve(1);
    expect(refused.granted).toBe(false);
    if (!refused.granted) {
      expect(refused.waitMs).toBeGreaterThan(250);
      expect(refused.waitMs).toBeLessThanOrEqual(300);
    }
    expect(await b.blockedUntil()).toBeGreaterThan(Date.now() + 200);
    // A shorter block does not shorten the longer one.
    await b.blockFor(50);
    const startedAt = Date.now();
    await b.acquire(1);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(200);
    expect(await a.blockedUntil()).toBeNull();
    await a.block(Date.now() + 200);
    expect((await b.reserve(1)).granted).toBe(false);
  });

  it("takes the provider's token limit from its headers when it is the lower one", async () => {
    const [a, b] = twoReplicas({ requestsPerMinute: 0, tokensPerMinute: 0 });
    const first = await a.reserve(100);
    if (!first.granted) throw new Error('expected a grant');
    await a.settle(first.reservationId, {
      actualTokens: 100,
      rateLimit: parseProviderRateLimit({ 'x-ratelimit-limit-tokens': '250' }),
    });
    expect((await b.reserve(100)).granted).toBe(true);
    // 200 of 250 counted: another 100 must wait for the window, on either replica.
    expect(await a.reserve(100)).toMatchObject({ granted: false });
    await expect(b.reserve(300)).rejects.toBeInstanceOf(LlmRequestTooLargeError);
  });

  it('blocks until the reset when the provider says nothing remains', async () => {
    const [a, b] = twoReplicas({ requestsPerMinute: 100, tokensPerMinute: 100_000 });
    const first = await a.reserve(10);
    if (!first.granted) throw new Error('expected a grant');
    await a.settle(first.reservationId, {
      actualTokens: 12,
      rateLimit: parseProviderRateLimit(
        new Headers({
          'x-ratelimit-remaining-requests': '40',
          'x-ratelimit-reset-requests': '2m59.56s',
          'x-ratelimit-remaining-tokens': '0',
          'x-ratelimit-reset-tokens': '450ms',
        }),
      ),
    });
    const refused = await b.reserve(10);
    expect(refused.granted).toBe(false);
    if (!refused.granted) {
      expect(refused.waitMs).toBeGreaterThan(350);
      expect(refused.waitMs).toBeLessThanOrEqual(450);
    }
  });

  it('acquire gives up with LLM_PROVIDER_BUSY beyond maxWaitMs, and stops on its signal', async () => {
    const [a, b] = twoReplicas({ requestsPerMinute: 1, tokensPerMinute: 0 });
    await a.acquire(1);
    const busy = await b.acquire(1, { maxWaitMs: 1_000 }).catch((error: unknown) => error);
    expect(busy).toBeInstanceOf(LlmProviderBusyError);
    expect(busy).toMatchObject({ code: 'LLM_PROVIDER_BUSY', retryClass: 'transient' });
    expect((busy as LlmProviderBusyError).waitMs).toBeGreaterThan(59_000);

    const controller = new AbortController();
    const waiting = b.acquire(1, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('job cancelled')), 50);
    await expect(waiting).rejects.toThrow('job cancelled');
  });

  it('keeps two replicas calling the fixture provider under its limits: no 429 at all', async () => {
    const limits = { requestsPerMinute: 12, tokensPerMinute: 4_000, minuteMs: 1_000 };
    const server = await startLlmServer({ limits });
    servers.push(server);
    const [a, b] = twoReplicas(limits);
    const maxTokens = 300;
    let next = 0;
    const total = 40;

    /** One replica's worker slot: acquire, call, settle with the answer's usage and headers. */
    const slot = async (gate: typeof a) => {
      for (let seed = next++; seed < total; seed = next++) {
        const messages = [
          { role: 'system', content: 'Extract resume fields as JSON.' },
          {
            role: 'user',
            content: `<resume>${buildResumeText({ seed, words: 60 + (seed % 5) * 40 })}</resume>`,
          },
        ];
        const reservationId = await gate.acquire(llmPromptTokens(messages) + maxTokens);
        const response = await fetch(`${server.baseURL}/openai/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: 'Bearer test', 'content-type': 'application/json' },
          // A model the Groq-like fixture serves (it refuses unknown ones as Groq does); its
          // low-effort reasoning counts within max_tokens, so within the reservation.
          body: JSON.stringify({
            model: 'openai/gpt-oss-20b',
            reasoning_effort: 'low',
            messages,
            max_tokens: maxTokens,
          }),
        });
        const body = (await response.json()) as { usage?: { total_tokens: number } };
        expect(response.status).toBe(200);
        await gate.settle(reservationId, {
          actualTokens: body.usage?.total_tokens,
          rateLimit: parseProviderRateLimit(response.headers),
        });
      }
    };
    await Promise.all([slot(a), slot(a), slot(a), slot(b), slot(b), slot(b)]);
    expect(server.stats()).toMatchObject({ requests: total, allowed: total, rateLimited: 0 });
  });
});
