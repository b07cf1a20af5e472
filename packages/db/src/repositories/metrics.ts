import type { Database } from '../client.js';

/**
 * What `GET /metrics` reads of Postgres at scrape time. Each function is one statement, so a scrape
 * holds one pooled connection at a time for as short as it can.
 */

/** Rows by status of each table with a status column: postings, documents, LLM extractions. */
export interface StatusCounts {
  postings: Record<string, number>;
  documents: Record<string, number>;
  llmExtractions: Record<string, number>;
  /** Runs still queued or running (the partial index of active runs answers it). */
  activeRuns: Record<string, number>;
  /** Sites' open alerts by kind (the partial index of open alerts answers it). */
  openAlerts: Record<string, number>;
}

/**
 * Counts by status in one round trip. Documents and LLM extractions are counted from their
 * `(status, updated_at)` indexes, postings from `(site_id, status)`, active runs from the partial
 * index that keeps one active run per site: index-only scans, no table reads once vacuumed.
 */
export async function countByStatus(db: Database): Promise<StatusCounts> {
  const { rows } = await db.$client.query<{
    family: keyof StatusCounts;
    status: string;
    n: number;
  }>(
    `SELECT 'postings' AS family, status, count(*)::int AS n FROM postings GROUP BY status
     UNION ALL
     SELECT 'documents', status, count(*)::int FROM documents GROUP BY status
     UNION ALL
     SELECT 'llmExtractions', status, count(*)::int FROM llm_extractions GROUP BY status
     UNION ALL
     SELECT 'activeRuns', status, count(*)::int FROM scrape_runs
       WHERE status IN ('queued', 'running') GROUP BY status
     UNION ALL
     SELECT 'openAlerts', kind, count(*)::int FROM site_alerts
       WHERE resolved_at IS NULL GROUP BY kind`,
  );
  const counts: StatusCounts = {
    postings: {},
    documents: {},
    llmExtractions: {},
    activeRuns: {},
    openAlerts: {},
  };
  for (const row of rows) counts[row.family][row.status] = row.n;
  return counts;
}

/** The durations of finished runs with one status, as a histogram's cumulative buckets. */
export interface RunDurations {
  status: string;
  /** Per bucket bound (seconds, in the order given): runs that took at most that long. */
  buckets: number[];
  count: number;
  sumSeconds: number;
}

/**
 * Every finished run's duration (from its start, or its creation when it never started, to its
 * end), bucketed by `boundsSeconds` and grouped by final status. A run's row is kept until its
 * site is deleted, so the counts only grow otherwise. One pass over `scrape_runs`.
 */
export async function runDurationHistogram(
  db: Database,
  boundsSeconds: readonly number[],
): Promise<RunDurations[]> {
  const buckets = boundsSeconds
    .map((_, index) => `count(*) FILTER (WHERE seconds <= $${index + 1}::float8)::int`)
    .join(', ');
  const { rows } = await db.$client.query<{
    status: string;
    buckets: number[];
    count: number;
    sum: number;
  }>(
    `SELECT status, ARRAY[${buckets}]::int[] AS buckets, count(*)::int AS count,
            coalesce(sum(seconds), 0)::float8 AS sum
     FROM (SELECT status,
                  greatest(0, extract(epoch FROM finished_at - coalesce(started_at, created_at)))
                    AS seconds
           FROM scrape_runs WHERE finished_at IS NOT NULL) AS finished
     GROUP BY status ORDER BY status`,
    [...boundsSeconds],
  );
  return rows.map((row) => ({
    status: row.status,
    buckets: row.buckets,
    count: row.count,
    sumSeconds: row.sum,
  }));
}

export interface MetricSites {
  /** The first `limit` sites by name: the ones given series of their own. */
  listed: { id: string; name: string; enabled: boolean }[];
  total: number;
  enabled: number;
}

export async function listMetricSites(db: Database, limit: number): Promise<MetricSites> {
  const { rows } = await db.$client.query<{
    id: string | null;
    name: string;
    enabled: boolean;
    total: number;
    enabled_total: number;
  }>(
    `WITH totals AS (SELECT count(*)::int AS total,
                            count(*) FILTER (WHERE enabled)::int AS enabled_total
                     FROM site_schedules)
     SELECT s.id, s.site_name AS name, s.enabled, t.total, t.enabled_total
     FROM totals t LEFT JOIN LATERAL (SELECT id, site_name, enabled FROM site_schedules
                                      ORDER BY site_name LIMIT $1) AS s ON true`,
    [limit],
  );
  return {
    listed: rows.flatMap((row) =>
      row.id === null ? [] : [{ id: row.id, name: row.name, enabled: row.enabled }],
    ),
    total: rows[0]?.total ?? 0,
    enabled: rows[0]?.enabled_total ?? 0,
  };
}

/** Tenants with LLM extractions queued or processing: the ones whose daily budget matters now. */
export async function listTenantsWithLlmWork(db: Database, limit: number): Promise<string[]> {
  const { rows } = await db.$client.query<{ tenant_id: string }>(
    `SELECT DISTINCT tenant_id FROM llm_extractions
     WHERE status IN ('queued', 'processing') ORDER BY tenant_id LIMIT $1`,
    [limit],
  );
  return rows.map((row) => row.tenant_id);
}
