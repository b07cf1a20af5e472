import {
  HttpDnsUnavailableError,
  HttpError,
  HttpNetworkError,
  HttpStatusError,
  HttpTimeoutError,
} from '../errors.js';
import type { FetchResult } from '../fetcher.js';
import type { GateOutcome } from './site-gate.js';

/** The gate outcome of a fetch that returned (2xx or 304). */
export function outcomeOfResult(result: Pick<FetchResult, 'status'>): GateOutcome {
  return { status: result.status };
}

/**
 * The gate outcome of a fetch that threw. Only what the site's own server did counts: a status
 * answer for what it is (429/503 cool the site down, 5xx count towards the breaker), and a
 * timeout, a refused or reset connection, or a resolver without a verdict on the site's name as a
 * failure. Everything else only frees the lease, because it says nothing about the site's health:
 * - a failure after a redirect to another host (`offHost`): a posting that moved to a dead host
 *   must not open the breaker of the site that listed it;
 * - a name that does not resolve (`HTTP_HOST_NOT_FOUND`): permanent, the posting fails at once;
 * - our own refusals (an address or URL we will not fetch, on the first URL, a redirect hop or
 *   at connect time), a body cap, a redirect loop, an abort on shutdown, a missed send deadline.
 */
export function outcomeOfError(error: unknown): GateOutcome {
  if (error instanceof HttpError && error.offHost !== undefined) return {};
  if (error instanceof HttpStatusError) {
    return error.retryAfterMs === undefined
      ? { status: error.status }
      : { status: error.status, retryAfterMs: error.retryAfterMs };
  }
  if (
    error instanceof HttpTimeoutError ||
    error instanceof HttpNetworkError ||
    error instanceof HttpDnsUnavailableError
  )
    return { failed: true };
  return {};
}
