import type { Database } from '../client.js';

/**
 * One posting seen through several sources (decision 0027): what the cross-source rule reads of a
 * posting, and how its links (`duplicate_of`) are stored. The rule itself is
 * `@gleaner/sources`' `sameJob`; the worker that closes a run applies it to the run's postings.
 */

/** An open posting as the rule reads it, with its site's kind and its stored keys and link. */
export interface JobPosting {
  id: string;
  siteId: string;
  siteKind: string;
  externalId: string;
  url: string;
  company: string | null;
  title: string | null;
  location: string | null;
  datePosted: string | null;
  firstSeenAt: Date;
  duplicateOf: string | null;
  jobAtsKey: string | null;
  jobFieldsKey: string | null;
}

const JOB_COLUMNS = `p.id, p.site_id AS "siteId", s.kind AS "siteKind", p.external_id AS "externalId",
  p.url, p.company, p.title,
  p.location, p.date_posted AS "datePosted", p.first_seen_at AS "firstSeenAt",
  p.duplicate_of AS "duplicateOf", p.job_ats_key AS "jobAtsKey", p.job_fields_key AS "jobFieldsKey"`;

/** Open: read by a run and not closed. A posting in `error` or `pending` has no fields to match. */
const OPEN = `p.status IN ('ready', 'skipped')`;

/** The open postings a run listed, with its site and tenant; undefined for an unknown run. */
export async function readRunJobs(
  db: Database,
  runId: string,
): Promise<{ siteId: string; tenantId: string | null; jobs: JobPosting[] } | undefined> {
  const { rows: runs } = await db.$client.query<{ site_id: string; tenant_id: string | null }>(
    `SELECT r.site_schedule_id AS site_id, s.tenant_id
     FROM scrape_runs r JOIN site_schedules s ON s.id = r.site_schedule_id WHERE r.id = $1`,
    [runId],
  );
  const run = runs[0];
  if (!run) return undefined;
  const { rows } = await db.$client.query<JobPosting>(
    `SELECT ${JOB_COLUMNS} FROM postings p JOIN site_schedules s ON s.id = p.site_id
     WHERE p.run_id = $1 AND ${OPEN}`,
    [runId],
  );
  return { siteId: run.site_id, tenantId: run.tenant_id, jobs: rows };
}

/** Stores the rule's keys of these postings, only where they changed. */
export async function storeJobKeys(
  db: Database,
  keys: readonly { id: string; ats: string | null; fields: string | null }[],
): Promise<void> {
  if (keys.length === 0) return;
  await db.$client.query(
    `UPDATE postings p SET job_ats_key = k.ats, job_fields_key = k.fields
     FROM unnest($1::uuid[], $2::text[], $3::text[]) AS k(id, ats, fields)
     WHERE p.id = k.id
       AND (p.job_ats_key IS DISTINCT FROM k.ats OR p.job_fields_key IS DISTINCT FROM k.fields)`,
    [keys.map((key) => key.id), keys.map((key) => key.ats), keys.map((key) => key.fields)],
  );
}

/**
 * The open postings of the tenant's other sites (an operators' site, tenant null, is matched
 * with the other operators' sites) that share one of the keys.
 */
export async function findJobCandidates(
  db: Database,
  scope: { siteId: string; tenantId: string | null; atsKeys: string[]; fieldsKeys: string[] },
): Promise<JobPosting[]> {
  if (scope.atsKeys.length === 0 && scope.fieldsKeys.length === 0) return [];
  const { rows } = await db.$client.query<JobPosting>(
    `SELECT ${JOB_COLUMNS} FROM postings p JOIN site_schedules s ON s.id = p.site_id
     WHERE (p.job_ats_key = ANY($1::text[]) OR p.job_fields_key = ANY($2::text[]))
       AND p.site_id <> $3 AND s.tenant_id IS NOT DISTINCT FROM $4 AND ${OPEN}`,
    [scope.atsKeys, scope.fieldsKeys, scope.siteId, scope.tenantId],
  );
  return rows;
}

/**
 * Sets each open posting's `duplicate_of` (null: it stands on its own), only where it changes.
 * Returns how many changed.
 */
export async function setDuplicateLinks(
  db: Database,
  links: readonly { id: string; duplicateOf: string | null }[],
): Promise<number> {
  if (links.length === 0) return 0;
  const { rowCount } = await db.$client.query(
    `UPDATE postings p SET duplicate_of = l.duplicate_of, updated_at = now()
     FROM unnest($1::uuid[], $2::uuid[]) AS l(id, duplicate_of)
     WHERE p.id = l.id AND ${OPEN} AND p.duplicate_of IS DISTINCT FROM l.duplicate_of`,
    [links.map((link) => link.id), links.map((link) => link.duplicateOf)],
  );
  return rowCount ?? 0;
}

/** The open postings linked to one of `ids` stand on their own again. Returns how many. */
export async function unlinkCopiesOf(db: Database, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await db.$client.query(
    `UPDATE postings p SET duplicate_of = NULL, updated_at = now()
     WHERE p.duplicate_of = ANY($1::uuid[]) AND ${OPEN}`,
    [[...ids]],
  );
  return rowCount ?? 0;
}
