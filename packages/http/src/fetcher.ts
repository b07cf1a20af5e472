import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { pipeline, Transform, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import {
  Agent,
  buildConnector,
  interceptors,
  errors as undiciErrors,
  type Dispatcher,
} from 'undici';
import { isBadPort, isBlockedAddress, isBlockedHostname } from './address-policy.js';
import { decodeBody, detectCharset } from './charset.js';
import {
  HttpAddressBlockedError,
  HttpBodyCorruptError,
  HttpBodyTooLargeError,
  HttpDnsUnavailableError,
  HttpEncodingUnsupportedError,
  HttpError,
  HttpFetchAbortedError,
  HttpHostNotFoundError,
  HttpSendDeadlineError,
  HttpNetworkError,
  HttpStatusError,
  HttpTimeoutError,
  HttpTooManyRedirectsError,
  HttpUrlRejectedError,
} from './errors.js';

/** The peer a connection would go to (IPv4-mapped IPv6 addresses are given in IPv4 form). */
export interface PeerAddress {
  address: string;
  port: number;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a hostname to every address it has. Injectable so tests can map names to loopback. */
export type LookupFunction = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export interface FetcherOptions {
  userAgent: string;
  /** Total deadline of one fetch: DNS, connect, redirects and the whole body (a trickle included). */
  timeoutMs: number;
  /** Cap on the decoded body (what a gzip bomb inflates to). */
  maxBodyBytes: number;
  /** Cap on the bytes on the wire; defaults to `maxBodyBytes`. */
  maxRawBodyBytes?: number;
  /** Redirect hops followed; one more is `HTTP_TOO_MANY_REDIRECTS`. */
  maxRedirects: number;
  /** Loopback and private addresses are refused unless this is set (tests, the local demo). */
  allowPrivateNetworks: boolean;
  /**
   * Exceptions to the address block list, checked with the exact address and port. For tests that
   * need one loopback fixture origin while every other loopback port (a canary) stays refused.
   * Never wire this to user input.
   */
  allowPeer?: (peer: PeerAddress) => boolean;
  /** DNS resolution; defaults to `dns.lookup` with `all: true` (the OS resolver, /etc/hosts included). */
  lookup?: LookupFunction;
  /** Concurrent connections per origin held by the shared agent. */
  connectionsPerOrigin?: number;
}

export interface FetchRequest {
  url: string;
  etag?: string | null;
  lastModified?: string | null;
  accept?: string;
  /** Ends the fetch early, e.g. the worker's processor signal on shutdown (`HTTP_FETCH_ABORTED`). */
  signal?: AbortSignal;
  /** A lower cap than the fetcher's for this request (robots.txt: 512 KiB). */
  maxBodyBytes?: number;
  /** Stop at the cap and return what was read (`truncated: true`) instead of failing. */
  truncateBody?: boolean;
  /**
   * `performance.now()` time after which the request must not go out. Checked when the request is
   * about to be written to its connection, after any connection setup: a request that is ready
   * too late fails with `HttpSendDeadlineError` and sends nothing. Redirect hops are not bound.
   */
  sendBy?: number;
  /**
   * A body to send, which makes the request a POST (Workday's job search takes its query as
   * JSON). Kept in memory so that a 307/308 hop can send it again; a 301/302/303 hop turns the
   * request into a GET, as browsers do.
   */
  body?: { contentType: string; data: string };
  /** Headers of the caller's own (a webhook's signature), sent after and over the fetcher's. */
  headers?: Readonly<Record<string, string>>;
}

export interface FetchResult {
  status: number;
  /** 304 Not Modified answered a conditional request. */
  notModified: boolean;
  /** The requested URL. */
  url: string;
  /** The URL that answered, after redirects. */
  finalUrl: string;
  redirects: number;
  contentType: string | null;
  etag: string | null;
  lastModified: string | null;
  /** The decoded (inflated) body bytes. */
  body: Buffer;
  /** The body hit the cap of a `truncateBody` request. */
  truncated: boolean;
  /** The WHATWG encoding `text()` uses: BOM, then Content-Type, then `<meta>`, then UTF-8. */
  charset: string;
  /** The body as text in `charset`. */
  text(): string;
}

export interface Fetcher {
  fetch(request: FetchRequest): Promise<FetchResult>;
  close(): Promise<void>;
}

/** Parses `Retry-After` (seconds or an HTTP date) into milliseconds. */
export function parseRetryAfter(
  value: string | string[] | undefined,
  now = Date.now(),
): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim()) * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function headerValue(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | null {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

const redirectStatuses = new Set([300, 301, 302, 303, 307, 308]);

/** `::ffff:1.2.3.4` → `1.2.3.4`, so policies and exemptions see one spelling of an IPv4 peer. */
function unmapIPv4(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

function stripBrackets(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

export type AddressPolicyOptions = Pick<FetcherOptions, 'allowPrivateNetworks' | 'allowPeer'>;

/** Whether a connection to this peer is allowed under the options. */
export function isAllowedPeer(
  options: AddressPolicyOptions,
  address: string,
  port: number,
): boolean {
  if (options.allowPrivateNetworks) return true;
  const normalised = unmapIPv4(stripBrackets(address));
  if (!isBlockedAddress(normalised)) return true;
  return options.allowPeer?.({ address: normalised, port }) ?? false;
}

/**
 * An `allowPeer` for a list of exact `address:port` pairs (`HTTP_ALLOWED_PEERS`), or undefined for
 * none. IPv4-mapped IPv6 addresses match their IPv4 spelling.
 */
export function allowListedPeers(
  peers: readonly string[],
): ((peer: PeerAddress) => boolean) | undefined {
  if (peers.length === 0) return undefined;
  const allowed = new Set(
    peers.map((peer) => {
      const colon = peer.lastIndexOf(':');
      return `${unmapIPv4(peer.slice(0, colon))}:${peer.slice(colon + 1)}`;
    }),
  );
  return ({ address, port }) => allowed.has(`${unmapIPv4(address)}:${port}`);
}

/**
 * Checks what can be checked from the URL alone, before any DNS or socket: scheme, credentials,
 * port, a literal IP host (every encoding of it: the WHATWG parser has already turned
 * `http://2130706433/`, `0177.0.0.1`, `0x7f.1` and `127.1` into `127.0.0.1`), and `localhost`
 * names. Runs for the first URL and for every redirect hop. Returns the parsed URL.
 */
export function assertFetchableUrl(input: string | URL, options: AddressPolicyOptions): URL {
  let url: URL;
  try {
    url = typeof input === 'string' ? new URL(input) : input;
  } catch {
    throw new HttpUrlRejectedError(String(input), 'not a valid URL');
  }
  const href = url.href;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new HttpUrlRejectedError(href, `scheme ${url.protocol} is not allowed`);
  }
  // `http://example.com@127.0.0.1/` reads as example.com to a human and goes to 127.0.0.1; we
  // never send credentials in URLs, so any userinfo is a mistake or a trick.
  if (url.username || url.password) throw new HttpUrlRejectedError(href, 'credentials in URL');
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (isBadPort(port)) throw new HttpUrlRejectedError(href, `port ${port} is not allowed`);
  const host = stripBrackets(url.hostname);
  if (host === '') throw new HttpUrlRejectedError(href, 'no host');
  if (isIP(host) !== 0) {
    if (!isAllowedPeer(options, host, port)) throw new HttpAddressBlockedError(href, host);
  } else if (!options.allowPrivateNetworks && isBlockedHostname(host)) {
    throw new HttpAddressBlockedError(href, host);
  }
  return url;
}

const defaultLookup: LookupFunction = (hostname) => dnsLookup(hostname, { all: true });

/**
 * Resolver codes that mean the name has no address: `getaddrinfo`'s EAI_NONAME / EAI_NODATA
 * (which Node reports as ENOTFOUND) and c-ares' ENOTFOUND / ENODATA. Anything else a lookup
 * fails with (EAI_AGAIN, EAI_FAIL, a timeout) is the resolver giving no verdict.
 */
const hostNotFoundCodes = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA']);

function lookupError(error: unknown, hostname: string, target: string): HttpError {
  if (error instanceof HttpError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && hostNotFoundCodes.has(code)
    ? new HttpHostNotFoundError(target, hostname, error)
    : new HttpDnsUnavailableError(target, hostname, error);
}

/**
 * The host a site is known by: case, a trailing dot and a leading `www.` do not make another
 * host (`example.com` redirecting to `https://www.example.com` stays on the site's own server).
 */
function siteHostOf(hostname: string): string {
  return stripBrackets(hostname)
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^www\./, '');
}

/**
 * A copy of `error` marked as having happened on `host`, another host than the requested URL's.
 * A copy, because an error from the connector is shared by every request queued on that
 * connection, and one of them may have asked for that host directly.
 */
function offHostCopy(error: HttpError, host: string): HttpError {
  const copy = Object.create(Object.getPrototypeOf(error) as object, {
    ...Object.getOwnPropertyDescriptors(error),
  }) as HttpError;
  copy.offHost = host;
  return copy;
}

/** Where a fetch is: the URL of its latest hop, which a failure happened on. */
interface HopTrail {
  url?: URL;
}

/** Compression tokens we know but cannot decode; any other unknown token is a server mislabel. */
const undecodableEncodings = new Set(['compress', 'x-compress', 'zstd', 'dcb', 'dcz']);
/** gzip-in-gzip is a classic bomb amplifier; nobody legitimately stacks more than two. */
const MAX_ENCODING_LAYERS = 2;

function decoderFor(token: string): Transform | undefined {
  switch (token) {
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
}

/**
 * Decoders for a Content-Encoding list, in decoding order (the header lists them in the order
 * they were applied). Unknown tokens such as `utf-8` or `none` are a common server mislabel and
 * are ignored, as browsers do; known compressions we cannot decode are refused.
 */
function decodersFor(url: string, header: string | null): Transform[] {
  const tokens = (header ?? '')
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== '' && token !== 'identity');
  const decoders: Transform[] = [];
  for (const token of tokens.reverse()) {
    if (undecodableEncodings.has(token)) throw new HttpEncodingUnsupportedError(url, token);
    const decoder = decoderFor(token);
    if (decoder) decoders.push(decoder);
  }
  if (decoders.length > MAX_ENCODING_LAYERS) {
    decoders.forEach((decoder) => decoder.destroy());
    throw new HttpEncodingUnsupportedError(url, tokens.join(', '));
  }
  return decoders;
}

/** Counts bytes on the wire and fails the pipeline past `limit`. */
function rawByteCounter(url: string, limit: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.byteLength;
      if (seen > limit) callback(new HttpBodyTooLargeError(url, limit));
      else callback(null, chunk);
    },
  });
}

/**
 * One composed undici Agent for every fetch of a process.
 *
 * Address checks happen at three points, each covering what the previous cannot:
 * 1. `assertFetchableUrl` on the first URL and, through an interceptor inside the redirect
 *    interceptor, on every hop: scheme, credentials, port, literal IPs, `localhost`;
 * 2. the connector resolves names itself and refuses when ANY answer is blocked (a name that
 *    also resolves to 127.0.0.1 is a rebinding attempt, not a mirror), then connects to a
 *    checked address — no second lookup, so DNS cannot change the answer in between;
 * 3. the connected socket's `remoteAddress` is checked again before a byte is sent.
 * Bodies are inflated here rather than by undici's decompress interceptor, so that both the raw
 * and the decoded size are capped while streaming.
 */
export function createFetcher(options: FetcherOptions): Fetcher {
  const policy: AddressPolicyOptions = {
    allowPrivateNetworks: options.allowPrivateNetworks,
    allowPeer: options.allowPeer,
  };
  const lookup = options.lookup ?? defaultLookup;
  const connectTimeoutMs = Math.min(options.timeoutMs, 10_000);
  const connect = buildConnector({ timeout: connectTimeoutMs });

  /**
   * Every address of `hostname`. A name without an address fails with `HTTP_HOST_NOT_FOUND`
   * (permanent), a resolver without a verdict with `HTTP_DNS_UNAVAILABLE` (transient): neither
   * is a network failure of the site's server.
   */
  async function resolvePeers(
    hostname: string,
    target: string,
  ): Promise<readonly ResolvedAddress[]> {
    const family = isIP(hostname);
    if (family !== 0) return [{ address: hostname, family }];
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new Error(`DNS lookup of ${hostname} took longer than ${connectTimeoutMs} ms`)),
        connectTimeoutMs,
      );
    });
    let addresses: readonly ResolvedAddress[];
    try {
      addresses = await Promise.race([lookup(hostname), timeout]);
    } catch (error) {
      throw lookupError(error, hostname, target);
    } finally {
      clearTimeout(timer);
    }
    if (addresses.length === 0) throw new HttpHostNotFoundError(target, hostname);
    return addresses;
  }

  const guardedConnect: buildConnector.connector = (connectOptions, callback) => {
    const { hostname, protocol } = connectOptions;
    const port = Number(connectOptions.port) || (protocol === 'https:' ? 443 : 80);
    const target = `${protocol}//${connectOptions.host ?? hostname}`;
    // TLS must still verify the certificate against the name, not the IP we connect to.
    const servername = connectOptions.servername ?? (isIP(hostname) === 0 ? hostname : undefined);

    const attempt = (addresses: readonly ResolvedAddress[], index: number): void => {
      const address = addresses[index]!.address;
      connect(
        { ...connectOptions, hostname: address, ...(servername ? { servername } : {}) },
        (error, socket) => {
          if (error || !socket) {
            // Another address of the same name may answer (a dead IPv6 route, one host down).
            if (index + 1 < Math.min(addresses.length, 4)) attempt(addresses, index + 1);
            else callback(error ?? new Error('connection failed'), null);
            return;
          }
          const peer = socket.remoteAddress ?? '';
          if (!isAllowedPeer(policy, peer, port)) {
            socket.destroy();
            callback(new HttpAddressBlockedError(target, peer), null);
            return;
          }
          callback(null, socket);
        },
      );
    };

    resolvePeers(hostname, target).then(
      (addresses) => {
        const refused = addresses.find(
          (candidate) => !isAllowedPeer(policy, candidate.address, port),
        );
        if (refused) {
          callback(new HttpAddressBlockedError(target, refused.address), null);
          return;
        }
        attempt(addresses, 0);
      },
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), null),
    );
  };

  /**
   * Runs `assertFetchableUrl` on every dispatch, which with redirects means every hop, and notes
   * the hop in the fetch's `hopTrail`, so that a failure can be told apart by where it happened.
   */
  const hopGuard: Dispatcher.DispatcherComposeInterceptor =
    (dispatch) => (dispatchOptions, handler) => {
      const { hopTrail, ...rest } = dispatchOptions as Dispatcher.DispatchOptions & {
        hopTrail?: HopTrail;
      };
      try {
        const hop = new URL(rest.path, rest.origin);
        if (hopTrail) hopTrail.url = hop;
        assertFetchableUrl(hop, policy);
      } catch (error) {
        // Deliver asynchronously: this may run inside the previous hop's response callbacks.
        queueMicrotask(() =>
          handler.onResponseError?.(
            null as unknown as Dispatcher.DispatchController,
            error as Error,
          ),
        );
        return true;
      }
      return dispatch(rest, handler);
    };

  /**
   * Enforces `sendBy` at the moment undici is about to write the request (`onRequestStart`), which
   * comes after the connection is set up. Sits inside the redirect interceptor, which dispatches
   * every hop with the same handler: only the first dispatch of a handler is bound.
   */
  const bound = new WeakSet<Dispatcher.DispatchHandler>();
  const sendDeadline: Dispatcher.DispatcherComposeInterceptor =
    (dispatch) => (dispatchOptions, handler) => {
      const { sendBy, ...rest } = dispatchOptions as Dispatcher.DispatchOptions & {
        sendBy?: number;
      };
      if (sendBy === undefined || bound.has(handler)) return dispatch(rest, handler);
      bound.add(handler);
      const url = new URL(rest.path, rest.origin).href;
      const deadlined: Dispatcher.DispatchHandler = {
        onRequestStart(controller, context) {
          const late = performance.now() - sendBy;
          if (late > 0) controller.abort(new HttpSendDeadlineError(url, late));
          else handler.onRequestStart?.(controller, context);
        },
        onRequestUpgrade: (...args) => handler.onRequestUpgrade?.(...args),
        onResponseStart: (...args) => handler.onResponseStart?.(...args),
        onResponseData: (...args) => handler.onResponseData?.(...args),
        onResponseEnd: (...args) => handler.onResponseEnd?.(...args),
        onResponseError: (...args) => handler.onResponseError?.(...args),
      };
      return dispatch(rest, deadlined);
    };

  const agent = new Agent({
    connect: guardedConnect,
    connections: options.connectionsPerOrigin ?? 16,
    keepAliveTimeout: 10_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  });
  // The redirect interceptor comes last so that it is outermost: each hop it follows is
  // dispatched through `hopGuard` and the guarded connector (TOOLCHAIN.md, item 12).
  const dispatcher: Dispatcher = agent.compose(
    hopGuard,
    sendDeadline,
    interceptors.redirect({ maxRedirections: options.maxRedirects }),
  );

  async function fetchOnce(request: FetchRequest): Promise<FetchResult> {
    const target = assertFetchableUrl(request.url, policy);
    const maxBody = Math.min(
      options.maxBodyBytes,
      request.maxBodyBytes ?? Number.POSITIVE_INFINITY,
    );
    // The raw cap stays the fetcher's: a request's lower cap is about what it keeps once decoded.
    const maxRaw = options.maxRawBodyBytes ?? options.maxBodyBytes;
    const truncate = request.truncateBody === true;

    const headers: Record<string, string> = {
      'user-agent': options.userAgent,
      accept: request.accept ?? 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
      'accept-encoding': 'gzip, deflate, br',
    };
    if (request.etag) headers['if-none-match'] = request.etag;
    if (request.lastModified) headers['if-modified-since'] = request.lastModified;
    if (request.body) headers['content-type'] = request.body.contentType;
    if (request.headers) Object.assign(headers, request.headers);

    // The total deadline and the caller's signal, as plain controllers with a timer cleared at
    // the end: `AbortSignal.timeout` keeps its timer (and signal) alive for the whole timeout
    // after the fetch is done, tens of thousands of them at a worker's rate, and
    // `AbortSignal.any` cost 10 µs a request.
    const deadline = new AbortController();
    const combined = new AbortController();
    const timer = setTimeout(() => {
      const reason = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
      deadline.abort(reason);
      combined.abort(reason);
    }, options.timeoutMs);
    const external = request.signal;
    const onExternalAbort = () => combined.abort(external?.reason);
    if (external?.aborted) onExternalAbort();
    else external?.addEventListener('abort', onExternalAbort, { once: true });
    const signal = combined.signal;
    const trail: HopTrail = {};
    // `sendBy` and `hopTrail` ride along with the options for the interceptors that read them.
    const requestOptions: Dispatcher.RequestOptions<null> & {
      sendBy?: number;
      hopTrail: HopTrail;
    } = {
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: request.body ? 'POST' : 'GET',
      ...(request.body ? { body: request.body.data } : {}),
      headers,
      signal,
      // No deadline (undefined, or Infinity for a site without spacing): no interceptor work.
      ...(Number.isFinite(request.sendBy) ? { sendBy: request.sendBy } : {}),
      hopTrail: trail,
    };
    try {
      const response = await dispatcher.request(requestOptions);
      const responseHeaders = response.headers as Record<string, string | string[] | undefined>;
      const history = (response.context as { history?: readonly URL[] } | undefined)?.history ?? [];
      const finalUrl = history.length > 0 ? history[history.length - 1]!.href : target.href;
      const redirects = Math.max(0, history.length - 1);
      const base = {
        url: request.url,
        finalUrl,
        redirects,
        etag: headerValue(responseHeaders, 'etag'),
        lastModified: headerValue(responseHeaders, 'last-modified'),
      };

      if (response.statusCode === 304) {
        await response.body.dump();
        return {
          ...base,
          status: 304,
          notModified: true,
          contentType: null,
          body: Buffer.alloc(0),
          truncated: false,
          charset: 'utf-8',
          text: () => '',
        };
      }
      if (redirectStatuses.has(response.statusCode) && headerValue(responseHeaders, 'location')) {
        // The redirect interceptor hands a 3xx through only once the hop budget is spent.
        await response.body.dump();
        throw new HttpTooManyRedirectsError(request.url, options.maxRedirects);
      }
      if (response.statusCode < 200 || response.statusCode >= 300) {
        await response.body.dump();
        throw new HttpStatusError(
          request.url,
          response.statusCode,
          parseRetryAfter(responseHeaders['retry-after']),
        );
      }
      const declared = Number(headerValue(responseHeaders, 'content-length') ?? Number.NaN);
      if (!truncate && Number.isFinite(declared) && declared > maxRaw) {
        discard(response.body);
        throw new HttpBodyTooLargeError(request.url, maxRaw);
      }

      const { body, truncated } = await readBody(
        request.url,
        response.body,
        headerValue(responseHeaders, 'content-encoding'),
        {
          maxRaw,
          maxBody,
          truncate,
          signal,
        },
      );
      const contentType = headerValue(responseHeaders, 'content-type');
      const charset = detectCharset(body, contentType).encoding;
      return {
        ...base,
        status: response.statusCode,
        notModified: false,
        contentType,
        body,
        truncated,
        charset,
        text: () => decodeBody(body, contentType),
      };
    } catch (error) {
      const at = trail.url;
      const classified = classify(error, request.url, at, options, deadline.signal, request.signal);
      throw at !== undefined && siteHostOf(at.hostname) !== siteHostOf(target.hostname)
        ? offHostCopy(classified, at.hostname)
        : classified;
    } finally {
      clearTimeout(timer);
      external?.removeEventListener('abort', onExternalAbort);
    }
  }

  // Once closed, undici destroys the agent and a second close() rejects: every shutdown path
  // that owns the fetcher may close it, and all of them wait for the same close.
  let closing: Promise<void> | undefined;
  return {
    fetch: fetchOnce,
    close: () => (closing ??= agent.close()),
  };
}

