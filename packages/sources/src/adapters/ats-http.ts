/**
 * What every ATS adapter does with HTTP: fetch JSON through the shared fetcher, translate its
 * errors into `AtsRequestError` codes, and validate the body against the vendor's schema.
 */
import { HttpBodyTooLargeError, HttpError, HttpStatusError } from '@gleaner/http';
import { z } from 'zod';
import type { SourceContext } from '../types.js';
import { AtsRequestError, atsErrorCodes } from './ats-request-error.js';

export interface VendorRequest {
  /** Vendor name for messages, e.g. "Greenhouse". */
  vendor: string;
  url: string;
  /** What a 404 means: the whole board is gone (permanent), or just this posting. */
  notFound: 'board' | 'posting';
  signal?: AbortSignal | undefined;
  /** A JSON body to POST instead of a GET (Workday's job search). */
  json?: unknown;
  /** Headers of the vendor's own (USAJOBS' `Authorization-Key` and `User-Agent`). */
  headers?: Readonly<Record<string, string>>;
  /**
   * The URL as errors name it, when `url` carries a secret (Adzuna's `app_key` is a query
   * parameter): errors then keep neither `url` nor the fetcher's error, whose message names it.
   */
  shownUrl?: string;
}

export interface VendorResponse<T> {
  /** The validated body (zod's output). */
  data: T;
  /** The body as received, for payloads handed on unchanged. */
  json: unknown;
}

/** An http(s) base URL; a trailing slash is tolerated and removed when used. */
export const baseUrlSchema = z
  .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
  .max(2048, { message: 'must be at most 2048 characters' })
  .refine((value) => !/[?#]/.test(value), { message: 'must not have a query or fragment' });

/**
 * A vendor's board / site / company identifier. It becomes a URL path segment (and a host name
 * label for Recruitee), so it is restricted to what vendors actually issue.
 */
export const boardIdentifier = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, {
  message: 'must be letters, digits, ".", "_" or "-" (at most 200)',
});

/** A company name that becomes a host name label (`acme` in acme.recruitee.com). */
export const hostLabel = z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/, {
  message: 'must be a host name label (letters, digits, "-")',
});

/** Postings per run, whatever the caller's own limit. */
export const maxPostingsSchema = z.int().min(1).max(100_000).default(10_000);

/** Listing pages per run; also what stops a vendor whose paging never ends. */
export const maxPagesSchema = z.int().min(1).max(10_000).default(200);

