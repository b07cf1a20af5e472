import { ClassifiedError } from '@gleaner/errors';
import type { ProviderRateLimit } from './rate-limit.js';

/** Stable codes of a failed call to the LLM provider. */
export type LlmProviderErrorCode =
  | 'LLM_RATE_LIMITED'
  | 'LLM_UNAVAILABLE'
  | 'LLM_TIMEOUT'
  | 'LLM_REJECTED'
  /** The model is unknown or retired (Groq's `model_not_found` / `model_decommissioned`). */
  | 'LLM_MODEL_UNAVAILABLE'
  /** The key is missing, wrong or revoked (401, 403): no call can succeed until it is fixed. */
  | 'LLM_UNAUTHORIZED'
  /** Groq's 422: the request was well-formed but the model could not follow it this time. */
  | 'LLM_UNPROCESSABLE';

/** Why a model's answer was not accepted: the seed 002 fallback triggers. */
export type LlmOutputProblem =
  | 'invalid_json'
  | 'invalid_schema'
  | 'missing_fields'
  | 'low_confidence'
  /** The answer ran into its token cap (`finish_reason: "length"`), even with more room. */
  | 'truncated';

/**
 * A call to the provider failed. Retryable (transient) unless the provider rejected the request
 * itself (`LLM_REJECTED`: a 4xx other than 401, 403, 404 for a model, 408, 422 and 429), which
 * sending it again cannot fix. An unknown model or a refused key is retryable: neither is the
 * job's fault, and both are fixed by an operator (the worker alerts and waits rather than
 * failing the backlog).
 * The client never retries: the queue owns retries, and SDK retries under queue attempts
 * would multiply them (STYLE.md, "retry layers stacked on each other").
 */
export class LlmProviderError extends ClassifiedError {
  declare readonly code: LlmProviderErrorCode;
  /** Whether sending the same request again later can succeed. */
  readonly retryable: boolean;
  /** The provider's HTTP status, when it answered. */
  readonly status?: number;
  /** How long to wait before the next call: `retry-after`, else the exhausted window's reset. */
  readonly retryAfterMs?: number;
  /** The provider's rate-limit headers on the failed answer, when it answered. */
  readonly rateLimit?: ProviderRateLimit;
  /**
   * The provider's own error code from the body (`error.code`), e.g. Groq's
   * `json_validate_failed`: JSON mode was on and the model did not produce valid JSON.
   */
  readonly providerCode?: string;
  /** Groq's `json_validate_failed`: what the model wrote, which may still be usable. */
  readonly failedGeneration?: string;

  constructor(
    code: LlmProviderErrorCode,
    message: string,
    details: {
      status?: number;
      retryAfterMs?: number;
      rateLimit?: ProviderRateLimit;
      providerCode?: string;
      failedGeneration?: string;
      cause?: unknown;
    } = {},
  ) {
    const retryable = code !== 'LLM_REJECTED';
    super(message, code, retryable ? 'transient' : 'permanent', { cause: details.cause });
    this.retryable = retryable;
    if (details.status !== undefined) this.status = details.status;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.rateLimit !== undefined) this.rateLimit = details.rateLimit;
    if (details.providerCode !== undefined) this.providerCode = details.providerCode;
    if (details.failedGeneration !== undefined) this.failedGeneration = details.failedGeneration;
  }
}

/** One model's answer that was not accepted, and why. */
export interface LlmOutputAttempt {
  model: string;
  problem: LlmOutputProblem;
  detail: string;
}

/**
 * Neither the primary nor the fallback model gave a usable answer (invalid JSON, a schema
 * mismatch, or required fields missing once grounded). Retryable: sampling differs between
 * calls and providers change models, so a later attempt can succeed; the queue's attempt limit
 * bounds it.
 */
export class LlmOutputError extends ClassifiedError {
  declare readonly code: 'LLM_INVALID_OUTPUT';
  readonly retryable = true;
  /** The problem of each model's answer, primary first. */
  readonly reasons: LlmOutputProblem[];

  constructor(readonly attempts: LlmOutputAttempt[]) {
    super(
      `no usable extraction: ${attempts.map((a) => `${a.model}: ${a.problem} (${a.detail})`).join('; ')}`,
      'LLM_INVALID_OUTPUT',
      'transient',
    );
    this.reasons = attempts.map((a) => a.problem);
  }
}

/**
 * What an aborted call rejects with: the signal's reason when it is an Error (a worker's
 * shutdown or a job's cancellation says why), otherwise an `LLM_TIMEOUT`.
 */
export function abortedCallError(signal: AbortSignal, model: string): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  return new LlmProviderError('LLM_TIMEOUT', `call to ${model} was aborted`, { cause: reason });
}
