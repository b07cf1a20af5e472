/**
 * What "the run lost nothing and did nothing twice" means, checked in Postgres after a run of a
 * fresh fixture site (every posting new, so none has an earlier version):
 * - the run ended (terminal, `finished_at` set) and no posting of it is left `pending`;
 * - exactly one log line saying it was finalized, across every process's log
 *   (`finalizedLogLines`);
 * - one posting row per (site, external id), as many as the site publishes;
 * - no `posting_versions` row (a version is kept only when a page really changed);
 * - one `page_bodies` row per distinct `postings.body_sha256`, and every posting's body stored;
 * - the run's counters equal its postings' statuses.
 */
import { TERMINAL_RUN_STATUSES } from '../bench/support.js';
import type { DbHandle, RunRow } from '@gleaner/db';
import type { ServiceProcess } from '@gleaner/testing';
import { postingStatusCounts } from './support.js';

export interface RunExpectation {
  /** Postings the site publishes: the run must list each once. */
  postings: number;
  /** Lines logged for this run's finalization across processes (`finalizedLogLines`). */
  finalizedLogLines: number;
}

export interface RunVerdict {
  runId: string;
  status: string;
  finishedAt: string | null;
  postings: Record<string, number>;
  counters: {
    requestedPages: number;
    completedPages: number;
    readyCount: number;
    skippedCount: number;
    errorsCount: number;
  };
  postingRows: number;
  distinctExternalIds: number;
  postingVersions: number;
  bodies: { distinctReferenced: number; missing: number };
  finalizedLogLines: number;
  failures: string[];
}

export async function verifyRun(
  handle: DbHandle,
  run: RunRow,
  expected: RunExpectation,
): Promise<RunVerdict> {
  const failures: string[] = [];
  const postings = await postingStatusCounts(handle, run.id);
  const count = (status: string): number => postings[status] ?? 0;
  const listed = Object.values(postings).reduce((sum, n) => sum + n, 0);

  if (!TERMINAL_RUN_STATUSES.has(run.status)) failures.push(`run still ${run.status}`);
  if (run.finishedAt === null) failures.push('finished_at not set');
  if (count('pending') > 0) failures.push(`${count('pending')} postings left pending`);
  if (expected.finalizedLogLines !== 1)
    failures.push(`${expected.finalizedLogLines} "run finalized…" log lines (expected exactly 1)`);

  const { rows: site } = await handle.pool.query<{ rows: number; ids: number }>(
    `SELECT count(*)::int AS rows, count(DISTINCT external_id)::int AS ids
     FROM postings WHERE site_id = $1`,
    [run.siteScheduleId],
  );
  const postingRows = site[0]?.rows ?? 0;
  const distinctExternalIds = site[0]?.ids ?? 0;
  if (postingRows !== expected.postings || distinctExternalIds !== expected.postings)
    failures.push(
      `${postingRows} posting rows with ${distinctExternalIds} distinct external ids (expected ${expected.postings})`,
    );

  const { rows: versions } = await handle.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM posting_versions v
     JOIN postings p ON p.id = v.posting_id WHERE p.site_id = $1`,
    [run.siteScheduleId],
  );
  const postingVersions = versions[0]?.n ?? 0;
  if (postingVersions > 0)
    failures.push(`${postingVersions} posting_versions rows on fresh content (expected 0)`);

  const { rows: bodies } = await handle.pool.query<{ referenced: number; missing: number }>(
    `SELECT count(DISTINCT p.body_sha256)::int AS referenced,
            count(DISTINCT p.body_sha256) FILTER (WHERE b.sha256 IS NULL)::int AS missing
     FROM postings p LEFT JOIN page_bodies b ON b.sha256 = p.body_sha256
     WHERE p.site_id = $1 AND p.body_sha256 IS NOT NULL`,
    [run.siteScheduleId],
  );
  const bodyCheck = {
    distinctReferenced: bodies[0]?.referenced ?? 0,
    missing: bodies[0]?.missing ?? 0,
  };
  if (bodyCheck.missing > 0) failures.push(`${bodyCheck.missing} posting bodies not stored`);

  const counters = {
    requestedPages: run.requestedPages,
    completedPages: run.completedPages,
    readyCount: run.readyCount,
    skippedCount: run.skippedCount,
    errorsCount: run.errorsCount,
  };
  const mismatches = [
    ['ready_count', run.readyCount, count('ready')],
    ['skipped_count', run.skippedCount, count('skipped')],
    ['errors_count', run.errorsCount, count('error')],
    ['completed_pages', run.completedPages, count('ready') + count('skipped')],
    ['requested_pages', run.requestedPages, listed],
  ].filter(([, counter, actual]) => counter !== actual);
  for (const [name, counter, actual] of mismatches)
    failures.push(`${name} ${counter} but its postings say ${actual}`);

  return {
    runId: run.runId,
    status: run.status,
    finishedAt: run.finishedAt?.toISOString() ?? null,
    postings,
    counters,
    postingRows,
    distinctExternalIds,
    postingVersions,
    bodies: bodyCheck,
    finalizedLogLines: expected.finalizedLogLines,
    failures,
  };
}

/**
 * Database-wide: one `page_bodies` row per distinct body any posting points at. A body stored
 * that no posting references means a page was stored under two different hashes (fetched twice
 * with different content, or stored and then lost by its posting). Call once all runs ended.
 */
export async function verifyBodies(handle: DbHandle): Promise<string[]> {
  const { rows } = await handle.pool.query<{ stored: number; referenced: number }>(
    `SELECT (SELECT count(*)::int FROM page_bodies) AS stored,
            (SELECT count(DISTINCT body_sha256)::int FROM postings WHERE body_sha256 IS NOT NULL) AS referenced`,
  );
  const stored = rows[0]?.stored ?? 0;
  const referenced = rows[0]?.referenced ?? 0;
  return stored === referenced
    ? []
    : [`${stored} page_bodies rows for ${referenced} distinct posting bodies (expected equal)`];
}

/**
 * Log lines that say this run was finalized, across processes: a worker's "run finalized" and
 * the reconciler's "run finalized by the reconciler" alike, since either closes the run and
 * exactly one of them may. Both log the run's uuid as `runId`; its public id is matched too.
 */
export function finalizedLogLines(processes: readonly ServiceProcess[], run: RunRow): number {
  let count = 0;
  for (const service of processes)
    for (const line of service.logs)
      if (
        typeof line.msg === 'string' &&
        (line.msg === 'run finalized' || line.msg.startsWith('run finalized ')) &&
        (line.runId === run.id || line.runId === run.runId)
      )
        count += 1;
  return count;
}
