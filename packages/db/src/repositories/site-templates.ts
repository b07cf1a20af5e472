import { and, asc, eq, isNotNull, isNull, lt, or, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { Database } from '../client.js';
import { postings, type PostingRow } from '../schema.js';
import { loadBodies } from './bodies.js';
import { READ_FROM_STRUCTURED_DATA } from './posting-work.js';

/**
 * Site templates (decision 0028): each site's page template, learned from its own stored pages,
 * versioned, with the labels a model gave that the template grounded as paths.
 */

/** A version of a site's template, as stored. */
export interface SiteTemplateRow {
  siteId: string;
  version: number;
  shape: string;
  /** `@gleaner/extraction`'s `SiteTemplate`, as JSON. */
  template: Record<string, unknown>;
  learnedFrom: number;
  modelCalls: number;
  misfits: string[];
  createdAt: Date;
  /**
   * When the site's pages took this version's shape: the first of the versions of this shape
   * since the site last had another.
   */
  shapeSince: Date;
}

/** Stored pages of a site that disagree with its template, kept for the next learning. */
export const MAX_TEMPLATE_MISFITS = 50;

interface TemplateDbRow {
  site_id: string;
  version: number;
  shape: string;
  template: Record<string, unknown>;
  learned_from: number;
  model_calls: number;
  misfits: string[];
  created_at: Date;
  shape_since?: Date;
}

const COLUMNS = 'site_id, version, shape, template, learned_from, model_calls, misfits, created_at';

function toRow(row: TemplateDbRow): SiteTemplateRow {
  return {
    siteId: row.site_id,
    version: row.version,
    shape: row.shape,
    template: row.template,
    learnedFrom: row.learned_from,
    modelCalls: row.model_calls,
    misfits: row.misfits,
    createdAt: row.created_at,
    shapeSince: row.shape_since ?? row.created_at,
  };
}

/** The site's template: its highest version, or null while none was learned. */
export async function getSiteTemplate(
  db: Database,
  siteId: string,
): Promise<SiteTemplateRow | null> {
  const { rows } = await db.$client.query<TemplateDbRow>({
    name: 'gleaner-site-template',
    text: `SELECT ${COLUMNS},
                  (SELECT min(s.created_at) FROM site_templates s
                   WHERE s.site_id = t.site_id
                     AND s.version > coalesce((SELECT max(o.version) FROM site_templates o
                                               WHERE o.site_id = t.site_id AND o.shape <> t.shape), 0)
                  ) AS shape_since
           FROM site_templates t WHERE t.site_id = $1 ORDER BY t.version DESC LIMIT 1`,
    values: [siteId],
  });
  return rows[0] ? toRow(rows[0]) : null;
}

/** Every version of a site's template, newest first (without the templates themselves). */
export async function listSiteTemplateVersions(
  db: Database,
  siteId: string,
): Promise<Omit<SiteTemplateRow, 'template'>[]> {
  const { rows } = await db.$client.query<TemplateDbRow>(
    `SELECT site_id, version, shape, '{}'::jsonb AS template, learned_from, model_calls, misfits,
            created_at
     FROM site_templates WHERE site_id = $1 ORDER BY version DESC`,
    [siteId],
  );
  return rows.map(toRow);
}

/**
 * How many of the site's postings have a stored page (not an ATS payload), counting no further
 * than `cap`: whether there is enough to learn from, or twice what the template learned from.
 */
export async function countStoredSitePages(
  db: Database,
  siteId: string,
  cap: number,
): Promise<number> {
  const { rows } = await db.$client.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM (
       SELECT 1 FROM postings p
       WHERE p.site_id = $1 AND p.body_sha256 IS NOT NULL AND p.listing_payload IS NULL
       LIMIT $2) pages`,
    [siteId, cap],
  );
  return rows[0]?.count ?? 0;
}

/** A stored page to learn from. */
export interface TemplatePage {
  sha256: string;
  body: Buffer;
  contentType: string | null;
}

/**
 * Stored pages of the site to learn its template from: the bodies named (a redesign's pages) or
 * else its `limit` most recently fetched pages. Bodies the sweeper removed are left out.
 */
export async function loadTemplatePages(
  db: Database,
  siteId: string,
  { limit, sha256s }: { limit: number; sha256s?: readonly string[] },
): Promise<TemplatePage[]> {
  const chosen =
    sha256s === undefined
      ? (
          await db.$client.query<{ sha256: string }>(
            `SELECT d.sha256 FROM (
               SELECT DISTINCT ON (p.body_sha256) p.body_sha256 AS sha256, p.fetched_at
               FROM postings p
               WHERE p.site_id = $1 AND p.body_sha256 IS NOT NULL AND p.listing_payload IS NULL
               ORDER BY p.body_sha256, p.fetched_at DESC NULLS LAST) d
             ORDER BY d.fetched_at DESC NULLS LAST, d.sha256 LIMIT $2`,
            [siteId, limit],
          )
        ).rows
      : sha256s.slice(0, limit).map((sha256) => ({ sha256 }));
  const stored = await loadBodies(
    db,
    chosen.map(({ sha256 }) => sha256),
  );
  return chosen.flatMap(({ sha256 }) => {
    const page = stored.get(sha256);
    return page ? [{ sha256, ...page }] : [];
  });
}

/**
 * Saves a newly learned template as the version after `after` (0 for a site's first). Of two
 * learners that learned from the same version, one saves and the other gets null. A version of a
 * shape the site had before keeps the calls that shape spent (the labelling budget is the
 * shape's, also when the site's pages went back to it).
 */
export async function saveSiteTemplate(
  db: Database,
  siteId: string,
  after: number,
  learned: { shape: string; template: Record<string, unknown>; learnedFrom: number },
): Promise<SiteTemplateRow | null> {
  const { rows } = await db.$client.query<TemplateDbRow>(
    `INSERT INTO site_templates (site_id, version, shape, template, learned_from, model_calls)
     SELECT $1, $2::int + 1, $3, $4::jsonb, $5,
            coalesce((SELECT max(t.model_calls) FROM site_templates t
                      WHERE t.site_id = $1 AND t.shape = $3), 0)
     WHERE NOT EXISTS (SELECT 1 FROM site_templates t WHERE t.site_id = $1 AND t.version > $2)
     ON CONFLICT (site_id, version) DO NOTHING
     RETURNING ${COLUMNS}`,
    [siteId, after, learned.shape, JSON.stringify(learned.template), learned.learnedFrom],
  );
  return rows[0] ? toRow(rows[0]) : null;
}

/**
 * Notes a stored page that the site's template (version `version`) does not fit, or fits with a
 * path that no longer finds its value. Returns how many such pages the version has now (at most
 * MAX_TEMPLATE_MISFITS); a page noted twice counts once.
 */
export async function recordTemplateMisfit(
  db: Database,
  siteId: string,
  version: number,
  sha256: string,
): Promise<number> {
  const { rows } = await db.$client.query<{ count: number }>(
    `UPDATE site_templates
     SET misfits = CASE WHEN misfits ? $3 OR jsonb_array_length(misfits) >= $4 THEN misfits
                        ELSE misfits || to_jsonb($3::text) END
     WHERE site_id = $1 AND version = $2
     RETURNING jsonb_array_length(misfits) AS count`,
    [siteId, version, sha256, MAX_TEMPLATE_MISFITS],
  );
  return rows[0]?.count ?? 0;
}

/**
 * Claims one model call for labelling a page of the template's shape, while the shape has spent
 * fewer than `cap`: false when the budget is spent (or the version is no longer the site's).
 */
export async function claimTemplateLabelCall(
  db: Database,
  siteId: string,
  version: number,
  cap: number,
): Promise<boolean> {
  const { rowCount } = await db.$client.query(
    `UPDATE site_templates t SET model_calls = t.model_calls + 1
     WHERE t.site_id = $1 AND t.version = $2 AND t.model_calls < $3
       AND NOT EXISTS (SELECT 1 FROM site_templates n WHERE n.site_id = $1 AND n.version > $2)`,
    [siteId, version, cap],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Replaces the template of version `version` with a labelled one (same shape: its paths grew),
 * keeping its version. False when the version is no longer the site's newest.
 */
export async function updateSiteTemplate(
  db: Database,
  siteId: string,
  version: number,
  template: Record<string, unknown>,
): Promise<boolean> {
  const { rowCount } = await db.$client.query(
    `UPDATE site_templates t SET template = $3::jsonb
     WHERE t.site_id = $1 AND t.version = $2
       AND NOT EXISTS (SELECT 1 FROM site_templates n WHERE n.site_id = $1 AND n.version > $2)`,
    [siteId, version, JSON.stringify(template)],
  );
  return (rowCount ?? 0) > 0;
}

/** A label a model gave for one page, grounded by the template of its shape. */
export interface TemplateLabel {
  bodySha256: string;
  field: string;
  value: string;
}

export async function addTemplateLabels(
  db: Database,
  siteId: string,
  shape: string,
  labels: readonly TemplateLabel[],
): Promise<void> {
  if (labels.length === 0) return;
  await db.$client.query(
    `INSERT INTO site_template_labels (site_id, shape, body_sha256, field, value)
     SELECT $1, $2, l.body_sha256, l.field, l.value
     FROM jsonb_to_recordset($3::jsonb) AS l(body_sha256 text, field text, value text)
     ON CONFLICT DO NOTHING`,
    [
      siteId,
      shape,
      JSON.stringify(
        labels.map(({ bodySha256, field, value }) => ({ body_sha256: bodySha256, field, value })),
      ),
    ],
  );
}

/** The labels kept for a shape of a site's template, oldest first. */
export async function listTemplateLabels(
  db: Database,
  siteId: string,
  shape: string,
): Promise<TemplateLabel[]> {
  const { rows } = await db.$client.query<{ body_sha256: string; field: string; value: string }>(
    `SELECT body_sha256, field, value FROM site_template_labels
     WHERE site_id = $1 AND shape = $2 ORDER BY created_at, body_sha256, field`,
    [siteId, shape],
  );
  return rows.map((row) => ({ bodySha256: row.body_sha256, field: row.field, value: row.value }));
}

/**
 * Raises (or sees again) the site's `template_changed` alert: its pages were re-learned as
 * another template. Returns whether the alert is new.
 */
export async function raiseTemplateChangedAlert(
  db: Database,
  alert: {
    siteId: string;
    runId: string | null;
    from: { version: number; shape: string };
    to: { version: number; shape: string; learnedFrom: number };
  },
): Promise<boolean> {
  const { rows } = await db.$client.query<{ inserted: boolean }>(
    `INSERT INTO site_alerts (site_id, kind, run_id, message, details)
     VALUES ($1, 'template_changed', $2,
             format('template_changed: the site''s pages no longer fit its template (version %s); version %s was learned from %s of the new pages',
                    $3::int, $4::int, $5::int),
             jsonb_build_object('from_version', $3::int, 'from_shape', $6::text,
                                'to_version', $4::int, 'to_shape', $7::text, 'learned_from', $5::int))
     ON CONFLICT (site_id, kind) WHERE resolved_at IS NULL DO UPDATE
     SET message = excluded.message, details = excluded.details, run_id = excluded.run_id,
         occurrences = site_alerts.occurrences + 1, last_seen_at = now()
     RETURNING (xmax = 0) AS inserted`,
    [
      alert.siteId,
      alert.runId,
      alert.from.version,
      alert.to.version,
      alert.to.learnedFrom,
      alert.from.shape,
      alert.to.shape,
    ],
  );
  return rows[0]?.inserted ?? false;
}

/**
 * Resolves the site's open `template_changed` alert once a run that started after it was raised
 * has closed without the site's template changing again: the new template reads the site.
 */
export async function resolveTemplateChangedAlert(db: Database, runId: string): Promise<boolean> {
  const { rowCount } = await db.$client.query(
    `UPDATE site_alerts a SET resolved_at = now(), resolved_by_run_id = r.id
     FROM scrape_runs r
     WHERE r.id = $1 AND r.status IN ('succeeded', 'partial')
       AND a.site_id = r.site_schedule_id AND a.kind = 'template_changed'
       AND a.resolved_at IS NULL AND a.raised_at < r.created_at
       AND NOT EXISTS (SELECT 1 FROM site_templates t
                       WHERE t.site_id = r.site_schedule_id AND t.created_at > r.created_at
                         AND t.shape <> (SELECT p.shape FROM site_templates p
                                         WHERE p.site_id = t.site_id AND p.version = t.version - 1))`,
    [runId],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Whether the run has postings besides `postingId` whose pages it has not fetched yet: pages
 * still to come, which a site's first template can be learned from.
 */
export async function runHasPagesToCome(
  db: Database,
  runId: string,
  postingId: string,
): Promise<boolean> {
  const { rows } = await db.$client.query<{ coming: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM postings p JOIN scrape_runs r ON r.id = p.run_id
       WHERE p.run_id = $1 AND p.id <> $2 AND p.status = 'pending'
         AND (p.fetched_at IS NULL OR p.fetched_at < coalesce(r.started_at, r.created_at))
     ) AS coming`,
    [runId, postingId],
  );
  return rows[0]?.coming ?? false;
}

