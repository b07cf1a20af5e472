export type RetryClass = 'permanent' | 'transient';

/** Base of every fetch error: a stable `HTTP_*` code and whether retrying can help. */
export class HttpError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly retryClass: RetryClass,
    readonly url: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class HttpUrlRejectedError extends HttpError {
  constructor(url: string, reason: string) {
    super(`refused to fetch ${url}: ${reason}`, 'HTTP_URL_REJECTED', 'permanent', url);
  }
}

export class HttpAddressBlockedError extends HttpError {
  constructor(url: string, readonly address: string) {
    super(`refused to connect to ${address} for ${url}: private, loopback or reserved address`, 'HTTP_ADDRESS_BLOCKED', 'permanent', url);
  }
}

export class HttpTimeoutError extends HttpError {
  constructor(url: string, timeoutMs: number, cause?: unknown) {
    super(`fetching ${url} took longer than ${timeoutMs} ms`, 'HTTP_FETCH_TIMEOUT', 'transient', url, { cause });
  }
}

export class HttpBodyTooLargeError extends HttpError {
  constructor(url: string, limit: number) {
    super(`body of ${url} exceeds ${limit} bytes`, 'HTTP_BODY_TOO_LARGE', 'permanent', url);
  }
}

/** A non-2xx answer. 408, 429 and 5xx are transient; other 4xx are permanent. */
export class HttpStatusError extends HttpError {
  constructor(
    url: string,
    readonly status: number,
    readonly retryAfterMs: number | undefined,
  ) {
    const transient = status === 408 || status === 429 || status >= 500;
    super(`${url} answered ${status}`, `HTTP_STATUS_${status}`, transient ? 'transient' : 'permanent', url);
  }
}

export class HttpNetworkError extends HttpError {
  constructor(url: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(`network error fetching ${url}: ${detail}`, 'HTTP_NETWORK', 'transient', url, { cause });
  }
}