/**
 * Destroys a stream nobody will read. undici's body turns a destroy without an error into a
 * RequestAbortedError, which would be an uncaught exception without a listener.
 */
function discard(stream: Readable | Transform): void {
  stream.on('error', () => undefined);
  stream.destroy();
}

interface ReadLimits {
  maxRaw: number;
  maxBody: number;
  truncate: boolean;
  signal: AbortSignal;
}

/**
 * Streams the body through a raw-byte counter and the decoders, keeping at most `maxBody`
 * decoded bytes. Memory stays near `maxBody` plus a few zlib windows however large the body
 * inflates, because the read loop applies backpressure all the way to the socket.
 */
async function readBody(
  url: string,
  raw: Readable,
  encoding: string | null,
  limits: ReadLimits,
): Promise<{ body: Buffer; truncated: boolean }> {
  let decoders: Transform[];
  try {
    decoders = decodersFor(url, encoding);
  } catch (error) {
    discard(raw);
    throw error;
  }
  // A body sent as is (most pages): the bytes on the wire are the body, and the read loop checks
  // both caps itself. A stream pipeline with a counting Transform cost about 40 µs of CPU per
  // page, a fifth of a page's fetch.
  if (decoders.length === 0) return collect(url, raw, limits, limits.maxRaw, [raw]);
  const streams: (Readable | Transform)[] = [raw, rawByteCounter(url, limits.maxRaw), ...decoders];
  // pipeline destroys every stream on failure; the reader of the last one sees the error.
  const output = pipeline(streams, () => undefined) as unknown as Readable;
  return collect(url, output, limits, Number.POSITIVE_INFINITY, streams);
}

