import type { Database } from '../client.js';
import { jsonForPg, withoutNul } from '../pg-text.js';
import type { PageCandidate, PagePostFields } from '../schema.js';
import type { PostingSite } from './posting-work.js';

/*
 * The multi-pass reading of a `postsOnListing` site's run (seed 004, decision 0026), as rows:
 * `listing_pages` (pass 1: a page's text, then its candidates), `listing_posts` (pass 2's merged
 * posts, pass 3's investigations) and the run's `pages_state`. Each transition is one guarded
 * statement, so that a job run twice (a retry, a stalled job taken by another worker) changes
 * nothing the first run did.
 */

/** A listing page found by the scrape job, as pass 1 reads it. */
export interface ListingPageInput {
  url: string;
  text: string;
  links: { url: string; text: string }[];
}

/**
 * Records a run's listing pages (once each: a retried scrape keeps pages already read) and starts
 * the run's reading. Returns the pages still waiting to be read.
 */
export async function recordListingPages(
  db: Database,
  runId: string,
  pages: readonly ListingPageInput[],
): Promise<string[]> {
  const { rows } = await db.$client.query<{ url: string }>(
    `WITH run AS (
       UPDATE scrape_runs SET pages_state = coalesce(pages_state, 'reading'), updated_at = now()
       WHERE id = $1 AND status = 'running' RETURNING id
     ), added AS (
       INSERT INTO listing_pages (run_id, url, position, text, links)
       SELECT run.id, p.url, p.position - 1, p.text, p.links::jsonb
       FROM run, unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS p(url, text, links, position)
       ON CONFLICT (run_id, url) DO NOTHING
       RETURNING url
     )
     SELECT url FROM added
     UNION SELECT url FROM listing_pages WHERE run_id = $1 AND state = 'pending'`,
    [
      runId,
      pages.map((page) => withoutNul(page.url)),
      pages.map((page) => withoutNul(page.text)),
      pages.map((page) => jsonForPg(page.links)),
    ],
  );
  return rows.map((row) => row.url);
}

/** A run's site as its page jobs need it: the polite fetcher's settings and the tenant. */
export type ListingSite = PostingSite & { tenantId: string | null };

const SITE_COLUMNS = `s.id AS site_id, s.kind, s.rate_limit_rps, s.min_pause_seconds,
  s.max_pause_seconds, s.max_concurrency, s.llm_extraction, s.tenant_id`;

interface SiteColumns {
  site_id: string;
  kind: string;
  rate_limit_rps: number | null;
  min_pause_seconds: number;
  max_pause_seconds: number;
  max_concurrency: number;
  llm_extraction: boolean;
  tenant_id: string | null;
}

const siteOf = (row: SiteColumns): ListingSite => ({
  id: row.site_id,
  kind: row.kind,
  rateLimitRps: row.rate_limit_rps,
  minPauseSeconds: row.min_pause_seconds,
  maxPauseSeconds: row.max_pause_seconds,
  maxConcurrency: row.max_concurrency,
  llmExtraction: row.llm_extraction,
  tenantId: row.tenant_id,
});

/** A page waiting for pass 1 in a running run that is reading; undefined otherwise. */
export async function readPendingListingPage(
  db: Database,
  runId: string,
  url: string,
): Promise<(ListingPageInput & { site: ListingSite }) | undefined> {
  const { rows } = await db.$client.query<
    SiteColumns & { url: string; text: string; links: ListingPageInput['links'] }
  >(
    `SELECT l.url, l.text, l.links, ${SITE_COLUMNS}
     FROM listing_pages l JOIN scrape_runs r ON r.id = l.run_id
     JOIN site_schedules s ON s.id = r.site_schedule_id
     WHERE l.run_id = $1 AND l.url = $2 AND l.state = 'pending'
       AND r.status = 'running' AND r.pages_state = 'reading'`,
    [runId, url],
  );
  const row = rows[0];
  return row && { url: row.url, text: row.text, links: row.links, site: siteOf(row) };
}

