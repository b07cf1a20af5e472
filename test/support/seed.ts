import {
  completeListing,
  createRun,
  insertSite,
  startRun,
  upsertListedPostings,
  type Database,
  type DbHandle,
} from '@gleaner/db';

let siteCounter = 0;

/**
 * A new career site with a running run that has listed `count` postings (all `pending`) and
 * finished its listing: what a worker sees once the scrape job is done.
 */
export async function seedRunWithPostings(db: Database, count: number, label = 'site') {
  siteCounter += 1;
  const site = await insertSite(db, {
    siteName: `${label}-${siteCounter}`,
    kind: 'career-site',
    config: { url: 'https://example.com', sitemapUrl: 'https://example.com/sitemap.xml' },
  });
  const run = await createRun(db, { siteId: site.id, trigger: 'manual' });
  await startRun(db, run.id);
  const postings = await upsertListedPostings(
    db,
    site.id,
    run.id,
    Array.from({ length: count }, (_, i) => ({
      externalId: `job-${i}`,
      url: `https://example.com/jobs/${i}`,
    })),
  );
  await completeListing(db, run.id, { requestedPages: count, listingComplete: true });
  return { site, run, postings };
}

/** A run's postings by id: their status, title and error. */
export async function runPostingsById(handle: Pick<DbHandle, 'pool'>, runId: string) {
  const { rows } = await handle.pool.query<{
    id: string;
    status: string;
    title: string | null;
    error: string | null;
  }>('SELECT id, status, title, error FROM postings WHERE run_id = $1', [runId]);
  return new Map(rows.map((row) => [row.id, row]));
}