/**
 * Reads `source` to its end within the caps: `rawCap` on what it yields (the identity path's raw
 * cap), `maxBody` on what is kept. The deadline must also end a body that trickles one byte a
 * second: undici's bodyTimeout only measures the gap between chunks. `streams` are destroyed at
 * the end, however it ends.
 */
async function collect(
  url: string,
  source: Readable,
  limits: ReadLimits,
  rawCap: number,
  streams: readonly (Readable | Transform)[],
): Promise<{ body: Buffer; truncated: boolean }> {
  const onAbort = () =>
    source.destroy(
      limits.signal.reason instanceof Error ? limits.signal.reason : new Error('aborted'),
    );
  limits.signal.addEventListener('abort', onAbort, { once: true });
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    if (limits.signal.aborted) onAbort();
    for await (const chunk of source) {
      const buffer = chunk as Buffer;
      if (size + buffer.byteLength > rawCap) throw new HttpBodyTooLargeError(url, rawCap);
      if (size + buffer.byteLength > limits.maxBody) {
        if (!limits.truncate) throw new HttpBodyTooLargeError(url, limits.maxBody);
        chunks.push(buffer.subarray(0, limits.maxBody - size));
        size = limits.maxBody;
        truncated = true;
        break;
      }
      size += buffer.byteLength;
      chunks.push(buffer);
    }
  } catch (error) {
    if (!(limits.truncate && error instanceof HttpBodyTooLargeError)) throw error;
    truncated = true; // the raw cap of a truncating read: keep what was read so far
  } finally {
    limits.signal.removeEventListener('abort', onAbort);
    for (const stream of streams) discard(stream);
  }
  return { body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), truncated };
}

