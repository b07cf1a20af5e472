import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSite } from '@gleaner/db';
import { createFixtureBambooHr, type FixtureBambooHr } from '@gleaner/testing';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * A BambooHR careers site through the real pipeline: the scrape job lists the positions and reads
 * each one's detail, so every posting carries its whole detail as payload; crawl hands it on
 * without fetching the posting page, and extract maps it with the adapter.
 */
const POSTINGS = 45;

let bamboo: FixtureBambooHr;
let system: InProcessSystem;
let siteId: string;

beforeAll(async () => {
  bamboo = await createFixtureBambooHr({ postings: POSTINGS, seed: 37, company: 'lumen' });
  system = await startInProcessSystem('ats-bamboohr', {
    crawlConcurrency: 4,
    extractConcurrency: 4,
  });
  const site = await insertSite(system.handle.db, {
    siteName: 'bamboohr-lumen',
    kind: 'bamboohr',
    config: { company: bamboo.company, baseUrl: bamboo.baseUrl },
  });
  siteId = site.id;
});

afterAll(async () => {
  await system?.close();
  await bamboo?.close();
});

describe('a BambooHR careers site through the pipeline', () => {
  it('maps every posting from its detail payload, without fetching posting pages', async () => {
    bamboo.resetRequests();
    const run = await system.runToEnd(siteId);
    expect(run).toMatchObject({
      status: 'succeeded',
      requestedPages: POSTINGS,
      readyCount: POSTINGS,
      errorsCount: 0,
    });
    // The list and one detail per position; never a posting page (/careers/{id}).
    const paths = bamboo.requests().map((request) => request.path);
    expect(paths).toEqual([
      '/careers/list',
      ...bamboo.postings().map((posting) => `/careers/${posting.externalId}/detail`),
    ]);
    expect(paths.some((path) => /^\/careers\/[^/]+$/.test(path) && path !== '/careers/list')).toBe(
      false,
    );

    const { rows } = await system.handle.pool.query<Record<string, unknown>>(
      'SELECT * FROM postings WHERE run_id = $1',
      [run.id],
    );
    expect(rows).toHaveLength(POSTINGS);
    const byExternalId = new Map(rows.map((row) => [row.external_id as string, row]));
    for (const fixture of bamboo.postings()) {
      const row = byExternalId.get(fixture.externalId)!;
      const e = fixture.expected;
      expect(row).toMatchObject({
        status: 'ready',
        url: fixture.url,
        title: e.title,
        company: e.company,
        location: e.location,
        is_remote: e.isRemote,
        employment_type: e.employmentType,
        date_posted: e.datePosted,
        description: e.description,
      });
      const provenance = row.provenance as Record<string, string>;
      expect(provenance).toMatchObject({ title: 'ats', description: 'ats', datePosted: 'ats' });
    }
  });

  it('skips every posting when the careers site is unchanged', async () => {
    const run = await system.runToEnd(siteId);
    expect(run).toMatchObject({ status: 'succeeded', skippedCount: POSTINGS, readyCount: 0 });
  });
});
