import { desc, eq } from 'drizzle-orm';
import type { Database } from '../client.js';
import { auditLog } from '../schema.js';
import { recordAudit } from './api-keys.js';

/**
 * What Gleaner keeps on disk, and the statements that keep it bounded (decision 0014): a
 * posting's history is trimmed to its newest versions, and a page body nothing points at any more
 * is deleted once it has not been stored for a grace period. Each batch is one statement, so a
 * pass holds one pooled connection at a time and never a long transaction.
 */

/** One batch of history trimming, walked in `posting_id` order. */
export interface HistoryBatch {
  /** Postings with versions this batch looked at. */
  postings: number;
  /** Version rows deleted: those beyond each posting's newest `keep`. */
  trimmed: number;
  /** The last posting id looked at: the next batch starts after it; null when none was left. */
  last: string | null;
}

/**
 * Deletes, for the next `limit` postings with versions after `after`, every version beyond the
 * newest `keep`. The postings are read off the unique index `(posting_id, version)` in key order
 * and each one's old versions from the same index, newest first; a version a writer adds meanwhile
 * is a newer one (KEEP_PREVIOUS_VERSION numbers it max + 1), so it is never the one trimmed.
 */
export async function trimPostingHistory(
  db: Database,
  options: { after: string | null; limit: number; keep: number },
): Promise<HistoryBatch> {
  const { rows } = await db.$client.query<HistoryBatch>({
    name: 'gleaner-trim-posting-history',
    text: `
      WITH batch AS (
        SELECT DISTINCT posting_id FROM posting_versions
        WHERE posting_id > coalesce($1::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
        ORDER BY posting_id LIMIT $2
      ), doomed AS (
        SELECT old.id FROM batch b
        CROSS JOIN LATERAL (
          SELECT v.id FROM posting_versions v WHERE v.posting_id = b.posting_id
          ORDER BY v.version DESC OFFSET $3
        ) old
      ), gone AS (
        DELETE FROM posting_versions v USING doomed d WHERE v.id = d.id RETURNING 1
      )
      SELECT (SELECT count(*)::int FROM batch) AS postings,
             (SELECT count(*)::int FROM gone) AS trimmed,
             (SELECT b.posting_id FROM batch b ORDER BY b.posting_id DESC LIMIT 1)::text AS last`,
    values: [options.after, options.limit, options.keep],
  });
  return rows[0]!;
}

/** One batch of the body sweep, walked in `sha256` order. */
export interface BodyBatch {
  /** Bodies this batch looked at. */
  scanned: number;
  deleted: number;
  /** What the deleted bodies took in the table, as stored (after Postgres's compression). */
  bytesFreed: number;
  /** The last sha256 looked at: the next batch starts after it; null when none was left. */
  last: string | null;
}

/**
 * Deletes, among the next `limit` bodies after `after` (sha256 order, off the primary key), those
 * stored more than `graceMs` ago that no posting, no posting version and no site template label
 * (decision 0028) points at. The test is in
 * the DELETE itself, through the hash indexes on `body_sha256` (migration 0010), so it holds per
 * row at the moment of deletion: a body a writer stores again meanwhile has its `stored_at` moved
 * (`storeBody`), which the DELETE re-reads on the locked row and then leaves the body alone.
 * A writer points a posting at a body only after storing it, within the grace period.
 */
export async function deleteUnreferencedBodies(
  db: Database,
  options: { after: string | null; limit: number; graceMs: number },
): Promise<BodyBatch> {
  const { rows } = await db.$client.query<BodyBatch>({
    name: 'gleaner-delete-unreferenced-bodies',
    text: `
      WITH batch AS (
        SELECT sha256 FROM page_bodies WHERE sha256 > $1 ORDER BY sha256 LIMIT $2
      ), gone AS (
        DELETE FROM page_bodies b USING batch
        WHERE b.sha256 = batch.sha256
          AND b.stored_at < now() - $3::float8 * interval '1 millisecond'
          AND NOT EXISTS (SELECT 1 FROM postings p WHERE p.body_sha256 = b.sha256)
          AND NOT EXISTS (SELECT 1 FROM posting_versions v WHERE v.body_sha256 = b.sha256)
          AND NOT EXISTS (SELECT 1 FROM site_template_labels l WHERE l.body_sha256 = b.sha256)
        RETURNING pg_column_size(b.content) AS stored
      )
      SELECT (SELECT count(*)::int FROM batch) AS scanned,
             (SELECT count(*)::int FROM gone) AS deleted,
             (SELECT coalesce(sum(stored), 0)::float8 FROM gone) AS "bytesFreed",
             (SELECT max(sha256) FROM batch) AS last`,
    values: [options.after ?? '', options.limit, options.graceMs],
  });
  return rows[0]!;
}

/** The tables a posting's storage is made of, and the other large ones. */
export const storageTables = [
  'postings',
  'posting_versions',
  'posting_changes',
  'page_bodies',
  'llm_extractions',
  'documents',
] as const;
export type StorageTable = (typeof storageTables)[number];

