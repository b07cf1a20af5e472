import { HttpNetworkError, HttpStatusError, HttpTimeoutError } from '../errors.js';
import type { FetchResult } from '../fetcher.js';
import type { GateOutcome } from './site-gate.js';

/** The gate outcome of a fetch that returned (2xx or 304). */
export function outcomeOfResult(result: Pick<FetchResult, 'status'>): GateOutcome {
  return { status: result.status };
}

/**
 * The gate outcome of a fetch that threw. A status answer counts for what it is (429/503 cool the
 * site down, 5xx count towards the breaker); a timeout or network error is a failure; everything
 * else (our own address or URL refusal, a body cap, a redirect loop, an abort on shutdown) says
 * nothing about the site's health and only frees the lease.
 */
export function outcomeOfError(error: unknown): GateOutcome {
  if (error instanceof HttpStatusError) {
    return error.retryAfterMs === undefined
      ? { status: error.status }
      : { status: error.status, retryAfterMs: error.retryAfterMs };
  }
  if (error instanceof HttpTimeoutError || error instanceof HttpNetworkError)
    return { failed: true };
  return {};
}
