import type { Database } from '../client.js';
import { jsonForPg } from '../pg-text.js';
import { extractedFieldKeys, snakeCase } from '../posting-fields.js';
import { runSettled } from './run-settled.js';
import { KEEP_PREVIOUS_VERSION } from './settle-statement.js';

/**
 * The LLM sync of a run (seed 004's `use_llm_sync`, decision 0025): before a run of such a site
 * closes, the postings it found for the first time are matched with the site's postings it did
 * not list again, so that a posting whose URL moved with a renamed title or a moved location
 * keeps its id and history instead of becoming a new posting beside one that later expires.
 */

/** What the model is shown of a posting: its fields and the start of its text. */
export interface SyncPosting {
  id: string;
  url: string;
  title: string | null;
  company: string | null;
  location: string | null;
  /** The description's text, cut to `SYNC_TEXT_CHARS`. */
  text: string;
}

export interface SyncCandidates {
  siteId: string;
  tenantId: string | null;
  /** Read by this run for the first time. */
  fresh: SyncPosting[];
  /** Open postings of the site this run did not list. */
  missing: SyncPosting[];
}

/** Characters of each posting's description the model is shown. */
export const SYNC_TEXT_CHARS = 1_500;

const SYNC_COLUMNS = `p.id, p.url, p.title, p.company, p.location,
  left(coalesce(p.description_text, ''), ${SYNC_TEXT_CHARS}) AS text`;

/**
 * The postings a run's sync compares, at most `limit` of each kind (the first found, the last
 * seen); undefined when the run is not running with its sync pending.
 */
export async function readSyncCandidates(
  db: Database,
  runId: string,
  { limit = 50 }: { limit?: number } = {},
): Promise<SyncCandidates | undefined> {
  const { rows: runs } = await db.$client.query<{
    site_id: string;
    tenant_id: string | null;
    created_at: Date;
  }>(
    `SELECT r.site_schedule_id AS site_id, s.tenant_id, r.created_at
     FROM scrape_runs r JOIN site_schedules s ON s.id = r.site_schedule_id
     WHERE r.id = $1 AND r.status = 'running' AND r.sync_state = 'pending'`,
    [runId],
  );
  const run = runs[0];
  if (!run) return undefined;
  const [fresh, missing] = await Promise.all([
    db.$client.query<SyncPosting>(
      `SELECT ${SYNC_COLUMNS} FROM postings p
       WHERE p.run_id = $1 AND p.status = 'ready' AND p.first_seen_at >= $2
         AND p.duplicate_of IS NULL
       ORDER BY p.first_seen_at, p.id LIMIT $3`,
      [runId, run.created_at, limit],
    ),
    db.$client.query<SyncPosting>(
      `SELECT ${SYNC_COLUMNS} FROM postings p
       WHERE p.site_id = $1 AND p.run_id IS DISTINCT FROM $2
         AND p.status IN ('ready', 'skipped') AND p.duplicate_of IS NULL
       ORDER BY p.last_seen_at DESC, p.id LIMIT $3`,
      [run.site_id, runId, limit],
    ),
  ]);
  return {
    siteId: run.site_id,
    tenantId: run.tenant_id,
    fresh: fresh.rows,
    missing: missing.rows,
  };
}

/** One grounded match of a sync: the fresh posting is the existing one under a new URL. */
export interface SyncMerge {
  runId: string;
  /** Found by the run for the first time: closed, `duplicate_of` the existing one. */
  freshId: string;
  /** Not listed by the run: keeps its id and history, and takes the fresh one's URL and fields. */
  existingId: string;
  /** What is kept in the existing posting's history beside the fields it had. */
  decision: { model: string; evidence: string; reason: string | null };
}

/** The columns a merge moves from the fresh posting onto the existing one. */
const MOVED_COLUMNS = [
  'url',
  'external_id',
  'listing_payload',
  'body_sha256',
  'text_sha256',
  'fetched_at',
  'extracted_at',
  ...extractedFieldKeys.map(snakeCase),
];

/**
 * Merges one match in one transaction, both rows locked: the existing posting's fields are kept
 * as its next `posting_versions` row with the decision beside them; the fresh posting gives up
 * its external id and closes as `duplicate_of` the existing one; the existing one takes its URL,
 * external id and fields, in the run, `ready`. The change feed says so: the fresh posting
 * `closed`, the existing one `updated` with what changed. False (nothing done) when either row
 * is no longer what the sync read: the fresh one not ready in the run, the existing one listed
 * or closed meanwhile.
 */