/**
 * Whether a run read pages of its site without structured data, or could not read some: what a
 * site template is for. A site whose pages all carry JSON-LD has no use for one.
 */
export async function runReadPagesFromMarkup(db: Database, runId: string): Promise<boolean> {
  const { rows } = await db.$client.query<{ found: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM postings p
       WHERE p.run_id = $1 AND p.listing_payload IS NULL AND NOT ${READ_FROM_STRUCTURED_DATA}
     ) AS found`,
    [runId],
  );
  return rows[0]?.found ?? false;
}

/**
 * A run's pages to read again with its site's current template before the run closes: those read
 * from their markup by the rules before `readBefore` (when that template was learned) and
 * `ready`, and those that ended in `error` with `noPostingError` (the rules found no posting in
 * them, maybe before the site had any template); with their stored bodies. At most `limit`.
 */
export async function listRunPagesToReadAgain(
  db: Database,
  runId: string,
  { readBefore, noPostingError }: { readBefore: Date; noPostingError: string },
  limit: number,
): Promise<PostingRow[]> {
  // As `p`, the alias READ_FROM_STRUCTURED_DATA is written for.
  const p = alias(postings, 'p');
  return db
    .select()
    .from(p)
    .where(
      and(
        eq(p.runId, runId),
        isNull(p.listingPayload),
        isNotNull(p.bodySha256),
        or(
          and(
            eq(p.status, 'ready'),
            lt(p.extractedAt, readBefore),
            sql`NOT ${sql.raw(READ_FROM_STRUCTURED_DATA)}`,
            // What the model read stays the model's: its answers ground the template's labels.
            sql`NOT coalesce(${p.provenance} @? '$.* ? (@ == "llm")', false)`,
          ),
          and(eq(p.status, 'error'), eq(p.error, noPostingError)),
        ),
      ),
    )
    .orderBy(asc(p.id))
    .limit(limit);
}