export function joinUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${path}`;
}

export async function fetchVendorJson<S extends z.ZodType>(
  context: SourceContext,
  request: VendorRequest,
  schema: S,
): Promise<VendorResponse<z.output<S>>> {
  request.signal?.throwIfAborted();
  let body: Buffer;
  try {
    body = (
      await context.fetcher.fetch({
        url: request.url,
        accept: 'application/json',
        signal: request.signal,
        ...(request.headers === undefined ? {} : { headers: request.headers }),
        ...(request.json === undefined
          ? {}
          : { body: { contentType: 'application/json', data: JSON.stringify(request.json) } }),
      })
    ).body;
  } catch (error) {
    throw translateFetchError(error, request);
  }
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8')) as unknown;
  } catch (error) {
    throw invalidResponse(request, 'malformed JSON', error);
  }
  return { data: validateVendorBody(request, json, schema), json };
}

/** A decoded vendor body checked against the vendor's schema: SOURCE_RESPONSE_INVALID if not. */
function validateVendorBody<S extends z.ZodType>(
  request: VendorRequest,
  value: unknown,
  schema: S,
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw invalidResponse(
      request,
      `a body that does not have the documented shape (${issues})`,
      parsed.error,
    );
  }
  return parsed.data;
}

/**
 * SOURCE_RESPONSE_INVALID is transient: a vendor mid-deploy, a CDN error page served with 200,
 * or a truncated body usually come right on the next attempt, while a body that stays invalid
 * simply exhausts the scrape job's attempts (3) and lands in the dead-letter queue with this
 * code. Marking it permanent would fail a board for good on one bad answer.
 */
function invalidResponse(request: VendorRequest, what: string, cause: unknown): AtsRequestError {
  const url = request.shownUrl ?? request.url;
  return new AtsRequestError(
    `${request.vendor} answered ${url} with ${what}`,
    atsErrorCodes.responseInvalid,
    'transient',
    { url, cause },
  );
}

/** Fetcher errors in ATS terms; anything that is not an HttpError (an abort) passes through. */
export function translateFetchError(error: unknown, request: VendorRequest): unknown {
  const { vendor } = request;
  const url = request.shownUrl ?? request.url;
  // The fetcher's error names the URL it fetched, secret and all.
  const cause = request.shownUrl === undefined ? error : undefined;
  if (error instanceof HttpStatusError) {
    const details = { url, status: error.status, retryAfterMs: error.retryAfterMs, cause };
    if (error.status === 404 || error.status === 410) {
      return request.notFound === 'board'
        ? new AtsRequestError(
            `${vendor} has no such board (${url} answered ${error.status})`,
            atsErrorCodes.boardNotFound,
            'permanent',
            details,
          )
        : new AtsRequestError(
            `${vendor} posting is gone (${url} answered ${error.status})`,
            atsErrorCodes.postingNotFound,
            'permanent',
            details,
          );
    }
    if (error.status === 429) {
      return new AtsRequestError(
        `${vendor} rate-limited ${url}`,
        atsErrorCodes.rateLimited,
        'transient',
        details,
      );
    }
    if (error.status === 408 || error.status >= 500) {
      return new AtsRequestError(
        `${vendor} is unavailable (${url} answered ${error.status})`,
        atsErrorCodes.upstreamUnavailable,
        'transient',
        details,
      );
    }
    return new AtsRequestError(
      `${vendor} rejected ${url} (${error.status})`,
      atsErrorCodes.requestRejected,
      'permanent',
      details,
    );
  }
  if (error instanceof HttpBodyTooLargeError) {
    return new AtsRequestError(
      `${vendor}: ${cause === undefined ? `${url} answered a body over the cap` : error.message}`,
      atsErrorCodes.responseTooLarge,
      'permanent',
      { url, cause },
    );
  }
  if (error instanceof HttpError) {
    return new AtsRequestError(
      `${vendor}: ${cause === undefined ? `${url} failed (${error.code})` : error.message}`,
      atsErrorCodes.fetchFailed,
      error.retryClass,
      { url, cause },
    );
  }
  return error;
}

export function isPostingGone(error: unknown): boolean {
  return error instanceof AtsRequestError && error.code === atsErrorCodes.postingNotFound;
}

/**
 * Runs one detail call per listed entry, one at a time: these calls happen inside the scrape job,
 * outside the per-site gate that paces crawl jobs, so they are kept sequential.
 *
 * A detail answering 404 was closed between the listing and its call and is left out. When every
 * detail is gone, though, the listing and the details disagree (a board deleted mid-run, a
 * misrouted CDN); reporting a complete, empty listing would expire every posting of the site, so
 * that is a transient SOURCE_RESPONSE_INVALID instead: a retry lists afresh.
 */
export async function fetchDetails<E, R>(
  entries: readonly E[],
  fetchOne: (entry: E) => Promise<R>,
  listing: { vendor: string; url: string },
): Promise<R[]> {
  const results: R[] = [];
  for (const entry of entries) {
    try {
      results.push(await fetchOne(entry));
    } catch (error) {
      if (!isPostingGone(error)) throw error;
    }
  }
  if (entries.length > 0 && results.length === 0) {
    throw new AtsRequestError(
      `${listing.vendor} listed ${entries.length} postings at ${listing.url} but every detail answered 404`,
      atsErrorCodes.responseInvalid,
      'transient',
      { url: listing.url },
    );
  }
  return results;
}

/**
 * A vendor answer in another format than JSON (Personio's XML feed): fetched and translated like
 * `fetchVendorJson`, decoded by `decode` (which throws on a malformed body: SOURCE_RESPONSE_INVALID,
 * transient), then validated. `json` is the decoded value, JSON-serialisable by the decoder's
 * contract, for payloads handed on unchanged.
 */
export async function fetchVendorDocument<S extends z.ZodType>(
  context: SourceContext,
  request: VendorRequest & { accept: string; format: string },
  decode: (text: string) => unknown,
  schema: S,
): Promise<VendorResponse<z.output<S>>> {
  request.signal?.throwIfAborted();
  let text: string;
  try {
    text = (
      await context.fetcher.fetch({
        url: request.url,
        accept: request.accept,
        signal: request.signal,
      })
    ).text();
  } catch (error) {
    throw translateFetchError(error, request);
  }
  let decoded: unknown;
  try {
    decoded = decode(text);
  } catch (error) {
    const reason = error instanceof Error ? `: ${error.message}` : '';
    throw invalidResponse(request, `malformed ${request.format}${reason}`, error);
  }
  return { data: validateVendorBody(request, decoded, schema), json: decoded };
}
