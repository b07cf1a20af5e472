import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Agent, buildConnector, interceptors, errors as undiciErrors, type Dispatcher } from 'undici';
import { isBlockedAddress } from './address-policy.js';
import {
  HttpAddressBlockedError,
  HttpBodyTooLargeError,
  HttpError,
  HttpNetworkError,
  HttpStatusError,
  HttpTimeoutError,
  HttpUrlRejectedError,
} from './errors.js';

export interface FetcherOptions {
  userAgent: string;
  /** Total deadline of one fetch, redirects and body included. */
  timeoutMs: number;
  /** Cap on the decoded body. */
  maxBodyBytes: number;
  maxRedirects: number;
  /** Loopback and private addresses are refused unless this is set (tests, the local demo). */
  allowPrivateNetworks: boolean;
  /** Concurrent connections per origin held by the shared agent. */
  connectionsPerOrigin?: number;
}

export interface FetchRequest {
  url: string;
  etag?: string | null;
  lastModified?: string | null;
  accept?: string;
}

export interface FetchResult {
  status: number;
  /** 304 Not Modified answered a conditional request. */
  notModified: boolean;
  url: string;
  contentType: string | null;
  etag: string | null;
  lastModified: string | null;
  body: Buffer;
}

export interface Fetcher {
  fetch(request: FetchRequest): Promise<FetchResult>;
  close(): Promise<void>;
}

/** Parses `Retry-After` (seconds or an HTTP date) into milliseconds. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim()) * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | null {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

/**
 * One composed undici Agent for every fetch of a process: the connector refuses blocked peer
 * addresses on every connection (so each redirect hop is checked too) and the redirect
 * interceptor follows hops. Bodies are inflated here rather than by undici's (experimental)
 * decompress interceptor, so that both the raw and the decoded size are capped.
 */
export function createFetcher(options: FetcherOptions): Fetcher {
  const connect = buildConnector({ timeout: Math.min(options.timeoutMs, 10_000) });
  const guardedConnect: buildConnector.connector = (connectOptions, callback) => {
    connect(connectOptions, (error, socket) => {
      if (error || !socket) {
        callback(error ?? new Error('connection failed'), null);
        return;
      }
      const address = socket.remoteAddress ?? '';
      if (!options.allowPrivateNetworks && isBlockedAddress(address)) {
        socket.destroy();
        callback(new HttpAddressBlockedError(`${connectOptions.protocol}//${connectOptions.hostname}`, address), null);
        return;
      }
      callback(null, socket);
    });
  };
  const agent = new Agent({
    connect: guardedConnect,
    connections: options.connectionsPerOrigin ?? 16,
    keepAliveTimeout: 10_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  });
  const dispatcher: Dispatcher = agent.compose(interceptors.redirect({ maxRedirections: options.maxRedirects }));

  async function fetchOnce(request: FetchRequest): Promise<FetchResult> {
    let target: URL;
    try {
      target = new URL(request.url);
    } catch {
      throw new HttpUrlRejectedError(request.url, 'not a valid URL');
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      throw new HttpUrlRejectedError(request.url, `scheme ${target.protocol} is not allowed`);
    }
    if (target.username || target.password) throw new HttpUrlRejectedError(request.url, 'credentials in URL');

    const headers: Record<string, string> = {
      'user-agent': options.userAgent,
      accept: request.accept ?? 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
      'accept-encoding': 'gzip, deflate, br',
    };
    if (request.etag) headers['if-none-match'] = request.etag;
    if (request.lastModified) headers['if-modified-since'] = request.lastModified;

    const signal = AbortSignal.timeout(options.timeoutMs);
    try {
      const response = await dispatcher.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: 'GET',
        headers,
        signal,
      });
      const responseHeaders = response.headers as Record<string, string | string[] | undefined>;
      if (response.statusCode === 304) {
        await response.body.dump();
        return {
          status: 304,
          notModified: true,
          url: request.url,
          contentType: null,
          etag: headerValue(responseHeaders, 'etag'),
          lastModified: headerValue(responseHeaders, 'last-modified'),
          body: Buffer.alloc(0),
        };
      }
      if (response.statusCode < 200 || response.statusCode >= 300) {
        await response.body.dump();
        throw new HttpStatusError(request.url, response.statusCode, parseRetryAfter(responseHeaders['retry-after']));
      }
      const declared = Number(headerValue(responseHeaders, 'content-length') ?? Number.NaN);
      if (Number.isFinite(declared) && declared > options.maxBodyBytes) {
        response.body.destroy();
        throw new HttpBodyTooLargeError(request.url, options.maxBodyBytes);
      }
      const decoded = decode(response.body, headerValue(responseHeaders, 'content-encoding'));
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of decoded) {
          const buffer = chunk as Buffer;
          size += buffer.byteLength;
          if (size > options.maxBodyBytes) throw new HttpBodyTooLargeError(request.url, options.maxBodyBytes);
          chunks.push(buffer);
        }
      } finally {
        decoded.destroy();
        response.body.destroy();
      }
      return {
        status: response.statusCode,
        notModified: false,
        url: request.url,
        contentType: headerValue(responseHeaders, 'content-type'),
        etag: headerValue(responseHeaders, 'etag'),
        lastModified: headerValue(responseHeaders, 'last-modified'),
        body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size),
      };
    } catch (error) {
      throw classify(error, request.url, options.timeoutMs, signal);
    }
  }

  return {
    fetch: fetchOnce,
    close: () => agent.close(),
  };
}

/** Inflates gzip, deflate and br bodies; anything else passes through unchanged. */
function decode(body: Readable, encoding: string | null): Readable {
  const inflater = (() => {
    switch (encoding?.trim().toLowerCase()) {
      case 'gzip':
      case 'x-gzip':
        return createGunzip();
      case 'deflate':
        return createInflate();
      case 'br':
        return createBrotliDecompress();
      default:
        return undefined;
    }
  })();
  if (!inflater) return body;
  // pipeline destroys both streams on failure; the reader of `inflater` sees the error.
  pipeline(body, inflater, (error) => {
    if (error) inflater.destroy(error);
  });
  return inflater;
}

function classify(error: unknown, url: string, timeoutMs: number, signal: AbortSignal): HttpError {
  if (error instanceof HttpError) return error;
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof HttpError) return cause;
  if (signal.aborted || error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError) {
    return new HttpTimeoutError(url, timeoutMs, error);
  }
  if ((error as NodeJS.ErrnoException).code?.startsWith('Z_')) {
    return new HttpError(`corrupt compressed body from ${url}`, 'HTTP_BODY_CORRUPT', 'permanent', url, { cause: error });
  }
  if (/redirect/i.test((error as Error).message ?? '')) {
    return new HttpUrlRejectedError(url, (error as Error).message);
  }
  return new HttpNetworkError(url, error);
}