export interface TableStorage {
  table: StorageTable;
  /** The table's own pages (with its free space and visibility maps). */
  heapBytes: number;
  /** Its TOAST table and that table's index: large bodies, descriptions and fields live there. */
  toastBytes: number;
  indexBytes: number;
  /** heap + TOAST + indexes. */
  totalBytes: number;
  /** Postgres's estimate; null until the table was first analysed (autovacuum does it soon). */
  estimatedRows: number | null;
}

export interface StorageReport {
  tables: TableStorage[];
  /**
   * postings + posting_versions + posting_changes + page_bodies, all parts, per estimated
   * posting: what one more posting costs on disk, history, change feed and page included. Null
   * without postings.
   */
  bytesPerPosting: number | null;
}

/**
 * The size of each storage table by part, and its estimated row count, read from the catalogue
 * only (no table is scanned: the answer takes the same time at 2,000,000 postings as at 10).
 * Rows are estimated as the planner does: the density `reltuples / relpages` of the last
 * analysis times the table's pages now, so the estimate follows growth between analyses.
 */
export async function readStorageReport(db: Database): Promise<StorageReport> {
  const { rows } = await db.$client.query<Omit<TableStorage, 'totalBytes'>>({
    name: 'gleaner-storage-report',
    text: `
      SELECT t.name AS "table",
             (pg_table_size(c.oid) - toast.bytes)::float8 AS "heapBytes",
             toast.bytes::float8 AS "toastBytes",
             pg_indexes_size(c.oid)::float8 AS "indexBytes",
             CASE WHEN c.reltuples < 0 THEN NULL
                  WHEN c.relpages = 0 THEN c.reltuples
                  ELSE round(c.reltuples / c.relpages
                             * (pg_relation_size(c.oid) / current_setting('block_size')::int))
             END::float8 AS "estimatedRows"
      FROM unnest($1::text[]) AS t(name)
      JOIN pg_class c ON c.oid = to_regclass(t.name)
      CROSS JOIN LATERAL (
        SELECT coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0::oid)), 0) AS bytes
      ) toast`,
    values: [storageTables],
  });
  const tables = rows.map((row) => ({
    ...row,
    totalBytes: row.heapBytes + row.toastBytes + row.indexBytes,
  }));
  const byName = new Map(tables.map((row) => [row.table, row]));
  const postings = byName.get('postings')?.estimatedRows ?? 0;
  const postingBytes = (
    ['postings', 'posting_versions', 'posting_changes', 'page_bodies'] as const
  ).reduce((sum, table) => sum + (byName.get(table)?.totalBytes ?? 0), 0);
  return {
    tables: storageTables.flatMap((table) => byName.get(table) ?? []),
    bytesPerPosting: postings > 0 ? Math.round(postingBytes / postings) : null,
  };
}

/** One pass of the body sweeper, as its replica reports it. */
export interface BodySweepReport {
  replica: string;
  startedAt: string;
  durationMs: number;
  /** Postings whose history the pass looked at, and the version rows it deleted. */
  postingsWithHistory: number;
  versionsTrimmed: number;
  bodiesScanned: number;
  bodiesDeleted: number;
  /** Change feed events past CHANGE_FEED_RETENTION_DAYS that the pass deleted. */
  changesTrimmed: number;
  /** Settled webhook deliveries (and their attempts) past the same retention that it deleted. */
  webhookDeliveriesTrimmed: number;
  /** As stored (after compression); Postgres reuses the space once autovacuum has passed. */
  bytesFreed: number;
  /** The scheduler was stopping: the pass ended between two batches. */
  stopped: boolean;
  /** Why the pass ended early, when it failed; the next pass starts again. */
  error: string | null;
}

const SWEEP_ACTION = 'storage.sweep';

/**
 * Keeps a pass's report as an audit entry (`storage.sweep`): deleting stored bodies and history
 * is what the audit log is for, and the latest entry is `GET /admin/storage`'s last pass.
 */
export async function recordBodySweep(db: Database, report: BodySweepReport): Promise<void> {
  await recordAudit(db, {
    apiKeyId: null,
    actor: `scheduler (${report.replica})`,
    action: SWEEP_ACTION,
    affected:
      report.bodiesDeleted +
      report.versionsTrimmed +
      report.changesTrimmed +
      report.webhookDeliveriesTrimmed,
    details: { ...report },
  });
}

/** The latest pass of any replica, from the audit log's `(action, at)` index; null before one. */
export async function readLastBodySweep(db: Database): Promise<BodySweepReport | null> {
  const [row] = await db
    .select({ details: auditLog.details })
    .from(auditLog)
    .where(eq(auditLog.action, SWEEP_ACTION))
    .orderBy(desc(auditLog.at))
    .limit(1);
  return row ? (row.details as unknown as BodySweepReport) : null;
}
