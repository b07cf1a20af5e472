import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { FastifyServerFactory } from 'fastify';
import { requestIdFrom } from './request-id.js';

/**
 * The API's front door: whether a request is started at all, decided from the socket before
 * Fastify routes, parses or logs it. A request refused here costs a few microseconds of the event
 * loop and is answered `503` with `Retry-After` at once, so that a process offered more than it
 * can serve spends its cores on the requests it started. Refusing in a Fastify hook instead cost
 * a whole request's worth of work per refusal; with the loop saturated, the refusals themselves
 * waited 300 ms.
 *
 * A request is refused when, as it arrives,
 *   - as many requests of this process as its in-flight limit are started and unanswered: more
 *     would only wait behind them, each one's latency growing with the queue. The limit adapts
 *     (createInFlightLimit): it shrinks while the quick reads' median latency is above
 *     API_SHED_LATENCY_MS and grows back while they keep it, between 2 and API_MAX_IN_FLIGHT.
 *     No fixed number fits every mix: on 2 cores, 4 in flight kept the overload bench's mix of
 *     routes at a p99 near 50 ms, and refused half of one quick route's 1,000 requests/s;
 *   - the event loop's mean delay over the last sample is above API_SHED_EVENT_LOOP_DELAY_MS while
 *     the loop was busy (see BUSY_LOOP_UTILIZATION) and other requests are in flight: the process
 *     is CPU-bound and everything it starts waits. With none in flight the lag was a request that
 *     has ended (a large upload parsed), and the new one waits behind nothing.
 * The expensive routes' own turns and the Postgres pool's queue are checked later, in the
 * load-shed plugin, where the route is known.
 *
 * `/health` and `/metrics` are never refused: a balancer and Prometheus must still see the
 * process. Such a request still counts as in flight.
 */

export type AdmissionRefusal = 'in-flight' | 'event-loop-delay';

export interface AdmissionSettings {
  /** The most requests started and unanswered at once; 0: no limit (and no adapting). */
  API_MAX_IN_FLIGHT: number;
  /** The quick reads' median latency (ms) above which the in-flight limit shrinks. */
  API_SHED_LATENCY_MS: number;
  /** The event loop's mean delay (ms) above which a new request is refused; 0: never. */
  API_SHED_EVENT_LOOP_DELAY_MS: number;
}

export interface Admission {
  /** Fastify's `serverFactory`: the HTTP server with the front door before Fastify's handler. */
  readonly serverFactory: FastifyServerFactory;
  /** Requests started and not yet answered (or hung up on). */
  inFlight(): number;
  /** The in-flight limit now, or undefined without one. */
  limit(): number | undefined;
  /** Stops sampling the event loop (the server's `close` does it too). */
  stop(): void;
}

export interface AdmissionOptions {
  settings: AdmissionSettings;
  /** Called for each refused request (a metric counts them). */
  onRefused?: (reason: AdmissionRefusal) => void;
}

/** How often the event loop's delay and utilisation are sampled. */
const SAMPLE_INTERVAL_MS = 100;
/** The delay histogram's resolution: what it adds to every sample, taken off the mean. */
const RESOLUTION_MS = 10;

/**
 * The event loop's delay refuses requests only while the loop was also busy this share of the
 * last sample: a process that waits on Postgres while other processes take the cores (tests on a
 * shared CI machine, a VACUUM) sees timers late too, and refusing its few requests would relieve
 * nothing. Seen on a 2-core machine at a load average of 12: one search at a time was refused.
 */
const BUSY_LOOP_UTILIZATION = 0.9;

/** What a refused caller is told to wait before trying again, in seconds. */
export const RETRY_AFTER_SECONDS = 1;

/** What a refused caller is told, whichever check refused it. */
export const BUSY_DETAIL = 'the API is busy; try again in a moment';

/** Paths never refused: a balancer and Prometheus must still see the process. */
export const NEVER_REFUSED = new Set(['/health', '/metrics']);

const pathOf = (url: string) => {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
};

/** The refusal, as the problem body every other error of the API has. */
function refuse(request: IncomingMessage, response: ServerResponse, reason: AdmissionRefusal) {
  const body = JSON.stringify({
    type: 'https://gleaner.dev/problems/service-unavailable',
    title: 'Service Unavailable',
    status: 503,
    detail: BUSY_DETAIL,
    instance: pathOf(request.url ?? '/'),
    reason,
  });
  response.writeHead(503, {
    'content-type': 'application/problem+json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'retry-after': String(RETRY_AFTER_SECONDS),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-request-id': requestIdFrom(request.headers['x-request-id']),
  });
  response.end(body);
}

/** The in-flight limit's floor: one slow request must not keep a process from answering. */
const MIN_LIMIT = 2;
/** Latencies a window needs before its median says anything. */
const MIN_SAMPLES = 5;
/** Latencies kept per window at most: enough for a median, bounded memory. */
const MAX_SAMPLES = 512;

export interface InFlightLimit {
  /** The number of requests that may be in flight now. */
  current(): number;
  /** A request was refused, or admitted up to the limit: the limit is what held it. */
  reached(): void;
  /** A quick read's latency, from its admission to its answer's last byte. */
  record(latencyMs: number): void;
  /** Ends a window: shrinks the limit when its median latency was too high, else grows one held. */
  adjust(): void;
}