/**
 * The coded error of a failed fetch of `url`. `at` is the hop it was at (after redirects), which
 * a network error names: the host that failed.
 */
function classify(
  error: unknown,
  url: string,
  at: URL | undefined,
  options: FetcherOptions,
  deadline: AbortSignal,
  external: AbortSignal | undefined,
): HttpError {
  if (error instanceof HttpError) return error;
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof HttpError) return cause;
  if (external?.aborted && !deadline.aborted) return new HttpFetchAbortedError(url, error);
  if (
    deadline.aborted ||
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError ||
    error instanceof undiciErrors.ConnectTimeoutError
  ) {
    return new HttpTimeoutError(url, options.timeoutMs, error);
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && code.startsWith('Z_'))
    return new HttpBodyCorruptError(url, error);
  const message = error instanceof Error ? error.message : String(error);
  if (/redirect loop/i.test(message))
    return new HttpTooManyRedirectsError(url, options.maxRedirects, error);
  // Thrown by the redirect interceptor while parsing a Location header, before our hop guard
  // sees the hop: `Location: file:///etc/passwd` or an unparsable URL.
  if (error instanceof undiciErrors.InvalidArgumentError && /protocol/i.test(message)) {
    return new HttpUrlRejectedError(url, `redirect to a non-http(s) URL: ${message}`);
  }
  if (code === 'ERR_INVALID_URL')
    return new HttpUrlRejectedError(url, `invalid redirect location: ${message}`);
  return new HttpNetworkError(at !== undefined && at.href !== url ? at.href : url, error);
}
