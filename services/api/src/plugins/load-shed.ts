import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type pg from 'pg';
import type { ApiDeps } from '../deps.js';
import { BUSY_DETAIL, NEVER_REFUSED, RETRY_AFTER_SECONDS } from '../admission.js';
import { ProblemError } from './problem.js';

/**
 * Load shedding, the part that needs the route: a request this process cannot start soon is
 * answered `503` with `Retry-After` at once, so that the requests it does start keep their
 * latency. Without it, on a 2-core host offered more than it could serve, every request queued (in
 * the Postgres pool, behind slow searches) until its caller timed out: 677–986 answers/s of 1,000
 * offered, p99 1–10 s, and searches answered none of 20,000. What can be decided from the socket
 * alone (too many requests in flight, a late event loop) is decided earlier and cheaper, in
 * admission.ts.
 *
 * A request is shed when, as it arrives,
 *   - API_SHED_POOL_WAITING queries already wait for a Postgres connection: the database is the
 *     bottleneck and one more query would wait behind them all;
 *   - it is an expensive request (a search, a run's status) and the route's API_*_CONCURRENCY
 *     requests are in flight with no turn free within API_SHED_QUEUE_MS: a cold search costs
 *     100 ms to 1 s of a core at two million postings, and a burst of them must not take every
 *     pool connection from the cheap routes.
 *
 * `/health` and `/metrics` are never shed: a balancer and Prometheus must still see the process.
 */

export type ShedReason = 'pool-waiting' | 'queue-full' | 'queue-time';

/** How many requests may wait for a turn per expensive route, for each one in flight. */
const QUEUED_PER_SLOT = 8;

type LoadShedSettings = Pick<
  ApiDeps['config'],
  | 'API_SHED_POOL_WAITING'
  | 'API_SEARCH_CONCURRENCY'
  | 'API_RUN_STATUS_CONCURRENCY'
  | 'API_SHED_QUEUE_MS'
>;

export interface LoadShedOptions {
  settings: LoadShedSettings;
  pool: Pick<pg.Pool, 'waitingCount'>;
  /** Called for each shed request (a metric counts them). */
  onShed?: (reason: ShedReason) => void;
}

/** The expensive request classes, each with its own limit, or undefined for a cheap request. */
function expensiveClass(
  request: FastifyRequest,
): 'posting-search' | 'document-search' | 'run-status' | undefined {
  if (request.method !== 'GET') return undefined;
  switch (request.routeOptions.url) {
    case '/postings':
      return (request.query as { q?: unknown } | undefined)?.q === undefined
        ? undefined
        : 'posting-search';
    case '/documents/search':
      return 'document-search';
    case '/jobs/scrape/:runId':
      return 'run-status';
    default:
      return undefined;
  }
}

/**
 * At most `concurrency` holders at once; a caller may wait `maxWaitMs` for a turn, and at most
 * `maxQueued` wait at a time. `acquire` resolves true with a turn, false when it was refused.
 */
function createTurns(concurrency: number, maxQueued: number, maxWaitMs: number) {
  let inFlight = 0;
  const waiting: { grant: () => void; timer: NodeJS.Timeout }[] = [];
  return {
    acquire(): Promise<ShedReason | undefined> | ShedReason | undefined {
      if (inFlight < concurrency) {
        inFlight++;
        return undefined;
      }
      if (waiting.length >= maxQueued || maxWaitMs === 0) return 'queue-full';
      return new Promise((resolve) => {
        const entry = {
          grant: () => {
            clearTimeout(entry.timer);
            resolve(undefined);
          },
          timer: setTimeout(() => {
            waiting.splice(waiting.indexOf(entry), 1);
            resolve('queue-time');
          }, maxWaitMs),
        };
        waiting.push(entry);
      });
    },
    release() {
      const next = waiting.shift();
      if (next) next.grant();
      else inFlight--;
    },
  };
}

/** The answer to a shed request: thrown, so that the error handler renders it as any problem. */
function busy(reason: ShedReason): ProblemError {
  return new ProblemError(503, 'Service Unavailable', BUSY_DETAIL, {
    reason,
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
  });
}

export const loadShedPlugin = fp(
  async (app: FastifyInstance, { settings, pool, onShed }: LoadShedOptions) => {
    const isExempt = (request: FastifyRequest) => NEVER_REFUSED.has(request.routeOptions.url ?? '');

    const limits = {
      'posting-search': settings.API_SEARCH_CONCURRENCY,
      'document-search': settings.API_SEARCH_CONCURRENCY,
      'run-status': settings.API_RUN_STATUS_CONCURRENCY,
    };
    const turns = Object.fromEntries(
      Object.entries(limits)
        .filter(([, concurrency]) => concurrency > 0)
        .map(([name, concurrency]) => [
          name,
          createTurns(concurrency, concurrency * QUEUED_PER_SLOT, settings.API_SHED_QUEUE_MS),
        ]),
    ) as Partial<Record<keyof typeof limits, ReturnType<typeof createTurns>>>;
    const releases = new WeakMap<FastifyRequest, () => void>();
    const release = (request: FastifyRequest) => {
      releases.get(request)?.();
      releases.delete(request);
    };

    app.addHook('onRequest', async (request) => {
      if (isExempt(request)) return;
      if (
        settings.API_SHED_POOL_WAITING > 0 &&
        pool.waitingCount >= settings.API_SHED_POOL_WAITING
      ) {
        onShed?.('pool-waiting');
        throw busy('pool-waiting');
      }
      const kind = expensiveClass(request);
      const limit = kind && turns[kind];
      if (!limit) return;
      const refused = await limit.acquire();
      if (refused) {
        onShed?.(refused);
        throw busy(refused);
      }
      releases.set(request, () => limit.release());
    });
    // A turn is given back once the answer is sent, or when the caller hangs up first.
    app.addHook('onResponse', async (request) => release(request));
    app.addHook('onRequestAbort', async (request) => release(request));
  },
  { name: 'load-shed' },
);
