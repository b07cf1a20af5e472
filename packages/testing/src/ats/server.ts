/**
 * The HTTP side shared by the ATS fixture servers: a node:http server on loopback, a request
 * log, and faults injected for the next N matching requests (an error status with
 * Retry-After, malformed JSON, or JSON of the wrong shape).
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { ExpectedPostingFields } from '../career-site.js';
import type { AtsPostingSpec } from './content.js';
import { listenOrigin } from '../listen.js';

export interface AtsFixtureOptions {
  /** Number of postings on the board. Default 25. */
  postings?: number;
  /** Seed of the content generator; the same seed gives the same postings. Default 1. */
  seed?: number;
  /** The hiring company; by default one picked from the seed. */
  companyName?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
}

interface FaultScope {
  /** How many matching requests get the fault. Default 1. */
  times?: number;
  /** Only requests whose path and query start with this; default every request. */
  pathPrefix?: string;
}

/**
 * What the next matching requests get instead of the real answer: an error status (e.g. 404,
 * 429 with `retryAfter` seconds or an HTTP date, 500, 503), or a 200 whose body is malformed
 * JSON (`'json'`) or valid JSON of the wrong shape (`'shape'`).
 */
export type AtsFault = FaultScope &
  ({ status: number; retryAfter?: string } | { malformed: 'json' | 'shape' });

export interface AtsRequestLogEntry {
  method: string;
  /** Path and query as requested. */
  target: string;
  path: string;
  query: Record<string, string>;
  /** The status answered. */
  status: number;
}

export interface FixtureAtsServer {
  /** e.g. http://127.0.0.1:40123 */
  origin: string;
  /** What the adapter's `baseUrl` should be set to. */
  baseUrl: string;
  /** Queues a fault for the next matching requests (faults apply in the order queued). */
  fail(fault: AtsFault): void;
  clearFaults(): void;
  /** Requests received, oldest first; only those whose target starts with `pathPrefix` if given. */
  requests(pathPrefix?: string): AtsRequestLogEntry[];
  resetRequests(): void;
  /** Stops listening and closes connections; safe to call more than once. */
  close(): Promise<void>;
}

export interface AtsRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Request headers (names lower-case): what keyed APIs such as USAJOBS read their key from. */
  headers: IncomingHttpHeaders;
}

export interface AtsReply {
  status: number;
  /** Serialised as JSON, unless a string (sent as is, e.g. HTML). */
  body: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

export type AtsRoute = (request: AtsRequest) => AtsReply;

const JSON_TYPE = 'application/json; charset=utf-8';

export function notFound(): AtsReply {
  return { status: 404, body: { error: 'Not Found', status: 404 } };
}

export async function startAtsServer(
  options: AtsFixtureOptions,
  build: (origin: string) => AtsRoute,
): Promise<FixtureAtsServer> {
  const server = createServer();
  const origin = await listenOrigin(server, options.port ?? 0, options.host ?? '127.0.0.1');
  // Content embeds absolute URLs, so it is built once the port is known, in the same tick.
  const route = build(origin);
  const log: AtsRequestLogEntry[] = [];
  let faults: (AtsFault & { remaining: number })[] = [];

  const reply = (request: IncomingMessage, response: ServerResponse, target: string): number => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return send(request, response, {
        status: 405,
        body: { error: 'Method Not Allowed' },
        headers: { allow: 'GET, HEAD' },
      });
    }
    const fault = faults.find(
      (entry) => entry.remaining > 0 && target.startsWith(entry.pathPrefix ?? ''),
    );
    if (fault) {
      fault.remaining -= 1;
      faults = faults.filter((entry) => entry.remaining > 0);
      if ('status' in fault) {
        return send(request, response, {
          status: fault.status,
          body: { error: 'fixture fault', status: fault.status },
          headers: fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter },
        });
      }
      return fault.malformed === 'json'
        ? send(request, response, {
            status: 200,
            body: '{"jobs": [{"id": 1, "title": "Truncat',
            contentType: JSON_TYPE,
          })
        : send(request, response, { status: 200, body: { unexpected: true } });
    }
    const queryStart = target.indexOf('?');
    const path = queryStart === -1 ? target : target.slice(0, queryStart);
    const query = new URLSearchParams(queryStart === -1 ? '' : target.slice(queryStart + 1));
    return send(
      request,
      response,
      route({ method: request.method, path: decodePath(path), query, headers: request.headers }),
    );
  };

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const target = request.url ?? '/';
    let status: number;
    try {
      status = reply(request, response, target);
    } catch (error) {
      status = send(request, response, { status: 500, body: { error: String(error) } });
    }
    const queryStart = target.indexOf('?');
    log.push({
      method: request.method ?? 'GET',
      target,
      path: queryStart === -1 ? target : target.slice(0, queryStart),
      query: Object.fromEntries(
        new URLSearchParams(queryStart === -1 ? '' : target.slice(queryStart + 1)),
      ),
      status,
    });
  });

  let closing: Promise<void> | undefined;
  return {
    origin,
    baseUrl: origin,
    fail: (fault) => {
      const times = fault.times ?? 1;
      if (!Number.isSafeInteger(times) || times < 1)
        throw new RangeError(`ATS fixture: times must be a positive integer, got ${times}`);
      faults.push({ ...fault, remaining: times });
    },
    clearFaults: () => {
      faults = [];
    },
    requests: (pathPrefix) =>
      log.filter((entry) => pathPrefix === undefined || entry.target.startsWith(pathPrefix)),
    resetRequests: () => {
      log.length = 0;
    },
    close: () => {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        // Every response is written in one piece; keep-alive sockets would hold close() open.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path; // malformed escapes: route the raw text, which simply finds nothing
  }
}

function send(request: IncomingMessage, response: ServerResponse, reply: AtsReply): number {
  const body = Buffer.from(
    typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body),
  );
  const contentType =
    reply.contentType ?? (typeof reply.body === 'string' ? 'text/html; charset=utf-8' : JSON_TYPE);
  response.writeHead(reply.status, {
    ...reply.headers,
    'content-type': contentType,
    'content-length': body.length,
  });
  response.end(request.method === 'HEAD' ? undefined : body);
  return reply.status;
}

/** A validated count option. */
export function countOption(name: string, value: number | undefined, fallback: number): number {
  const count = value ?? fallback;
  if (!Number.isSafeInteger(count) || count < 0)
    throw new RangeError(`ATS fixture: ${name} must be an integer >= 0, got ${count}`);
  return count;
}

/** A fixture posting as an adapter should report it. Treat as read-only. */
export interface FixtureAtsPosting<Payload = Record<string, unknown>> {
  /** The vendor's id, as a string. */
  externalId: string;
  /** The public posting URL. */
  url: string;
  /** The vendor JSON the listing should carry as `payload` (with the adapter's default config). */
  payload: Payload;
  /** What `mapPosting(payload)` should return as `posting`. */
  expected: ExpectedPostingFields;
  /** The generated content behind it. */
  spec: AtsPostingSpec;
}
