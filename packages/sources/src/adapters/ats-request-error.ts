import type { RetryClass } from '@gleaner/errors';
import { SourceError } from '../types.js';

/** Stable codes of the errors ATS adapters throw. */
export const atsErrorCodes = {
  /** The board, site or company does not exist (404/410): a config problem, permanent. */
  boardNotFound: 'SOURCE_BOARD_NOT_FOUND',
  /** One posting's detail answered 404/410: it closed between listing and detail call. */
  postingNotFound: 'SOURCE_POSTING_NOT_FOUND',
  /** 429: transient; `retryAfterMs` carries the vendor's Retry-After. */
  rateLimited: 'SOURCE_RATE_LIMITED',
  /** 5xx or 408: transient. */
  upstreamUnavailable: 'SOURCE_UPSTREAM_UNAVAILABLE',
  /** Any other 4xx (400, 401, 403, …): the request itself is wrong, permanent. */
  requestRejected: 'SOURCE_REQUEST_REJECTED',
  /** Malformed JSON, or JSON that does not have the vendor's documented shape. */
  responseInvalid: 'SOURCE_RESPONSE_INVALID',
  /** The body exceeded the fetcher's cap. */
  responseTooLarge: 'SOURCE_RESPONSE_TOO_LARGE',
  /** Timeouts, network errors, refused addresses: the fetcher's own retry class applies. */
  fetchFailed: 'SOURCE_FETCH_FAILED',
} as const;

export type AtsErrorCode = (typeof atsErrorCodes)[keyof typeof atsErrorCodes];

export interface AtsRequestErrorDetails {
  url: string;
  /** The HTTP status when the vendor answered with a non-2xx status. */
  status?: number;
  /** The vendor's Retry-After in milliseconds (429, sometimes 503). */
  retryAfterMs?: number;
  cause?: unknown;
}

/** A request to an ATS vendor's API failed; `code` and `retryClass` say how and whether to retry. */
export class AtsRequestError extends SourceError {
  override readonly code: AtsErrorCode;
  readonly url: string;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(
    message: string,
    code: AtsErrorCode,
    retryClass: RetryClass,
    details: AtsRequestErrorDetails,
  ) {
    super(message, code, retryClass);
    this.code = code;
    this.url = details.url;
    this.status = details.status;
    this.retryAfterMs = details.retryAfterMs;
    if (details.cause !== undefined) this.cause = details.cause;
  }
}
