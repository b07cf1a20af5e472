import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { indexPendingSearch, insertSite } from '@gleaner/db';
import { linkRunDuplicates } from '@gleaner/sources/cross-source';
import { createFixtureGreenhouse, waitFor, type FixtureGreenhouse } from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApp } from './support/api-server.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * One posting per job across sources (decision 0027): a company's Greenhouse board and its career
 * site, which embeds the board for two jobs (`gh_jid`), shows a third as its own page with the same
 * fields, and has two of its own (one the board's title for another office). After both sites'
 * runs, lists and search show each job once, as the board's record; `include_duplicates=true`
 * shows the career site's copies too, each `duplicate_of` the board's posting.
 */

interface StoredPosting {
  id: string;
  external_id: string;
  url: string;
  title: string;
  company: string;
  location: string;
  date_posted: string | null;
}

let system: InProcessSystem;
let greenhouse: FixtureGreenhouse;
let careers: Server;
let api: Awaited<ReturnType<typeof startTestApi>>;
let app: TestApp;
/** The career site's pages by path, set once the board's postings are known. */
const pages = new Map<string, string>();

function jobPage(job: { title: string; company: string; city: string; datePosted: string | null }) {
  const posting = {
    '@context': 'https://schema.org',
    '@type': 'JobPosting',
    title: job.title,
    hiringOrganization: { '@type': 'Organization', name: job.company },
    jobLocation: { '@type': 'Place', address: { addressLocality: job.city } },
    ...(job.datePosted && { datePosted: job.datePosted }),
    description: `<p>${job.title} at ${job.company}, in ${job.city}.</p>`,
  };
  return `<!doctype html><html><head><script type="application/ld+json">${JSON.stringify(posting)}</script></head><body><h1>${job.title}</h1></body></html>`;
}

beforeAll(async () => {
  greenhouse = await createFixtureGreenhouse({ postings: 4, seed: 7, companyName: 'Initech' });
  careers = createServer((request, response) => {
    const page = pages.get(request.url ?? '/');
    if (page === undefined) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => careers.listen(0, '127.0.0.1', resolve));
  system = await startInProcessSystem('cross_source');
  api = await startTestApi(system);
  app = api.app;
});

afterAll(async () => {
  await api?.close();
  await system?.close();
  await greenhouse?.close();
  await new Promise((resolve) => careers?.close(resolve));
});

async function listed(query = '') {
  const answer = await app.inject({ method: 'GET', url: `/postings?limit=50${query}` });
  expect(answer.statusCode, answer.body).toBe(200);
  return answer.json<{ data: { id: string; title: string; duplicate_of: string | null }[] }>().data;
}

describe('the same job through a company’s board and its career site', () => {
  it('shows once, as the board’s record, unless include_duplicates=true', async () => {
    const board = await insertSite(system.handle.db, {
      siteName: 'initech-board',
      kind: 'greenhouse',
      config: { boardToken: greenhouse.boardToken, baseUrl: greenhouse.baseUrl },
    });
    expect(await system.runToEnd(board.id)).toMatchObject({ status: 'succeeded', readyCount: 4 });
    const { rows: jobs } = await system.handle.pool.query<StoredPosting>(
      `SELECT id, external_id, url, title, company, location, date_posted FROM postings
       WHERE site_id = $1 ORDER BY external_id`,
      [board.id],
    );
    expect(jobs).toHaveLength(4);
    const city = (job: StoredPosting) => job.location.split(',')[0]!.trim();
    const ghId = (job: StoredPosting) => /\/jobs\/(\d+)/.exec(job.url)![1]!;

    const origin = `http://127.0.0.1:${(careers.address() as AddressInfo).port}`;
    const embedded = [jobs[0]!, jobs[1]!].map(
      (job) => [`/jobs/apply?gh_jid=${ghId(job)}`, job] as const,
    );
    // The board's record under other titles: the ATS id decides.
    for (const [path, job] of embedded)
      pages.set(
        path,
        jobPage({
          title: `${job.title} (apply here)`,
          company: 'Initech',
          city: city(job),
          datePosted: job.date_posted,
        }),
      );
    // The board's third job as a page of the site's own, its fields as the board has them.
    pages.set(
      '/jobs/same-role',
      jobPage({
        title: jobs[2]!.title,
        company: 'Initech, Inc.',
        city: city(jobs[2]!),
        datePosted: jobs[2]!.date_posted,
      }),
    );
    // The fourth job's title for another office, and a job the board does not list.
    pages.set(
      '/jobs/another-office',
      jobPage({
        title: jobs[3]!.title,
        company: 'Initech',
        city: 'Reykjavik',
        datePosted: jobs[3]!.date_posted,
      }),
    );
    pages.set(
      '/jobs/only-here',
      jobPage({ title: 'Office Manager', company: 'Initech', city: 'Austin', datePosted: null }),
    );
    pages.set(
      '/jobs',
      `<html><body>${[...pages.keys()].map((href) => `<a href="${href}">${href}</a>`).join(' ')}</body></html>`,
    );
    const site = await insertSite(system.handle.db, {
      siteName: 'initech-careers',
      kind: 'career-site',
      config: { url: origin, listingUrl: `${origin}/jobs` },
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
    });
    const careersRun = await system.runToEnd(site.id);
    expect(careersRun).toMatchObject({ status: 'succeeded', readyCount: 5 });

    const copiesNow = async () =>
      (
        await system.handle.pool.query<{ url: string; duplicate_of: string | null }>(
          'SELECT url, duplicate_of FROM postings WHERE site_id = $1 ORDER BY url',
          [site.id],
        )
      ).rows;
    const linkOfNow = (rows: { url: string; duplicate_of: string | null }[], path: string) =>
      rows.find((copy) => new URL(copy.url).pathname + new URL(copy.url).search === path)
        ?.duplicate_of;
    // Linked by the worker that closed the run, right after it closed.
    const copies = await waitFor(
      async () => {
        const rows = await copiesNow();
        return rows.filter((row) => row.duplicate_of !== null).length >= 3 ? rows : undefined;
      },
      { timeoutMs: 10_000, what: "the career site's copies linked" },
    );
    const linkOf = (path: string) => linkOfNow(copies, path);
    expect(linkOf(embedded[0]![0])).toBe(jobs[0]!.id);
    expect(linkOf(embedded[1]![0])).toBe(jobs[1]!.id);
    expect(linkOf('/jobs/same-role')).toBe(jobs[2]!.id);
    expect(linkOf('/jobs/another-office')).toBeNull();
    expect(linkOf('/jobs/only-here')).toBeNull();

    // Each job once: the board's four, and the career site's two of its own.
    const once = await listed();
    expect(once).toHaveLength(6);
    expect(once.every((posting) => posting.duplicate_of === null)).toBe(true);
    const all = await listed('&include_duplicates=true');
    expect(all).toHaveLength(9);
    expect(
      all
        .filter((posting) => posting.duplicate_of !== null)
        .map((p) => p.duplicate_of)
        .sort(),
    ).toEqual([jobs[0]!.id, jobs[1]!.id, jobs[2]!.id].sort());
    // Search too (the scheduler's indexer brings the vectors up to date; here, at once): the
    // third job's title finds the board's posting, not its copy.
    await indexPendingSearch(system.handle.db, 1_000);
    const found = await listed(`&q=${encodeURIComponent(`"${jobs[2]!.title}"`)}`);
    expect(found.map((posting) => posting.id)).toContain(jobs[2]!.id);
    expect(found.every((posting) => posting.duplicate_of === null)).toBe(true);
    const copies3 = await listed(
      `&include_duplicates=true&q=${encodeURIComponent(`"${jobs[2]!.title}"`)}`,
    );
    expect(copies3.map((posting) => posting.duplicate_of)).toContain(jobs[2]!.id);

    // The board renames the third job: as its run closes, the posting matches nothing, and its
    // copy on the career site stands on its own until that site's next run.
    const boardRun = await system.handle.pool.query<{ run_id: string }>(
      'SELECT run_id FROM postings WHERE id = $1',
      [jobs[2]!.id],
    );
    await system.handle.pool.query(
      `UPDATE postings SET title = 'Chief Stapler Officer' WHERE id = $1`,
      [jobs[2]!.id],
    );
    expect(await linkRunDuplicates(system.handle.db, boardRun.rows[0]!.run_id)).toBe(1);
    expect(linkOfNow(await copiesNow(), '/jobs/same-role')).toBeNull();
    expect(await listed()).toHaveLength(7);
  });
});
