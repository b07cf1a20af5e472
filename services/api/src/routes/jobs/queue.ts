import { queueCounts } from '@gleaner/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiDeps } from '../../deps.js';

export const queueRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/jobs/queue/status',
    { schema: { tags: ['jobs'], summary: 'Job counts and worker counts per queue' } },
    async () => {
      return { status: 'success', data: await queueCounts(deps.queues) };
    },
  );
};
