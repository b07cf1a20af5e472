import { isClassifiedError } from '@gleaner/errors';
import { LlmProviderError, type LlmCallEnd, type LlmCallStart } from '@gleaner/llm';
import { llmCallsPausedForMs } from '@gleaner/queue';
import { DelayedError } from 'bullmq';
import type { HandlerContext, LlmDeps } from '../context.js';
import { LlmProviderBusyError } from './errors.js';
import type { ProviderGate } from './provider-gate.js';

/**
 * The hooks every call to the provider goes through, whatever asks it (an extraction, a run's
 * sync): a paused key waits (`LlmProviderBusyError`), the call takes a reservation of the model's
 * shared gate and settles it with the usage and the provider's limits, it is counted for
 * `/metrics`, and its tokens are charged to `tenantId`'s daily budget. `answered` hears of each
 * answer the model gave.
 */
export function providerCallHooks(
  context: HandlerContext,
  llm: LlmDeps,
  tenantId: string,
  answered?: (call: LlmCallEnd) => Promise<void>,
) {
  let reservation: { id: string; gate: ProviderGate } | undefined;
  return {
    async beforeCall({ model, estimatedTokens }: LlmCallStart) {
      // A refused key pauses every replica's calls: the backlog waits instead of failing.
      const pausedMs = await llmCallsPausedForMs(llm.redis, llm.prefix);
      if (pausedMs > 0) throw new LlmProviderBusyError(pausedMs);
      const gate = llm.gateFor(model);
      const id = await gate.acquire(estimatedTokens, {
        signal: context.signal,
        maxWaitMs: llm.maxGateWaitMs,
      });
      reservation = { id, gate };
    },
    async afterCall(call: LlmCallEnd) {
      const { model, usage, rateLimit, error } = call;
      if (call.answered) await answered?.(call);
      const held = reservation!;
      reservation = undefined;
      context.counters.llmCall({
        model,
        outcome:
          error === undefined ? 'ok' : isClassifiedError(error) ? error.code : 'UNCLASSIFIED',
        promptTokens: usage?.promptTokens,
        completionTokens: usage?.completionTokens,
      });
      // A 429 stops every replica until its retry-after has passed, not only this one; so
      // does a 5xx's retry-after, for this model (the fallback may still answer).
      const retryAfterMs =
        error instanceof LlmProviderError && error.code === 'LLM_RATE_LIMITED'
          ? (error.retryAfterMs ?? 1000)
          : error instanceof LlmProviderError && error.code === 'LLM_UNAVAILABLE'
            ? error.retryAfterMs
            : undefined;
      await held.gate.settle(held.id, {
        actualTokens: usage?.totalTokens,
        rateLimit,
        retryAfterMs,
      });
      if (usage) await llm.budget.charge(tenantId, usage.totalTokens);
    },
  };
}

/**
 * Runs `call` (one or more provider calls of a job that holds no row claim of its own: a run's
 * sync, a pass of page reading), parking the job until the provider's limits allow it when they
 * do not (a paused key, a 429's retry-after): waiting is not failing, and no attempt is spent.
 */
/** The LLM dependencies of a worker serving `queue`, which main.ts builds for such a worker. */
export function llmOf(context: HandlerContext, queue: string): LlmDeps {
  if (!context.llm) throw new Error(`a worker serving ${queue} needs its LLM dependencies`);
  return context.llm;
}

/**
 * How long a call's error says to wait before the provider may be asked again: its limits are
 * full (a paused key, the shared gate) or it answered 429. Undefined for any other error.
 */
export function limitsWaitMs(error: unknown): number | undefined {
  if (error instanceof LlmProviderBusyError) return error.waitMs;
  if (error instanceof LlmProviderError && error.code === 'LLM_RATE_LIMITED')
    return error.retryAfterMs ?? 1000;
  return undefined;
}

export async function waitingOutLimits<T>(
  context: HandlerContext,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const waitMs = limitsWaitMs(error);
    if (waitMs === undefined) throw error;
    const at = Date.now() + waitMs;
    await context.job.moveToDelayed(Math.max(at, Date.now() + 10), context.token);
    context.log.info(
      { until: new Date(at).toISOString(), reason: (error as LlmProviderError).code },
      'waiting for the LLM provider',
    );
    throw new DelayedError();
  }
}
