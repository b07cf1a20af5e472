import {
  readLastBodySweep,
  readStorageReport,
  storageTables,
  type BodySweepReport,
  type TableStorage,
} from '@gleaner/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { success } from '../openapi/views.js';

const bytes = (what: string) => z.number().int().min(0).describe(what);

const tableView = z.object({
  table: z.enum(storageTables),
  heap_bytes: bytes("The table's own pages, with its free space and visibility maps"),
  toast_bytes: bytes('Its TOAST table and index: large bodies, descriptions and fields'),
  index_bytes: bytes('Its indexes'),
  total_bytes: bytes('heap + TOAST + indexes'),
  estimated_rows: z
    .number()
    .int()
    .min(0)
    .nullable()
    .describe("Postgres's estimate (no count is run); null until the table was first analysed"),
});

const sweepView = z
  .object({
    replica: z.string().describe('The scheduler replica that ran it'),
    started_at: z.iso.datetime(),
    duration_ms: z.number().int().min(0),
    postings_with_history: z.number().int().min(0),
    versions_trimmed: z
      .number()
      .int()
      .min(0)
      .describe('Versions beyond each posting’s newest POSTING_HISTORY_VERSIONS, deleted'),
    bodies_scanned: z.number().int().min(0),
    bodies_deleted: z.number().int().min(0),
    changes_trimmed: z
      .number()
      .int()
      .min(0)
      .describe('Change feed events older than CHANGE_FEED_RETENTION_DAYS, deleted'),
    bytes_freed: bytes('What the deleted bodies took as stored (after compression)'),
    stopped: z.boolean().describe('The scheduler was stopping: the pass ended between batches'),
    error: z.string().nullable().describe('Why the pass ended early; the next pass retries'),
  })
  .describe("The body sweeper's latest pass on any replica");

const storageView = z.object({
  tables: z.array(tableView),
  bytes_per_posting: z
    .number()
    .int()
    .min(0)
    .nullable()
    .describe(
      'postings + posting_versions + posting_changes + page_bodies, every part, per estimated posting; null without postings',
    ),
  last_sweep: sweepView.nullable().describe('Null before the first pass'),
});

/**
 * What Gleaner keeps on disk (decision 0014): each storage table's size by part and its estimated
 * rows, read from Postgres's catalogue (as fast at millions of postings as at ten), what a
 * posting costs all told, and what the body sweeper's latest pass removed.
 */
export const adminStorageRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (
  app,
  { deps },
) => {
  const { db } = deps;

  app.get(
    '/admin/storage',
    {
      schema: {
        tags: ['storage'],
        summary: 'Storage by table, bytes per posting, and the body sweeper’s latest pass',
        description:
          'Sizes come from `pg_table_size`, `pg_indexes_size` and the TOAST table of each; rows are estimated from `pg_class.reltuples` (scaled to the table’s current size), never counted. Bodies no posting or posting version points at are deleted by the scheduler’s body sweeper once they have not been stored for `BODY_SWEEP_GRACE_MS`; freed space is reused by Postgres after autovacuum, not returned to the disk.',
        response: {
          200: success(storageView).describe('Storage now, and the latest sweep'),
          ...problemResponses(),
        },
      },
    },
    async () => {
      const [report, sweep] = await Promise.all([readStorageReport(db), readLastBodySweep(db)]);
      return {
        status: 'success' as const,
        data: {
          tables: report.tables.map(presentTable),
          bytes_per_posting: report.bytesPerPosting,
          last_sweep: sweep ? presentSweep(sweep) : null,
        },
      };
    },
  );
};

function presentTable(row: TableStorage) {
  return {
    table: row.table,
    heap_bytes: row.heapBytes,
    toast_bytes: row.toastBytes,
    index_bytes: row.indexBytes,
    total_bytes: row.totalBytes,
    estimated_rows: row.estimatedRows,
  };
}

function presentSweep(sweep: BodySweepReport) {
  return {
    replica: sweep.replica,
    started_at: sweep.startedAt,
    duration_ms: sweep.durationMs,
    postings_with_history: sweep.postingsWithHistory,
    versions_trimmed: sweep.versionsTrimmed,
    bodies_scanned: sweep.bodiesScanned,
    bodies_deleted: sweep.bodiesDeleted,
    // A pass recorded before the change feed existed has no such count.
    changes_trimmed: (sweep.changesTrimmed as number | undefined) ?? 0,
    bytes_freed: sweep.bytesFreed,
    stopped: sweep.stopped,
    error: sweep.error,
  };
}
