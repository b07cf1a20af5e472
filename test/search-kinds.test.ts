import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRunByPublicId, insertSite, type RunRow } from '@gleaner/db';
import {
  createFixtureAdzuna,
  createFixtureGreenhouse,
  createFixtureRemotive,
  createFixtureUsaJobs,
  waitFor,
  type FixtureAdzuna,
  type FixtureGreenhouse,
  type FixtureRemotive,
  type FixtureUsaJobs,
} from '@gleaner/testing';
import { startTestApi, type TestApp } from './support/api-server.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * Seed 003's `POST /jobs/scrape` with a search, against a USAJOBS saved search (the fixture
 * speaks its Search API: headers, paging, filtering), through the API, workers and Postgres.
 */
let usajobs: FixtureUsaJobs;
let adzuna: FixtureAdzuna;
let remotive: FixtureRemotive;
let greenhouse: FixtureGreenhouse;
let system: InProcessSystem;
let api: Awaited<ReturnType<typeof startTestApi>>;
let app: TestApp;

beforeAll(async () => {
  usajobs = await createFixtureUsaJobs({ jobs: 240 });
  adzuna = await createFixtureAdzuna({ jobs: 240 });
  remotive = await createFixtureRemotive({ jobs: 240 });
  greenhouse = await createFixtureGreenhouse({ postings: 5, seed: 3 });
  system = await startInProcessSystem('search-kinds', {
    crawlConcurrency: 4,
    extractConcurrency: 4,
    more: () => ({
      deps: {
        sourceCredentials: {
          usajobs: { apiKey: usajobs.apiKey, userAgent: usajobs.userAgent },
          adzuna: { appId: adzuna.appId, appKey: adzuna.appKey },
        },
      },
      queues: [],
    }),
  });
  await insertSite(system.handle.db, {
    siteName: 'federal-python',
    kind: 'usajobs',
    config: {
      search_term: 'python developer',
      location: 'remote',
      is_remote: true,
      baseUrl: usajobs.baseUrl,
      pageSize: 20,
    },
  });
  // Seed 003's saved search on the other two kinds (Adzuna's `where` is its location).
  await insertSite(system.handle.db, {
    siteName: 'adzuna-python',
    kind: 'adzuna',
    config: {
      search_term: 'python developer',
      location: 'remote',
      is_remote: true,
      country: 'us',
      baseUrl: adzuna.baseUrl,
    },
  });
  await insertSite(system.handle.db, {
    siteName: 'remotive-python',
    kind: 'remotive',
    config: { search_term: 'python developer', is_remote: true, baseUrl: remotive.baseUrl },
  });
  await insertSite(system.handle.db, {
    siteName: 'acme-board',
    kind: 'greenhouse',
    config: { boardToken: greenhouse.boardToken, baseUrl: greenhouse.baseUrl },
  });
  api = await startTestApi(system);
  app = api.app;
});

afterAll(async () => {
  await api?.close();
  await system?.close();
  await usajobs?.close();
  await adzuna?.close();
  await remotive?.close();
  await greenhouse?.close();
});

async function runToEnd(runId: string): Promise<RunRow> {
  return waitFor(
    async () => {
      const run = await getRunByPublicId(system.handle.db, runId);
      return run && run.status !== 'queued' && run.status !== 'running' ? run : undefined;
    },
    { timeoutMs: 60_000, what: `run ${runId} to end` },
  );
}

const postingsOf = async (runId: string) =>
  (
    await system.handle.pool.query<{ external_id: string; status: string; title: string }>(
      'SELECT p.external_id, p.status, p.title FROM postings p JOIN scrape_runs r ON r.id = p.run_id WHERE r.run_id = $1',
      [runId],
    )
  ).rows;

/**
 * Seed 003's example body against `siteName`: the run ends `succeeded` with exactly 50 postings,
 * each one a match of the search.
 */
