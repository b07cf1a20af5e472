import { listExtractionBackfills, type ExtractionBackfillRow } from '@gleaner/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { backfillView, success } from '../openapi/views.js';

/**
 * The extractor backfill's progress (decision 0013): each extractor version's re-extraction of
 * the stored postings, most recently started first. Workers start one when they run a new
 * extractor version; the scheduler keeps it moving.
 */
export const adminBackfillRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (
  app,
  { deps },
) => {
  const { db } = deps;

  app.get(
    '/admin/backfill',
    {
      schema: {
        tags: ['extraction'],
        summary: 'Extractor backfills: re-extraction of stored postings per extractor version',
        description:
          'Most recently started first; the first is the current extractor version unless it is `superseded`. A backfill re-extracts postings from their stored listing payload or page body, never fetching; a posting whose body is gone is counted in `skipped`.',
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(100).default(20) }),
        response: {
          200: success(z.array(backfillView)).describe('Backfills, newest first'),
          ...problemResponses(400),
        },
      },
    },
    async (request) => {
      const backfills = await listExtractionBackfills(db, request.query.limit);
      return { status: 'success' as const, data: backfills.map(presentBackfill) };
    },
  );
};

function presentBackfill(row: ExtractionBackfillRow) {
  return {
    version: row.version,
    status: row.status,
    total: row.total,
    done: row.done,
    skipped: row.skipped,
    failed: row.failed,
    remaining:
      row.status === 'running' ? Math.max(0, row.total - row.done - row.skipped - row.failed) : 0,
    batches: row.batches,
    last_error: row.lastError,
    started_at: row.startedAt.toISOString(),
    finished_at: row.finishedAt?.toISOString() ?? null,
    updated_at: row.updatedAt.toISOString(),
  };
}
