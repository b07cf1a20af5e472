/**
 * The load generator of `pnpm bench api`, a child process of its own (started by api.ts with
 * `fork`) so that it never shares an event loop with the API it measures. For each route the
 * parent sends, it offers an open-loop load: request n is scheduled at start + n / rate whether
 * or not earlier ones have answered, and its latency is measured from that scheduled time, so a
 * stalled server shows up as latency rather than as fewer requests (no coordinated omission).
 * The first `warmUpSeconds` of requests are sent but not counted.
 */
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

export interface LoadRequest {
  route: string;
  origin: string;
  authorization: string;
  /** Paths sent in turn. */
  paths: string[];
  /** The route each path belongs to, when a load mixes routes (`okByRoute` counts by it). */
  routes?: string[];
  rate: number;
  seconds: number;
  warmUpSeconds: number;
  connections: number;
  /** A request still unanswered this long after its scheduled time is aborted (an error). */
  timeoutMs: number;
  /** When given, `late` counts the requests not answered 2xx within this many ms. */
  boundMs?: number;
}

export interface LoadResult {
  route: string;
  /** Latencies of the counted requests, answered or not, in ms from their scheduled time. */
  p50: number;
  p99: number;
  max: number;
  /** 2xx responses completed within the counted window, per second. */
  rps: number;
  sent: number;
  ok: number;
  /** Counted requests that did not answer 2xx, by status code or error code. */
  errors: Record<string, number>;
  /** How late the generator itself sent requests (p99, ms): above a few ms it is the bottleneck. */
  sendLagP99: number;
  /** The counted second whose requests waited longest (by schedule), and that wait: where a stall was. */
  worstSecond: { at: number; maxMs: number };
  /** Latencies of the counted requests answered 2xx, and of those answered 503 (shed). */
  answered: { p50: number; p99: number; max: number; count: number };
  shed: { p50: number; p99: number; max: number; count: number };
  /** Counted 2xx answers by route (`routes`), when the load mixes routes. */
  okByRoute: Record<string, number>;
  /** Counted requests not answered 2xx within `boundMs` (0 without it). */
  late: number;
}

const percentile = (sorted: Float64Array, share: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!;

const round1 = (value: number) => Math.round(value * 10) / 10;

async function runLoad(request: LoadRequest): Promise<LoadResult> {
  const pool = new Pool(request.origin, {
    connections: request.connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
  });
  const headers = { authorization: request.authorization, accept: 'application/json' };
  const interval = 1000 / request.rate;
  const warmUp = Math.round(request.warmUpSeconds * request.rate);
  const total = warmUp + Math.round(request.seconds * request.rate);
  const latencies = new Float64Array(total - warmUp);
  /** By counted request: 1 answered 2xx, 2 answered 503, 0 anything else. */
  const outcomes = new Uint8Array(total - warmUp);
  const okByRoute: Record<string, number> = {};
  const sendLag = new Float64Array(total);
  const errors: Record<string, number> = {};
  const start = performance.now() + 20;
  const windowStart = start + warmUp * interval;
  const windowEnd = start + total * interval;
  let okInWindow = 0;
  let ok = 0;
  let next = 0;
  let settled = 0;
  let allSettled: () => void = () => {};
  const done = new Promise<void>((resolve) => (allSettled = resolve));

  const send = (index: number, scheduled: number) => {
    sendLag[index] = performance.now() - scheduled;
    const path = request.paths[index % request.paths.length]!;
    const abort = new AbortController();
    const timer = setTimeout(
      () => abort.abort(),
      Math.max(1, scheduled + request.timeoutMs - performance.now()),
    );
    const finish = (error: string | undefined) => {
      clearTimeout(timer);
      const end = performance.now();
      if (error === undefined && end >= windowStart && end <= windowEnd) okInWindow++;
      if (index >= warmUp) {
        latencies[index - warmUp] = end - scheduled;
        outcomes[index - warmUp] =
          error === undefined ? 1 : error?.startsWith('status 503') ? 2 : 0;
        if (error === undefined) ok++;
        else errors[error] = (errors[error] ?? 0) + 1;
        const route = request.routes?.[index % request.paths.length];
        if (error === undefined && route !== undefined)
          okByRoute[route] = (okByRoute[route] ?? 0) + 1;
      }
      if (++settled === total) allSettled();
    };
    pool.request({ path, method: 'GET', headers, signal: abort.signal }).then(
      async (response) => {
        if (response.statusCode === 503) {
          // A shed request's problem body says why (load-shed.ts): counted by reason.
          const body = (await response.body.json().catch(() => ({}))) as { reason?: string };
          finish(`status 503${body.reason ? ` ${body.reason}` : ''}`);
          return;
        }
        await response.body.dump({ limit: Number.MAX_SAFE_INTEGER });
        finish(
          response.statusCode >= 200 && response.statusCode < 300
            ? undefined
            : `status ${response.statusCode}`,
        );
      },
      (error: unknown) => {
        const code = abort.signal.aborted
          ? 'timeout'
          : ((error as { code?: string }).code ?? (error as Error).name ?? 'error');
        finish(code);
      },
    );
  };

  // Fires every request whose time has come, then sleeps until the next one is due.
  const tick = () => {
    const now = performance.now();
    while (next < total && start + next * interval <= now) {
      send(next, start + next * interval);
      next++;
    }
    if (next < total) setTimeout(tick, Math.max(0, start + next * interval - performance.now()));
  };
  setTimeout(tick, Math.max(0, start - performance.now()));
  await done;
  await pool.close();

  const perSecond = Math.round(request.rate);
  let worstSecond = { at: 0, maxMs: 0 };
  for (let index = 0; index < latencies.length; index++) {
    if (latencies[index]! > worstSecond.maxMs)
      worstSecond = { at: Math.floor(index / perSecond), maxMs: round1(latencies[index]!) };
  }
  const sorted = latencies.slice().sort();
  const summary = (outcome: number) => {
    const of = latencies.filter((_, index) => outcomes[index] === outcome).sort();
    return {
      p50: round1(percentile(of, 0.5)),
      p99: round1(percentile(of, 0.99)),
      max: round1(of.at(-1) ?? 0),
      count: of.length,
    };
  };
  return {
    route: request.route,
    p50: round1(percentile(sorted, 0.5)),
    p99: round1(percentile(sorted, 0.99)),
    max: round1(sorted.at(-1) ?? 0),
    rps: round1(okInWindow / request.seconds),
    sent: total - warmUp,
    ok,
    errors,
    sendLagP99: round1(percentile(sendLag.slice().sort(), 0.99)),
    worstSecond,
    answered: summary(1),
    shed: summary(2),
    okByRoute,
    late:
      request.boundMs === undefined
        ? 0
        : latencies.filter((latency, index) => outcomes[index] !== 1 || latency >= request.boundMs!)
            .length,
  };
}

// One route per message from the parent, one result message back; exits when the parent goes.
process.on('message', (message: LoadRequest) => {
  runLoad(message).then(
    (result) => process.send?.({ result }),
    (error: unknown) =>
      process.send?.({ error: error instanceof Error ? error.stack : String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));