async function runSeedBody(siteName: string): Promise<RunRow> {
  const started = await app.inject({
    method: 'POST',
    url: '/jobs/scrape',
    payload: {
      site_name: siteName,
      search_term: 'python developer',
      location: 'remote',
      is_remote: true,
      results_wanted: 50,
    },
  });
  expect(started.statusCode).toBe(202);
  const { run_id: runId } = started.json<{ data: { run_id: string } }>().data;
  const run = await runToEnd(runId);
  expect(run).toMatchObject({
    status: 'succeeded',
    requestedPages: 50,
    readyCount: 50,
    errorsCount: 0,
  });
  const postings = await postingsOf(runId);
  expect(postings).toHaveLength(50);
  expect(postings.every((posting) => /python|developer/i.test(posting.title))).toBe(true);
  return run;
}

describe('POST /jobs/scrape with a search', () => {
  it("runs seed 003's example body to exactly 50 postings", async () => {
    usajobs.resetRequests();
    const run = await runSeedBody('federal-python');
    // The run's fields equal the saved search's: a run of the saved search, cut by results_wanted.
    expect(run.search).toEqual({
      search_term: 'python developer',
      location: 'remote',
      is_remote: true,
    });
    expect(run.listingComplete).toBe(false);
    expect(usajobs.requests().map((request) => request.query.Page)).toEqual(['1', '2', '3']);
    expect(usajobs.requests()[0]!.query).toMatchObject({
      Keyword: 'python developer',
      LocationName: 'remote',
      RemoteIndicator: 'True',
    });

    const view = await app.inject({ method: 'GET', url: `/jobs/scrape/${run.runId}?limit=0` });
    expect(view.json<{ data: { search: unknown } }>().data.search).toEqual({
      search_term: 'python developer',
      location: 'remote',
      is_remote: true,
    });
  });

  it.each([
    ['adzuna', 'adzuna-python'],
    ['remotive', 'remotive-python'],
  ])("runs seed 003's example body to exactly 50 postings on %s too", async (_kind, siteName) => {
    await runSeedBody(siteName);
  });

  it('answers ?mode=sync with results_wanted 15 with those 15 postings', async () => {
    const answer = await app.inject({
      method: 'POST',
      url: '/jobs/scrape?mode=sync',
      payload: { site_name: 'federal-python', search_term: 'python developer', results_wanted: 15 },
    });
    expect(answer.statusCode).toBe(200);
    const data = answer.json<{
      data: { status: string; execution_mode: string; postings: { title: string }[] };
    }>().data;
    expect(data).toMatchObject({ status: 'succeeded', execution_mode: 'sync' });
    expect(data.postings).toHaveLength(15);
  });

  it('refuses search fields for a kind that does not search, naming each', async () => {
    const answer = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      payload: { site_name: 'acme-board', search_term: 'python developer', is_remote: true },
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = answer.json<{ detail: string; errors: { field: string; message: string }[] }>();
    expect(problem.errors.map((error) => error.field)).toEqual([
      'body.search_term',
      'body.is_remote',
    ]);
    expect(problem.detail).toContain('does not search');
  });

  it("never expires the saved search's postings on a run with a one-off search", async () => {
    // The saved search to its end: complete, every match listed.
    const saved = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      payload: { site_name: 'federal-python' },
    });
    const savedRun = await runToEnd(saved.json<{ data: { run_id: string } }>().data.run_id);
    expect(savedRun).toMatchObject({
      status: 'succeeded',
      requestedPages: 80,
      listingComplete: true,
    });

    const oneOff = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      payload: { site_name: 'federal-python', search_term: 'site reliability engineer' },
    });
    const runId = oneOff.json<{ data: { run_id: string } }>().data.run_id;
    const run = await runToEnd(runId);
    const analysts = usajobs.matching({
      keyword: 'site reliability engineer',
      location: 'remote',
      remote: true,
    });
    expect(analysts.length).toBeGreaterThan(0);
    expect(run).toMatchObject({
      status: 'succeeded',
      requestedPages: analysts.length,
      listingComplete: false,
      expiredCount: 0,
    });
    const { rows } = await system.handle.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM postings p JOIN site_schedules s ON s.id = p.site_id WHERE s.site_name = 'federal-python' AND p.status = 'expired'",
    );
    expect(rows[0]!.n).toBe(0);
  });
});
