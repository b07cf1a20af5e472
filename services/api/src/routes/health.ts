import { pingDb } from '@gleaner/db';
import { queueCounts } from '@gleaner/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { health, jobsHealth } from '../openapi/views.js';

/** How long a probe's answer is reused: a balancer polling every second costs one ping a second. */
const PROBE_TTL_MS = 1_000;
const PROBE_TIMEOUT_MS = 2_000;

type Check = 'redis' | 'postgres';

/**
 * Redis and Postgres pinged at most once per PROBE_TTL_MS however often /health is called, and
 * concurrent callers share one ping: a probe that opened a query per call took a pool connection
 * from the routes under load. The answer says ok or not per check; why a check failed goes to
 * the log, not to an unauthenticated caller (a backend's error text names hosts and users).
 */
function createProbes(deps: ApiDeps) {
  const checks: Record<Check, () => Promise<unknown>> = {
    redis: () => deps.redis.ping(),
    postgres: () => pingDb(deps.pool),
  };
  let last: { at: number; result: Record<Check, { ok: boolean }> } | undefined;
  let running: Promise<Record<Check, { ok: boolean }>> | undefined;

  async function probe(name: Check): Promise<{ ok: boolean }> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        checks[name](),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)),
            PROBE_TIMEOUT_MS,
          );
        }),
      ]);
      return { ok: true };
    } catch (error) {
      deps.logger.warn({ err: error, check: name }, 'health check failed');
      return { ok: false };
    } finally {
      clearTimeout(timer);
    }
  }

  return (): Promise<Record<Check, { ok: boolean }>> => {
    if (last && performance.now() - last.at < PROBE_TTL_MS) return Promise.resolve(last.result);
    running ??= Promise.all([probe('redis'), probe('postgres')])
      .then(([redis, postgres]) => {
        last = { at: performance.now(), result: { redis, postgres } };
        return last.result;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}

export const healthRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const checks = createProbes(deps);

  app.get(
    '/health',
    {
      logLevel: 'warn',
      schema: {
        tags: ['health'],
        summary: 'Overall health: Redis and Postgres reachable',
        // Open to anyone: load balancers and compose probe it without a key.
        security: [],
        response: {
          200: health.describe('Redis and Postgres answer'),
          503: health.describe('Redis or Postgres does not answer'),
        },
      },
    },
    async (_request, reply) => {
      const result = await checks();
      const ok = result.redis.ok && result.postgres.ok;
      return reply
        .code(ok ? 200 : 503)
        .send({ status: ok ? 'healthy' : 'unhealthy', service: 'api', checks: result });
    },
  );

  app.get(
    '/jobs/health',
    {
      logLevel: 'warn',
      schema: {
        tags: ['health'],
        summary: 'Scraping health: Redis, Postgres, queues and their workers',
        response: {
          ...problemResponses(),
          200: jobsHealth.describe('Redis, Postgres and the queues answer'),
          503: jobsHealth.describe('Redis, Postgres or the queues do not answer'),
        },
      },
    },
    async (request, reply) => {
      const result = await checks();
      let queues: Record<string, unknown> | undefined;
      if (result.redis.ok) {
        try {
          queues = await queueCounts(deps.queues);
        } catch (error) {
          request.log.warn({ err: error }, 'queue counts failed');
        }
      }
      const ok = result.redis.ok && result.postgres.ok && queues !== undefined;
      return reply.code(ok ? 200 : 503).send({
        status: ok ? 'healthy' : 'unhealthy',
        service: 'jobs',
        checks: {
          ...result,
          queues: queues ? { ok: true, counts: queues } : { ok: false },
        },
      });
    },
  );
};
