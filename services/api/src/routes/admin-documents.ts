import { retryFailedDocuments } from '@gleaner/db';
import { enqueueDocuments } from '@gleaner/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';

const pauseState = z.object({ paused: z.boolean() });

/**
 * Seed 001's pause, resume and retry_failed for operators, for admin keys. Pause
 * is BullMQ's queue-wide pause: every worker replica stops taking documents jobs (those in
 * flight finish) until resumed, and a worker's heartbeat then says `paused`.
 */
export const adminDocumentRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (
  app,
  { deps },
) => {
  const { queues } = deps;

  app.post(
    '/admin/documents/pause',
    {
      schema: {
        tags: ['documents'],
        summary: 'Pause document extraction on every worker (jobs in flight finish)',
        response: { 200: pauseState.describe('Paused'), ...problemResponses() },
      },
    },
    async (request) => {
      await queues.documents.pause();
      request.log.info('documents queue paused');
      return { paused: await queues.documents.isPaused() };
    },
  );

  app.post(
    '/admin/documents/resume',
    {
      schema: {
        tags: ['documents'],
        summary: 'Resume document extraction',
        response: { 200: pauseState.describe('Resumed'), ...problemResponses() },
      },
    },
    async (request) => {
      await queues.documents.resume();
      request.log.info('documents queue resumed');
      return { paused: await queues.documents.isPaused() };
    },
  );

  app.post(
    '/admin/documents/retry',
    {
      schema: {
        tags: ['documents'],
        summary: 'Retry failed documents: all of them, or those of `ids` (cancelled ones too)',
        description:
          'Each failed document goes back to `pending` with its attempts reset and is queued again. Named in `ids`, a cancelled document is retried too; without `ids`, cancelled ones are left as they are. Ids of documents that are neither are left out of the answer.',
        body: z
          .object({ ids: z.array(z.uuid()).min(1).max(1000).optional() })
          .strict()
          // No body at all means every failed document.
          .nullish(),
        response: {
          200: z
            .object({ retried: z.int(), ids: z.array(z.uuid()) })
            .describe('The documents retried'),
          ...problemResponses(400),
        },
      },
    },
    async (request) => {
      const retried = await retryFailedDocuments(deps.db, request.body?.ids);
      await enqueueDocuments(queues, retried, { maxRetries: deps.config.DOCUMENT_MAX_RETRIES });
      request.log.info({ retried: retried.length }, 'failed documents retried');
      return { retried: retried.length, ids: retried.map((work) => work.id) };
    },
  );
};
