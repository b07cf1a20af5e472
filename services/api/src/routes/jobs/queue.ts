import { queueCounts } from '@gleaner/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiDeps } from '../../deps.js';
import { problemResponses } from '../../openapi/problem.js';
import { queueStatus } from '../../openapi/views.js';

export const queueRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/jobs/queue/status',
    {
      schema: {
        tags: ['jobs'],
        summary: 'Job counts and worker counts per queue',
        response: { 200: queueStatus.describe('Counts by queue'), ...problemResponses() },
      },
    },
    async () => {
      return { status: 'success' as const, data: await queueCounts(deps.queues) };
    },
  );
};
