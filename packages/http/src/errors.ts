import { ClassifiedError, type RetryClass } from '@gleaner/errors';

/** Base of every fetch error: a stable `HTTP_*` code and whether retrying can help. */
export class HttpError extends ClassifiedError {
  /**
   * Set by the fetcher when a redirect had taken the fetch to another host than the requested
   * URL's before it failed: that host. Such a failure says nothing about the requested host's
   * health, so it does not count towards that site's breaker (`outcomeOfError`).
   */
  offHost?: string;

  constructor(
    message: string,
    code: string,
    retryClass: RetryClass,
    readonly url: string,
    options?: { cause?: unknown },
  ) {
    super(message, code, retryClass, options);
  }
}

export class HttpUrlRejectedError extends HttpError {
  constructor(url: string, reason: string) {
    super(`refused to fetch ${url}: ${reason}`, 'HTTP_URL_REJECTED', 'permanent', url);
  }
}

export class HttpAddressBlockedError extends HttpError {
  constructor(
    url: string,
    readonly address: string,
  ) {
    super(
      `refused to connect to ${address} for ${url}: private, loopback or reserved address`,
      'HTTP_ADDRESS_BLOCKED',
      'permanent',
      url,
    );
  }
}

/**
 * The host name does not resolve: the resolver answered that it has no address (`ENOTFOUND`,
 * NXDOMAIN or no A/AAAA record). Permanent for this fetch: a posting on a name that does not
 * exist fails at once instead of being retried, and the site's next run asks again.
 */
export class HttpHostNotFoundError extends HttpError {
  constructor(
    url: string,
    readonly hostname: string,
    cause?: unknown,
  ) {
    super(
      `${hostname} does not resolve (fetching ${url})`,
      'HTTP_HOST_NOT_FOUND',
      'permanent',
      url,
      {
        cause,
      },
    );
  }
}

/**
 * The resolver gave no verdict on a host name (`EAI_AGAIN`: no answer or SERVFAIL, or our own
 * lookup deadline). Transient: the name may well exist, and asking again later can work.
 */
export class HttpDnsUnavailableError extends HttpError {
  constructor(
    url: string,
    readonly hostname: string,
    cause?: unknown,
  ) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      `DNS lookup of ${hostname} failed for now (fetching ${url}): ${detail}`,
      'HTTP_DNS_UNAVAILABLE',
      'transient',
      url,
      { cause },
    );
  }
}

export class HttpTimeoutError extends HttpError {
  constructor(url: string, timeoutMs: number, cause?: unknown) {
    super(
      `fetching ${url} took longer than ${timeoutMs} ms`,
      'HTTP_FETCH_TIMEOUT',
      'transient',
      url,
      { cause },
    );
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
    super(
      `${url} answered ${status}`,
      `HTTP_STATUS_${status}`,
      transient ? 'transient' : 'permanent',
      url,
    );
  }
}

export class HttpNetworkError extends HttpError {
  constructor(url: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(`network error fetching ${url}: ${detail}`, 'HTTP_NETWORK', 'transient', url, { cause });
  }
}

/** More redirect hops than `maxRedirects`, or a redirect loop. */
export class HttpTooManyRedirectsError extends HttpError {
  constructor(url: string, maxRedirects: number, cause?: unknown) {
    super(
      `${url} redirected more than ${maxRedirects} times or in a loop`,
      'HTTP_TOO_MANY_REDIRECTS',
      'permanent',
      url,
      { cause },
    );
  }
}

/** A compressed body that does not inflate. */
export class HttpBodyCorruptError extends HttpError {
  constructor(url: string, cause?: unknown) {
    super(`corrupt compressed body from ${url}`, 'HTTP_BODY_CORRUPT', 'permanent', url, { cause });
  }
}

/** A `Content-Encoding` we neither asked for nor can decode: storing it raw would store garbage. */
export class HttpEncodingUnsupportedError extends HttpError {
  constructor(
    url: string,
    readonly encoding: string,
  ) {
    super(
      `${url} answered with unsupported content-encoding "${encoding}"`,
      'HTTP_ENCODING_UNSUPPORTED',
      'permanent',
      url,
    );
  }
}

/** The caller's signal (a job being cancelled or a worker shutting down) ended the fetch. */
export class HttpFetchAbortedError extends HttpError {
  constructor(url: string, cause?: unknown) {
    super(`fetching ${url} was aborted`, 'HTTP_FETCH_ABORTED', 'transient', url, { cause });
  }
}

/**
 * The request could not be written before its `sendBy` time (a connection still being set up, a
 * busy event loop), so nothing was sent. A gate lease that ran out this way is given back.
 */
export class HttpSendDeadlineError extends HttpError {
  constructor(
    url: string,
    readonly lateByMs: number,
  ) {
    super(
      `${url} was not sent: ready ${Math.round(lateByMs)} ms after its deadline`,
      'HTTP_SEND_DEADLINE',
      'transient',
      url,
    );
  }
}

/**
 * The origin's robots.txt could not be fetched (unreachable, 5xx or 429): RFC 9309 §2.3.1.3 says
 * to assume complete disallow until it answers. `retryAt` (epoch ms) is when it is asked again.
 */
export class HttpRobotsUnavailableError extends HttpError {
  constructor(
    url: string,
    readonly retryAt: number,
    readonly reason: string,
  ) {
    super(
      `robots.txt for ${url} is unavailable (${reason}); retry after ${new Date(retryAt).toISOString()}`,
      'HTTP_ROBOTS_UNAVAILABLE',
      'transient',
      url,
    );
  }
}

/** robots.txt disallows the URL for our user agent. Thrown by callers that decide not to fetch. */
export class HttpRobotsDisallowedError extends HttpError {
  constructor(url: string) {
    super(`robots.txt disallows ${url}`, 'HTTP_ROBOTS_DISALLOWED', 'permanent', url);
  }
}