/** pending → read with its candidates, or → failed; false when the page was not pending. */
export async function settleListingPage(
  db: Database,
  runId: string,
  url: string,
  outcome: { candidates: PageCandidate[] } | { error: string },
): Promise<boolean> {
  const read = 'candidates' in outcome;
  const { rowCount } = await db.$client.query(
    `UPDATE listing_pages SET state = $3, candidates = $4::jsonb, error = $5, updated_at = now()
     WHERE run_id = $1 AND url = $2 AND state = 'pending'`,
    [
      runId,
      url,
      read ? 'read' : 'failed',
      read ? jsonForPg(outcome.candidates) : null,
      read ? null : withoutNul(outcome.error).slice(0, 2000),
    ],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * reading → merging once no page of the run is pending. True when this call moved it: its
 * caller queues the merge (the reconciler queues it when that is lost).
 */
export async function startMerge(db: Database, runId: string): Promise<boolean> {
  const { rowCount } = await db.$client.query(
    `UPDATE scrape_runs r SET pages_state = 'merging', updated_at = now()
     WHERE r.id = $1 AND r.status = 'running' AND r.pages_state = 'reading' AND r.listing_done
       AND NOT EXISTS (SELECT 1 FROM listing_pages l WHERE l.run_id = r.id AND l.state = 'pending')`,
    [runId],
  );
  return (rowCount ?? 0) > 0;
}

/** What pass 2 merges: a merging run's pages read, in listing order; undefined otherwise. */
export async function readRunCandidates(
  db: Database,
  runId: string,
): Promise<{ siteId: string; pages: { url: string; candidates: PageCandidate[] }[] } | undefined> {
  const { rows: runs } = await db.$client.query<{ site_id: string }>(
    `SELECT site_schedule_id AS site_id FROM scrape_runs
     WHERE id = $1 AND status = 'running' AND pages_state = 'merging'`,
    [runId],
  );
  const run = runs[0];
  if (!run) return undefined;
  const { rows } = await db.$client.query<{ url: string; candidates: PageCandidate[] }>(
    `SELECT url, candidates FROM listing_pages WHERE run_id = $1 AND state = 'read'
     ORDER BY position, url`,
    [runId],
  );
  return { siteId: run.site_id, pages: rows };
}

/** A merged post as pass 2 stores it. */
export interface ListingPostInput {
  key: string;
  link: string | null;
  pages: string[];
  fields: PagePostFields;
  sources: Partial<Record<keyof PagePostFields, string>>;
  /** Investigated on its own page (pass 3). */
  investigate: boolean;
}

/**
 * Stores a run's merged posts and moves it merging → investigating, in one transaction; false
 * (nothing written) when the run was not merging.
 */
export async function saveMergedPosts(
  db: Database,
  runId: string,
  posts: readonly ListingPostInput[],
): Promise<boolean> {
  const client = await db.$client.connect();
  try {
    await client.query('BEGIN');
    const { rowCount } = await client.query(
      `UPDATE scrape_runs SET pages_state = 'investigating', updated_at = now()
       WHERE id = $1 AND status = 'running' AND pages_state = 'merging'`,
      [runId],
    );
    if (!rowCount) {
      await client.query('ROLLBACK');
      return false;
    }
    await client.query(
      `INSERT INTO listing_posts (run_id, key, link, pages, fields, sources, investigation)
       SELECT $1, p.key, p.link, p.pages::jsonb, p.fields::jsonb, p.sources::jsonb,
              CASE WHEN p.investigate THEN 'pending' END
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::boolean[])
         AS p(key, link, pages, fields, sources, investigate)
       ON CONFLICT (run_id, key) DO NOTHING`,
      [
        runId,
        posts.map((post) => withoutNul(post.key)),
        posts.map((post) => post.link),
        posts.map((post) => jsonForPg(post.pages)),
        posts.map((post) => jsonForPg(post.fields)),
        posts.map((post) => jsonForPg(post.sources)),
        posts.map((post) => post.investigate),
      ],
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

/** A stored merged post. */
export interface ListingPost {
  key: string;
  link: string | null;
  pages: string[];
  fields: PagePostFields;
  sources: Partial<Record<keyof PagePostFields, string>>;
  investigation: 'pending' | 'done' | 'failed' | null;
}

const POST_COLUMNS = 'p.key, p.link, p.pages, p.fields, p.sources, p.investigation';

/** The posts of a run waiting for pass 3. */
export async function listPendingInvestigations(db: Database, runId: string): Promise<string[]> {
  const { rows } = await db.$client.query<{ key: string }>(
    `SELECT key FROM listing_posts WHERE run_id = $1 AND investigation = 'pending' ORDER BY key`,
    [runId],
  );
  return rows.map((row) => row.key);
}

/** A post waiting for pass 3 in a running run that is investigating; undefined otherwise. */
export async function readPendingInvestigation(
  db: Database,
  runId: string,
  key: string,
): Promise<(ListingPost & { site: ListingSite }) | undefined> {
  const { rows } = await db.$client.query<ListingPost & SiteColumns>(
    `SELECT ${POST_COLUMNS}, ${SITE_COLUMNS}
     FROM listing_posts p JOIN scrape_runs r ON r.id = p.run_id
     JOIN site_schedules s ON s.id = r.site_schedule_id
     WHERE p.run_id = $1 AND p.key = $2 AND p.investigation = 'pending'
       AND r.status = 'running' AND r.pages_state = 'investigating'`,
    [runId, key],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { key: k, link, pages, fields, sources, investigation } = row;
  return { key: k, link, pages, fields, sources, investigation, site: siteOf(row) };
}

/**
 * pending → done with the fields the post's own page gave (each sourced to `from`), or → failed;
 * false when the investigation was not pending.
 */
export async function settleInvestigation(
  db: Database,
  runId: string,
  key: string,
  outcome: { found: Partial<PagePostFields>; from: string } | { error: string },
): Promise<boolean> {
  const done = 'found' in outcome;
  const sources = done
    ? Object.fromEntries(Object.keys(outcome.found).map((k) => [k, outcome.from]))
    : {};
  const { rowCount } = await db.$client.query(
    `UPDATE listing_posts SET investigation = $3, fields = fields || $4::jsonb,
       sources = sources || $5::jsonb, error = $6, updated_at = now()
     WHERE run_id = $1 AND key = $2 AND investigation = 'pending'`,
    [
      runId,
      key,
      done ? 'done' : 'failed',
      jsonForPg(done ? outcome.found : {}),
      jsonForPg(sources),
      done ? null : withoutNul(outcome.error).slice(0, 2000),
    ],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * A run's merged posts once nothing is left to investigate (the run investigating, or done with
 * its postings still being settled); undefined otherwise.
 */
export async function readPostsToSettle(
  db: Database,
  runId: string,
): Promise<{ siteId: string; posts: ListingPost[] } | undefined> {
  const { rows: runs } = await db.$client.query<{ site_id: string }>(
    `SELECT r.site_schedule_id AS site_id FROM scrape_runs r
     WHERE r.id = $1 AND r.status = 'running' AND r.pages_state IN ('investigating', 'done')
       AND NOT EXISTS (SELECT 1 FROM listing_posts p
                       WHERE p.run_id = r.id AND p.investigation = 'pending')`,
    [runId],
  );
  const run = runs[0];
  if (!run) return undefined;
  const { rows } = await db.$client.query<ListingPost>(
    `SELECT ${POST_COLUMNS} FROM listing_posts p WHERE p.run_id = $1 ORDER BY p.created_at, p.key`,
    [runId],
  );
  return { siteId: run.site_id, posts: rows };
}

/**
 * investigating → done once the posts are the run's postings: the run's listing size is its
 * posts, and a page that could not be read makes the listing incomplete (it expires nothing).
 */
export async function finishPagesReading(
  db: Database,
  runId: string,
  posts: number,
): Promise<boolean> {
  const { rowCount } = await db.$client.query(
    `UPDATE scrape_runs r SET pages_state = 'done', requested_pages = $2,
       listing_complete = r.listing_complete AND NOT EXISTS (
         SELECT 1 FROM listing_pages l WHERE l.run_id = r.id AND l.state = 'failed'),
       updated_at = now()
     WHERE r.id = $1 AND r.status = 'running' AND r.pages_state = 'investigating'`,
    [runId, posts],
  );
  return (rowCount ?? 0) > 0;
}

/** Per pass: pages read of all, posts merged, investigations done of all. */
export interface PagesProgress {
  state: string | null;
  pages: { total: number; read: number; failed: number };
  candidates: number;
  posts: number;
  investigations: { total: number; done: number; failed: number };
}

export async function readPagesProgress(db: Database, runId: string): Promise<PagesProgress> {
  const { rows } = await db.$client.query<{
    state: string | null;
    pages: number;
    read: number;
    failed: number;
    candidates: number;
    posts: number;
    investigations: number;
    investigated: number;
    uninvestigated: number;
  }>(
    `SELECT r.pages_state AS state,
       (SELECT count(*)::int FROM listing_pages l WHERE l.run_id = r.id) AS pages,
       (SELECT count(*)::int FROM listing_pages l WHERE l.run_id = r.id AND l.state = 'read') AS read,
       (SELECT count(*)::int FROM listing_pages l WHERE l.run_id = r.id AND l.state = 'failed') AS failed,
       (SELECT coalesce(sum(jsonb_array_length(l.candidates)), 0)::int FROM listing_pages l
        WHERE l.run_id = r.id AND l.state = 'read') AS candidates,
       (SELECT count(*)::int FROM listing_posts p WHERE p.run_id = r.id) AS posts,
       (SELECT count(*)::int FROM listing_posts p WHERE p.run_id = r.id AND p.investigation IS NOT NULL) AS investigations,
       (SELECT count(*)::int FROM listing_posts p WHERE p.run_id = r.id AND p.investigation = 'done') AS investigated,
       (SELECT count(*)::int FROM listing_posts p WHERE p.run_id = r.id AND p.investigation = 'failed') AS uninvestigated
     FROM scrape_runs r WHERE r.id = $1`,
    [runId],
  );
  const row = rows[0];
  return {
    state: row?.state ?? null,
    pages: { total: row?.pages ?? 0, read: row?.read ?? 0, failed: row?.failed ?? 0 },
    candidates: row?.candidates ?? 0,
    posts: row?.posts ?? 0,
    investigations: {
      total: row?.investigations ?? 0,
      done: row?.investigated ?? 0,
      failed: row?.uninvestigated ?? 0,
    },
  };
}

/** One job of the reading the reconciler may queue again. */
export type PagesWork =
  | { pass: 'read'; runId: string; url: string; correlationId: string | null }
  | { pass: 'merge'; runId: string; correlationId: string | null }
  | { pass: 'investigate'; runId: string; key: string; correlationId: string | null };

/**
 * The reading's work quiet for `quietMs` in running runs: pages waiting to be read, runs waiting
 * for their merge (or for their postings once nothing is left to investigate: the merge job
 * settles them), posts waiting to be investigated.
 */
export async function listQuietPagesWork(
  db: Database,
  { quietMs, limit }: { quietMs: number; limit: number },
): Promise<PagesWork[]> {
  const { rows } = await db.$client.query<{
    pass: 'read' | 'merge' | 'investigate';
    run_id: string;
    item: string | null;
    correlation_id: string | null;
  }>(
    `WITH quiet AS (SELECT now() - make_interval(secs => $1::float8 / 1000) AS before)
     (SELECT 'read' AS pass, l.run_id, l.url AS item, r.correlation_id
      FROM listing_pages l JOIN scrape_runs r ON r.id = l.run_id, quiet
      WHERE l.state = 'pending' AND r.status = 'running' AND r.pages_state = 'reading'
        AND l.updated_at < quiet.before LIMIT $2)
     UNION ALL
     (SELECT 'merge', r.id, NULL, r.correlation_id FROM scrape_runs r, quiet
      WHERE r.status = 'running' AND r.updated_at < quiet.before
        AND (r.pages_state = 'merging'
          OR (r.pages_state = 'reading' AND r.listing_done AND NOT EXISTS (
                SELECT 1 FROM listing_pages l WHERE l.run_id = r.id AND l.state = 'pending'))
          OR (r.pages_state = 'investigating' AND NOT EXISTS (
                SELECT 1 FROM listing_posts p WHERE p.run_id = r.id AND p.investigation = 'pending')))
      LIMIT $2)
     UNION ALL
     (SELECT 'investigate', p.run_id, p.key, r.correlation_id
      FROM listing_posts p JOIN scrape_runs r ON r.id = p.run_id, quiet
      WHERE p.investigation = 'pending' AND r.status = 'running'
        AND r.pages_state = 'investigating' AND p.updated_at < quiet.before LIMIT $2)`,
    [quietMs, limit],
  );
  return rows.map((row): PagesWork => {
    if (row.pass === 'read')
      return { pass: 'read', runId: row.run_id, url: row.item!, correlationId: row.correlation_id };
    if (row.pass === 'investigate')
      return {
        pass: 'investigate',
        runId: row.run_id,
        key: row.item!,
        correlationId: row.correlation_id,
      };
    return { pass: 'merge', runId: row.run_id, correlationId: row.correlation_id };
  });
}
