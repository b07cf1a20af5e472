import {
  completeListing,
  createRun,
  insertSite,
  startRun,
  upsertListedPostings,
  type Database,
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