/**
 * An in-flight limit that follows latency (additive increase, multiplicative decrease, as TCP's
 * congestion window and Netflix's concurrency-limits do): each window whose quick reads' median
 * latency is above `targetMs` takes a fifth off the limit; each window that reached the limit and
 * kept the latency adds a tenth (at least one). Searches and run statuses are slow by nature and
 * have their own turns (plugins/load-shed.ts): they are not recorded.
 */
export function createInFlightLimit({
  max,
  targetMs,
}: {
  max: number;
  targetMs: number;
}): InFlightLimit {
  let limit = max;
  let samples: number[] = [];
  let held = false;
  return {
    current: () => limit,
    reached() {
      held = true;
    },
    record(latencyMs) {
      if (samples.length < MAX_SAMPLES) samples.push(latencyMs);
    },
    adjust() {
      if (samples.length >= MIN_SAMPLES) {
        samples.sort((a, b) => a - b);
        const median = samples[samples.length >> 1]!;
        if (median > targetMs) limit = Math.max(MIN_LIMIT, Math.floor(limit * 0.8));
        else if (held) limit = Math.min(max, limit + Math.max(1, Math.floor(limit / 10)));
      } else if (held) limit = Math.min(max, limit + 1);
      samples = [];
      held = false;
    },
  };
}

/** GET requests whose latency says how loaded the process is: not searches nor run statuses. */
function isQuickRead(request: IncomingMessage, path: string): boolean {
  if (request.method !== 'GET') return false;
  if (path === '/documents/search' || /^\/jobs\/scrape\/[^/]+$/.test(path)) return false;
  return !(path === '/postings' && /[?&]q=/.test(request.url ?? ''));
}

/** Whether the event loop was late and busy over the last sample, refreshed every sample. */
function sampleEventLoop(maxDelayMs: number): { pressed(): boolean; stop(): void } {
  if (maxDelayMs <= 0) return { pressed: () => false, stop: () => {} };
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let utilization: EventLoopUtilization = performance.eventLoopUtilization();
  let pressed = false;
  const timer = setInterval(() => {
    const delay = Math.max(0, histogram.mean / 1e6 - RESOLUTION_MS);
    histogram.reset();
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, utilization).utilization;
    utilization = now;
    pressed = delay > maxDelayMs && busy >= BUSY_LOOP_UTILIZATION;
  }, SAMPLE_INTERVAL_MS);
  timer.unref();
  return {
    pressed: () => pressed,
    stop() {
      clearInterval(timer);
      histogram.disable();
    },
  };
}

export function createAdmission({ settings, onRefused }: AdmissionOptions): Admission {
  const limit =
    settings.API_MAX_IN_FLIGHT > 0
      ? createInFlightLimit({
          max: settings.API_MAX_IN_FLIGHT,
          targetMs: settings.API_SHED_LATENCY_MS,
        })
      : undefined;
  // Sampled from the moment the server listens: building the app keeps the loop busy for a while,
  // and a first sample that counted it would refuse the first requests of a process at rest.
  let eventLoop: ReturnType<typeof sampleEventLoop> | undefined;
  let adjusting: NodeJS.Timeout | undefined;
  let inFlight = 0;
  const stop = () => {
    eventLoop?.stop();
    clearInterval(adjusting);
  };

  function refusal(): AdmissionRefusal | undefined {
    if (limit && inFlight >= limit.current()) return 'in-flight';
    // With nothing in flight, a late loop was a request that has ended: the new one waits for none.
    if (inFlight > 0 && eventLoop?.pressed()) return 'event-loop-delay';
    return undefined;
  }

  const serverFactory: FastifyServerFactory = (handler, options) => {
    const server = http.createServer(options.http ?? {}, (request, response) => {
      const path = pathOf(request.url ?? '/');
      const refused = refusal();
      if (refused !== undefined && !NEVER_REFUSED.has(path)) {
        if (refused === 'in-flight') limit?.reached();
        onRefused?.(refused);
        refuse(request, response, refused);
        return;
      }
      inFlight++;
      if (limit && inFlight >= limit.current()) limit.reached();
      const started = isQuickRead(request, path) ? performance.now() : undefined;
      // 'close' follows the answer's last byte, or the caller hanging up first: once either way.
      response.once('close', () => {
        inFlight--;
        if (started !== undefined && response.writableFinished)
          limit?.record(performance.now() - started);
      });
      handler(request, response);
    });
    // What Fastify sets on the server it creates itself (its options hold their defaults here).
    const timeouts = options as {
      keepAliveTimeout?: number;
      requestTimeout?: number;
      connectionTimeout?: number;
      maxRequestsPerSocket?: number;
    };
    if (timeouts.keepAliveTimeout !== undefined)
      server.keepAliveTimeout = timeouts.keepAliveTimeout;
    if (timeouts.requestTimeout !== undefined) server.requestTimeout = timeouts.requestTimeout;
    if (timeouts.connectionTimeout !== undefined) server.setTimeout(timeouts.connectionTimeout);
    if (timeouts.maxRequestsPerSocket) server.maxRequestsPerSocket = timeouts.maxRequestsPerSocket;
    server.on('listening', () => {
      stop();
      eventLoop = sampleEventLoop(settings.API_SHED_EVENT_LOOP_DELAY_MS);
      if (limit) {
        adjusting = setInterval(() => limit.adjust(), SAMPLE_INTERVAL_MS);
        adjusting.unref();
      }
    });
    server.once('close', stop);
    return server;
  };

  return {
    serverFactory,
    inFlight: () => inFlight,
    limit: () => limit?.current(),
    stop,
  };
}