export async function mergeSyncedPosting(db: Database, merge: SyncMerge): Promise<boolean> {
  const client = await db.$client.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: string; external_id: string }>(
      `SELECT p.id, p.external_id FROM postings p
       WHERE p.id = ANY($1::uuid[])
         AND ((p.id = $2 AND p.run_id = $4 AND p.status = 'ready')
           OR (p.id = $3 AND p.run_id IS DISTINCT FROM $4 AND p.status IN ('ready', 'skipped')))
         AND p.duplicate_of IS NULL
         AND p.site_id = (SELECT site_id FROM postings WHERE id = $2)
       ORDER BY p.id FOR UPDATE`,
      [[merge.freshId, merge.existingId], merge.freshId, merge.existingId, merge.runId],
    );
    const fresh = rows.find((row) => row.id === merge.freshId);
    if (!fresh || !rows.some((row) => row.id === merge.existingId)) {
      await client.query('ROLLBACK');
      return false;
    }
    // Two statements: the outer statement of a WITH does not see the rows its CTE inserted.
    const { rows: kept } = await client.query<{ version: number }>(
      `WITH previous AS (SELECT p.* FROM postings p WHERE p.id = $1) ${KEEP_PREVIOUS_VERSION}
       RETURNING version`,
      [merge.existingId],
    );
    await client.query(
      `UPDATE posting_versions SET fields = fields || jsonb_build_object('sync', $3::jsonb)
       WHERE posting_id = $1 AND version = $2`,
      [
        merge.existingId,
        kept[0]?.version ?? -1,
        jsonForPg({
          method: 'llm',
          model: merge.decision.model,
          evidence: merge.decision.evidence,
          reason: merge.decision.reason,
          run_id: merge.runId,
          merged_posting_id: merge.freshId,
        }),
      ],
    );
    await client.query(
      `UPDATE postings SET external_id = left(external_id, 400) || '#duplicate-of-' || $2::text,
         status = 'expired', duplicate_of = $2::uuid, updated_at = now()
       WHERE id = $1`,
      [merge.freshId, merge.existingId],
    );
    await client.query(
      `UPDATE postings e SET (${MOVED_COLUMNS.join(', ')}) =
         (SELECT ${MOVED_COLUMNS.map((column) => (column === 'external_id' ? '$3::text' : `f.${column}`)).join(', ')}
          FROM postings f WHERE f.id = $2),
         run_id = $4::uuid, status = 'ready', error = NULL, missed_listings = 0, last_seen_at = now(),
         updated_at = now()
       WHERE e.id = $1`,
      [merge.existingId, merge.freshId, fresh.external_id, merge.runId],
    );
    await client.query('COMMIT');
    return true;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** pending → done or failed: the run may close. False when its sync was not pending. */
export async function settleRunSync(
  db: Database,
  runId: string,
  state: 'done' | 'failed',
): Promise<boolean> {
  const { rowCount } = await db.$client.query(
    `UPDATE scrape_runs SET sync_state = $2, updated_at = now()
     WHERE id = $1 AND sync_state = 'pending'`,
    [runId, state],
  );
  return (rowCount ?? 0) > 0;
}

/** A run whose sync is due: listed and read, its sync pending. */
export interface RunAwaitingSync {
  runId: string;
  siteId: string;
  correlationId: string | null;
}

/**
 * Runs whose sync is due and that have been quiet for `quietMs`: the reconciler queues their job
 * again when Redis has none.
 */
export async function listRunsAwaitingSync(
  db: Database,
  { quietMs, limit }: { quietMs: number; limit: number },
): Promise<RunAwaitingSync[]> {
  const { rows } = await db.$client.query<{
    run_id: string;
    site_id: string;
    correlation_id: string | null;
  }>(
    `SELECT r.id AS run_id, r.site_schedule_id AS site_id, r.correlation_id
     FROM scrape_runs r
     WHERE r.sync_state = 'pending' AND ${runSettled('r.id')}
       AND r.updated_at < now() - make_interval(secs => $1::float8 / 1000)
     ORDER BY r.updated_at LIMIT $2`,
    [quietMs, limit],
  );
  return rows.map((row) => ({
    runId: row.run_id,
    siteId: row.site_id,
    correlationId: row.correlation_id,
  }));
}
