import { keyPrefixOf } from '@gleaner/queue';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiDeps } from '../deps.js';
import { createSystemMetrics } from '../metrics/system-metrics.js';
import { problemResponses } from '../openapi/problem.js';

/**
 * `GET /metrics`: the whole system in the Prometheus text format (README, "Metrics"), for viewer
 * and admin keys.
 */
export const metricsRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const metrics = createSystemMetrics(
    {
      db: deps.db,
      redis: deps.redis,
      queues: deps.queues,
      prefix: keyPrefixOf(deps.queues),
      tenantDailyTokens: deps.config.EXTRACTION_TENANT_DAILY_TOKENS,
    },
    deps.logger,
  );

  app.get(
    '/metrics',
    {
      // Scraped every few seconds: its request lines would bury the others.
      logLevel: 'warn',
      schema: {
        tags: ['metrics'],
        summary: 'Queues, sites, work, LLM and scheduler metrics in the Prometheus text format',
        description:
          'Read at scrape time from Redis and Postgres, so every API replica answers the same: point Prometheus at one. Families whose source did not answer are left out and `gleaner_metrics_collector_success` says which.',
        response: {
          200: {
            description: 'The Prometheus text exposition format, version 0.0.4',
            content: { 'text/plain': { schema: z.string() } },
          },
          ...problemResponses(),
        },
      },
    },
    async (_request, reply) => {
      const text = await metrics.scrape();
      return reply.type(metrics.contentType).send(text);
    },
  );
};
