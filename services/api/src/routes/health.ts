import { pingDb } from '@gleaner/db';
import { queueCounts } from '@gleaner/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { health, jobsHealth } from '../openapi/views.js';

async function probe(
  check: () => Promise<unknown>,
  timeoutMs = 2_000,
): Promise<{ ok: boolean; error?: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { ok: true };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

export const healthRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const checks = async () => {
    const [redis, postgres] = await Promise.all([
      probe(() => deps.redis.ping()),
      probe(() => pingDb(deps.pool)),
    ]);
    return { redis, postgres };
  };

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
    async (_request, reply) => {
      const result = await checks();
      let queues: Record<string, unknown> | undefined;
      let queueError: string | undefined;
      if (result.redis.ok) {
        try {
          queues = await queueCounts(deps.queues);
        } catch (error) {
          queueError = (error as Error).message;
        }
      }
      const ok = result.redis.ok && result.postgres.ok && queueError === undefined;
      return reply.code(ok ? 200 : 503).send({
        status: ok ? 'healthy' : 'unhealthy',
        service: 'jobs',
        checks: {
          ...result,
          queues: queues
            ? { ok: true, counts: queues }
            : { ok: false, error: queueError ?? 'redis unavailable' },
        },
      });
    },
  );
};
