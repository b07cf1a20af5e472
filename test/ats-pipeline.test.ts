import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSite, listSiteAlerts } from '@gleaner/db';
import { createFixtureLever, type FixtureLever } from '@gleaner/testing';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * An ATS board through the real pipeline: the listing carries each whole posting, so crawl
 * hands the payload on without fetching posting pages, and extract maps it with the adapter.
 */
const POSTINGS = 120;

let lever: FixtureLever;
let system: InProcessSystem;
let siteId: string;

beforeAll(async () => {
  lever = await createFixtureLever({ postings: POSTINGS, seed: 11 });
  system = await startInProcessSystem('ats', { crawlConcurrency: 4, extractConcurrency: 4 });
  const site = await insertSite(system.handle.db, {
    siteName: 'lever-acme',
    kind: 'lever',
    config: { site: lever.site, baseUrl: lever.baseUrl },
  });
  siteId = site.id;
});

afterAll(async () => {
  await system?.close();
  await lever?.close();
});

describe('an ATS board through the pipeline', () => {
  it('maps every posting from its listing payload, without fetching posting pages', async () => {
    lever.resetRequests();
    const run = await system.runToEnd(siteId);
    expect(run).toMatchObject({
      status: 'succeeded',
      requestedPages: POSTINGS,
      readyCount: POSTINGS,
      errorsCount: 0,
    });
    // Only the paged postings API was called: 120 postings at 100 a page.
    expect(lever.requests().every((r) => r.path.startsWith('/v0/postings/'))).toBe(true);
    expect(lever.requests()).toHaveLength(2);

    const { rows } = await system.handle.pool.query<Record<string, unknown>>(
      'SELECT * FROM postings WHERE run_id = $1',
      [run.id],
    );
    const byExternalId = new Map(rows.map((row) => [row.external_id as string, row]));
    for (const fixture of lever.postings()) {
      const row = byExternalId.get(fixture.externalId)!;
      const e = fixture.expected;
      expect(row).toMatchObject({
        status: 'ready',
        title: e.title,
        company: e.company,
        location: e.location,
        is_remote: e.isRemote,
        employment_type: e.employmentType,
        salary_min: e.salaryMin,
        salary_max: e.salaryMax,
        salary_currency: e.salaryCurrency,
        salary_period: e.salaryPeriod,
        date_posted: e.datePosted,
        description: e.description,
        requirements: e.requirements,
      });
      expect((row.provenance as Record<string, string>).title).toBe('ats');
    }
  });

  it('skips every posting when the board is unchanged', async () => {
    const run = await system.runToEnd(siteId);
    expect(run).toMatchObject({ status: 'succeeded', skippedCount: POSTINGS, readyCount: 0 });
  });

  it('keeps every posting open when the board answers 5 % of them, or an empty list', async () => {
    const openPostings = async () => {
      const { rows } = await system.handle.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM postings WHERE site_id = $1 AND status <> 'expired'",
        [siteId],
      );
      return rows[0]?.n;
    };
    for (const listed of [POSTINGS / 20, 0]) {
      lever.setListed(listed);
      const run = await system.runToEnd(siteId);
      expect(run).toMatchObject({
        status: 'partial',
        requestedPages: listed,
        errorsCount: 0,
        expiredCount: 0,
      });
      expect(run.message).toContain('listing guard');
      expect(await openPostings()).toBe(POSTINGS);
    }
    const [alert] = await listSiteAlerts(system.handle.db, { siteId });
    expect(alert).toMatchObject({ kind: 'listing_drop', occurrences: 2, details: { listed: 0 } });

    // The board answers in full again: nothing was lost, and the alert is resolved.
    lever.setListed(null);
    expect(await system.runToEnd(siteId)).toMatchObject({
      status: 'succeeded',
      requestedPages: POSTINGS,
      expiredCount: 0,
    });
    expect(await openPostings()).toBe(POSTINGS);
    expect(await listSiteAlerts(system.handle.db, { siteId })).toEqual([]);
  });
});
