import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completeListing,
  createDb,
  createRun,
  finalizeRun,
  findScheduledSite,
  getRun,
  insertSite,
  listSiteAlerts,
  settlePostings,
  startRun,
  upsertListedPostings,
  watchOverdueSites,
  ActiveRunExistsError,
  DEFAULT_EXPIRY_POLICY,
  type DbHandle,
  type ExpiryPolicy,
  type PostingSettle,
  type RunRequestCounts,
} from '@gleaner/db';
import { createTestDatabase, runWholeListing, type TestDatabase } from '@gleaner/testing';
import { seedRunWithPostings } from './support/seed.js';

let testDb: TestDatabase;
let handle: DbHandle;

beforeAll(async () => {
  testDb = await createTestDatabase('finalize');
  handle = createDb({ url: testDb.url, poolMax: 20 });
});

afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

const runWithPostings = (count: number) => seedRunWithPostings(handle.db, count, 'site');

/** A page whose body is stored already: what the extract stage settles with. */
const storedPage = { contentType: 'text/html', sha256: 'stored-body', textSha256: null };

/** What each worker does: settle (autocommit), then try to finalize. */
async function settleThenFinalize(
  runId: string,
  postingId: string,
  status: 'ready' | 'skipped' | 'error',
) {
  const target = { postingId, runId };
  const settle: PostingSettle =
    status === 'ready'
      ? { ...target, status, ...storedPage, fields: { title: 'x' } }
      : status === 'error'
        ? { ...target, status, error: 'boom' }
        : { ...target, status };
  await settlePostings(handle.db, [settle]);
  return finalizeRun(handle.db, runId);
}

describe('run finalization', () => {
  it('closes a run exactly once when many workers settle its last postings at the same time', async () => {
    for (let round = 0; round < 5; round += 1) {
      const { run, postings } = await runWithPostings(40);
      const results = await Promise.all(
        postings.map((p) => settleThenFinalize(run.id, p.id, 'ready')),
      );
      const closers = results.filter((r) => r !== undefined);
      expect(closers).toHaveLength(1);
      expect(closers[0]).toMatchObject({
        status: 'succeeded',
        readyCount: 40,
        completedPages: 40,
        errorsCount: 0,
      });
      // A late duplicate delivery changes nothing.
      expect(await finalizeRun(handle.db, run.id)).toBeUndefined();
    }
  });

  it('closes a run whose postings were all skipped', async () => {
    const { run, postings } = await runWithPostings(12);
    const results = await Promise.all(
      postings.map((p) => settleThenFinalize(run.id, p.id, 'skipped')),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await getRun(handle.db, run.id)).toMatchObject({
      status: 'succeeded',
      skippedCount: 12,
      completedPages: 12,
    });
  });

  it('is partial at or below 30 % errors and failed above', async () => {
    const partial = await runWithPostings(10);
    await Promise.all(
      partial.postings.map((p, i) =>
        settleThenFinalize(partial.run.id, p.id, i < 3 ? 'error' : 'ready'),
      ),
    );
    expect(await getRun(handle.db, partial.run.id)).toMatchObject({
      status: 'partial',
      errorsCount: 3,
      readyCount: 7,
    });

    const failed = await runWithPostings(10);
    await Promise.all(
      failed.postings.map((p, i) =>
        settleThenFinalize(failed.run.id, p.id, i < 4 ? 'error' : 'ready'),
      ),
    );
    expect(await getRun(handle.db, failed.run.id)).toMatchObject({
      status: 'failed',
      errorsCount: 4,
    });
  });

  it('does not close while the listing is still running, even with nothing pending', async () => {
    const site = await insertSite(handle.db, {
      siteName: 'site-listing-open',
      kind: 'career-site',
      config: {},
    });
    const run = await createRun(handle.db, { siteId: site.id, trigger: 'manual' });
    await startRun(handle.db, run.id);
    const [posting] = await upsertListedPostings(handle.db, site.id, run.id, [
      { externalId: 'a', url: 'https://e.com/a' },
    ]);
    expect(await settleThenFinalize(run.id, posting!.id, 'ready')).toBeUndefined();
    await completeListing(handle.db, run.id, { requestedPages: 1, listingComplete: true });
    expect(await finalizeRun(handle.db, run.id)).toMatchObject({ status: 'succeeded' });
  });

  it('allows one active run per site', async () => {
    const { site } = await runWithPostings(1);
    await expect(
      createRun(handle.db, { siteId: site.id, trigger: 'manual' }),
    ).rejects.toBeInstanceOf(ActiveRunExistsError);
  });

  it('expires nothing when the run did not list the whole site', async () => {
    const first = await runWithPostings(4);
    await Promise.all(first.postings.map((p) => settleThenFinalize(first.run.id, p.id, 'ready')));
    const second = await createRun(handle.db, {
      siteId: first.site.id,
      trigger: 'manual',
      resultsWanted: 1,
    });
    await startRun(handle.db, second.id);
    const [only] = await upsertListedPostings(handle.db, first.site.id, second.id, [
      { externalId: 'job-0', url: 'https://example.com/jobs/0' },
    ]);
    await completeListing(handle.db, second.id, { requestedPages: 1, listingComplete: false });
    expect(await settleThenFinalize(second.id, only!.id, 'skipped')).toMatchObject({
      status: 'succeeded',
      expired: 0,
    });
  });
});

/**
 * Guarded expiry (decision 0019): a posting closes only after EXPIRE_AFTER_MISSES complete
 * listings in a row missed it, and a listing far below the site's usual size counts no miss.
 */
describe('guarded expiry', () => {
  let siteCounter = 0;
  async function newSite(expireAfterMisses: number | null = null) {
    siteCounter += 1;
    return insertSite(handle.db, {
      siteName: `guarded-${siteCounter}`,
      kind: 'greenhouse',
      config: { board: `guarded-${siteCounter}` },
      expireAfterMisses,
    });
  }

  /** One whole run of the site, listing `job-<i>` for each index; the closed run. */
  const listRun = (siteId: string, jobs: readonly number[], policy?: ExpiryPolicy) =>
    runWholeListing(handle.db, siteId, jobs, { ...(policy && { policy }) });

  async function postingStates(siteId: string) {
    const { rows } = await handle.pool.query<{
      external_id: string;
      status: string;
      missed: number;
    }>(
      `SELECT external_id, status, missed_listings AS missed FROM postings
       WHERE site_id = $1 ORDER BY external_id`,
      [siteId],
    );
    return Object.fromEntries(rows.map((r) => [r.external_id, `${r.status}/${r.missed}`]));
  }

  const range = (n: number) => Array.from({ length: n }, (_, i) => i);

  it('closes a posting only when two complete listings in a row missed it', async () => {
    const site = await newSite();
    await listRun(site.id, range(10));
    // Job 9 is missed once: it stays open, its miss counted.
    expect(await listRun(site.id, range(9))).toMatchObject({
      status: 'succeeded',
      expired: 0,
      missed: 1,
      expiredCount: 0,
      listingGuard: false,
    });
    expect((await postingStates(site.id))['job-9']).toBe('skipped/1');
    // Listed again: its count starts over, so the next miss is its first.
    await listRun(site.id, range(10));
    expect((await postingStates(site.id))['job-9']).toBe('skipped/0');
    await listRun(site.id, range(9));
    expect(await listRun(site.id, range(9))).toMatchObject({
      status: 'succeeded',
      expired: 1,
      missed: 0,
      expiredCount: 1,
    });
    const states = await postingStates(site.id);
    expect(states['job-9']).toBe('expired/2');
    expect(states['job-8']).toBe('skipped/0');
  });

  it("honours a site's expire_after_misses of 1, and the fleet's setting otherwise", async () => {
    const eager = await newSite(1);
    await listRun(eager.id, range(10));
    expect(await listRun(eager.id, range(8))).toMatchObject({ expired: 2, missed: 0 });

    const patient = await newSite();
    await listRun(patient.id, range(10));
    const policy = { ...DEFAULT_EXPIRY_POLICY, expireAfterMisses: 3 };
    expect(await listRun(patient.id, range(8), policy)).toMatchObject({ expired: 0, missed: 2 });
    expect(await listRun(patient.id, range(8), policy)).toMatchObject({ expired: 0, missed: 2 });
    expect(await listRun(patient.id, range(8), policy)).toMatchObject({ expired: 2, missed: 0 });
  });

  it('holds back a listing far below the median of the last five, then takes a lasting drop', async () => {
    const site = await newSite(1);
    await listRun(site.id, range(100));
    await listRun(site.id, range(100));
    // The third listing answers 5 % of the usual postings.
    const short = await listRun(site.id, range(5));
    expect(short).toMatchObject({
      status: 'partial',
      expired: 0,
      missed: 0,
      expiredCount: 0,
      listingGuard: true,
      errorsCount: 0,
    });
    expect(short.message).toMatch(
      /^listing guard: the listing found 5 postings, under 70% of the median 100 of the site's last complete listings/,
    );
    const states = Object.values(await postingStates(site.id));
    expect(states.filter((state) => state.startsWith('expired'))).toEqual([]);
    expect(states.filter((state) => state.endsWith('/0'))).toHaveLength(100);
    // The site's alert is raised once, and counted again while the drop lasts.
    const [raised] = await listSiteAlerts(handle.db, { siteId: site.id });
    expect(raised).toMatchObject({
      kind: 'listing_drop',
      occurrences: 1,
      runId: short.runId,
      message: short.message,
      details: { listed: 5, median_listed: 100, listing_drop_guard: 0.3 },
      resolvedAt: null,
    });
    // A drop that lasts is the board's new size: once it is the median, it expires as usual.
    const again = await listRun(site.id, range(5));
    expect(again).toMatchObject({ listingGuard: true });
    expect(await listSiteAlerts(handle.db, { siteId: site.id })).toMatchObject([
      { id: raised!.id, occurrences: 2, runId: again.runId },
    ]);
    expect(await listRun(site.id, range(5))).toMatchObject({
      status: 'succeeded',
      listingGuard: false,
      expired: 95,
    });
    // That normal listing resolved the alert.
    expect(await listSiteAlerts(handle.db, { siteId: site.id })).toEqual([]);
    const [resolved] = await listSiteAlerts(handle.db, { siteId: site.id, state: 'resolved' });
    expect(resolved).toMatchObject({ id: raised!.id, occurrences: 2 });
    expect(resolved!.resolvedAt).toBeInstanceOf(Date);
  });

  it('holds back an empty answer from a board that had postings, and not a first empty one', async () => {
    const fresh = await newSite();
    expect(await listRun(fresh.id, [])).toMatchObject({ status: 'succeeded', listingGuard: false });

    const site = await newSite(1);
    await listRun(site.id, range(20));
    expect(await listRun(site.id, [])).toMatchObject({
      status: 'partial',
      listingGuard: true,
      expired: 0,
      requestedPages: 0,
    });
    expect(Object.values(await postingStates(site.id))).toEqual(range(20).map(() => 'skipped/0'));
  });

  it('is off with LISTING_DROP_GUARD=1', async () => {
    const site = await newSite(1);
    await listRun(site.id, range(20));
    const policy = { ...DEFAULT_EXPIRY_POLICY, listingDropGuard: 1 };
    expect(await listRun(site.id, range(1), policy)).toMatchObject({
      status: 'succeeded',
      listingGuard: false,
      expired: 19,
    });
  });

  it('reopens an expired posting its site lists again, with its versions', async () => {
    const site = await newSite(1);
    for (const title of ['Old title', 'New title']) {
      const listed = await runWithPostingsOf(site.id, 10);
      await settlePostings(
        handle.db,
        listed.map((p) => ({
          postingId: p.id,
          runId: p.runId,
          status: 'ready' as const,
          // Another body each time: a posting fetched with a new body keeps its last version.
          ...storedPage,
          sha256: `body-${title}`,
          fields: { title },
        })),
      );
      await finalizeRun(handle.db, listed[0]!.runId);
    }
    const { rows: ids } = await handle.pool.query<{ id: string }>(
      "SELECT id FROM postings WHERE site_id = $1 AND external_id = 'job-9'",
      [site.id],
    );
    const postingId = ids[0]!.id;
    await listRun(site.id, range(9));
    expect((await postingStates(site.id))['job-9']).toBe('expired/1');
    const versionsBefore = await versionsOf(postingId);
    expect(versionsBefore).toHaveLength(1);

    const again = await listRun(site.id, range(10));
    expect(again).toMatchObject({ status: 'succeeded', expired: 0 });
    expect((await postingStates(site.id))['job-9']).toBe('skipped/0');
    expect(await versionsOf(postingId)).toEqual(versionsBefore);
    const { rows } = await handle.pool.query<{ title: string }>(
      'SELECT title FROM postings WHERE id = $1',
      [postingId],
    );
    expect(rows[0]?.title).toBe('New title');
  });

  /** A run of `count` postings left pending, listing done: for tests that settle them themselves. */
  async function runWithPostingsOf(siteId: string, count: number) {
    const run = await createRun(handle.db, { siteId, trigger: 'manual' });
    await startRun(handle.db, run.id);
    const listed = await upsertListedPostings(
      handle.db,
      siteId,
      run.id,
      range(count).map((i) => ({ externalId: `job-${i}`, url: `https://example.com/jobs/${i}` })),
    );
    await completeListing(handle.db, run.id, { requestedPages: count, listingComplete: true });
    return listed.map((p) => ({ ...p, runId: run.id }));
  }

  async function versionsOf(postingId: string) {
    const { rows } = await handle.pool.query(
      'SELECT version, fields FROM posting_versions WHERE posting_id = $1 ORDER BY version',
      [postingId],
    );
    return rows;
  }
});

describe('drift alerts', () => {
  let siteCounter = 0;
  async function newSite() {
    siteCounter += 1;
    return insertSite(handle.db, {
      siteName: `drift-${siteCounter}`,
      kind: 'greenhouse',
      config: { board: `drift-${siteCounter}` },
    });
  }
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);
  const openAlerts = (siteId: string) => listSiteAlerts(handle.db, { siteId });
  /** A whole listing of ten postings, the first `failing` of which end in `error`. */
  const runFailing = (siteId: string, failing: number, policy?: ExpiryPolicy) =>
    runWholeListing(handle.db, siteId, range(10), {
      outcome: (i) => (i < failing ? 'error' : 'skipped'),
      ...(policy && { policy }),
    });
  /** A whole listing of ten postings read anew, none with a company, the first `missing` without a location. */
  const runMissing = (siteId: string, missing: number) =>
    runWholeListing(handle.db, siteId, range(10), {
      outcome: (i) => ({
        title: `Job ${i}`,
        company: null,
        location: i < missing ? null : 'Berlin',
      }),
    });

  it("raises error_rate when a run's error share jumps above the site's recent runs, and resolves it", async () => {
    const site = await newSite();
    await runFailing(site.id, 0);
    await runFailing(site.id, 0);
    const failing = await runFailing(site.id, 3);
    expect(failing).toMatchObject({ status: 'partial', errorsCount: 3 });
    const [raised] = await openAlerts(site.id);
    expect(raised).toMatchObject({
      kind: 'error_rate',
      occurrences: 1,
      runId: failing.runId,
      details: { errors: 3, postings: 10, median_share: 0, rise: 0.2 },
    });
    expect(raised!.message).toBe(
      "error rate: 3 of the run's 10 postings ended in error (30%), against a median of 0% over the site's last runs",
    );
    // Still far above the median of the last runs (0, 0, 0.3): seen again.
    const worse = await runFailing(site.id, 6);
    expect(await openAlerts(site.id)).toMatchObject([
      { id: raised!.id, kind: 'error_rate', occurrences: 2, runId: worse.runId },
    ]);
    // A run with too few postings to judge leaves it open; a clean run resolves it.
    await runWholeListing(handle.db, site.id, range(3), { outcome: () => 'error' });
    expect(await openAlerts(site.id)).toHaveLength(1);
    const clean = await runFailing(site.id, 0);
    expect(await openAlerts(site.id)).toEqual([]);
    const [resolved] = await listSiteAlerts(handle.db, { siteId: site.id, state: 'resolved' });
    expect(resolved).toMatchObject({ id: raised!.id, kind: 'error_rate', occurrences: 2 });
    expect(resolved!.resolvedAt).toBeInstanceOf(Date);
    const { rows } = await handle.pool.query<{ resolved_by: string }>(
      `SELECT r.run_id AS resolved_by FROM site_alerts a JOIN scrape_runs r ON r.id = a.resolved_by_run_id
       WHERE a.id = $1`,
      [raised!.id],
    );
    expect(rows[0]?.resolved_by).toBe(clean.runId);
  });

  it('judges nothing without history, raises no error_rate for errors the site always has, nor with ERROR_RATE_ALERT_RISE=1', async () => {
    const fresh = await newSite();
    // A first run has no median to rise above: it is not judged, however it went.
    expect(await runFailing(fresh.id, 9)).toMatchObject({ status: 'failed' });
    for (let i = 0; i < 3; i += 1) await runFailing(fresh.id, 2);
    // 20 % is far below the first run's 90 %, and then the site's usual share.
    expect(await listSiteAlerts(handle.db, { siteId: fresh.id, state: 'all' })).toEqual([]);

    const quiet = await newSite();
    const off = { ...DEFAULT_EXPIRY_POLICY, errorRateRise: 1 };
    await runFailing(quiet.id, 0, off);
    await runFailing(quiet.id, 9, off);
    expect(await listSiteAlerts(handle.db, { siteId: quiet.id, state: 'all' })).toEqual([]);
  });

  it('raises fields_missing for the field whose share of postings read without it jumps', async () => {
    const site = await newSite();
    // The board never names the company: that is the site's usual, not news.
    await runMissing(site.id, 0);
    await runMissing(site.id, 1);
    const broken = await runMissing(site.id, 4);
    expect(broken).toMatchObject({
      status: 'succeeded',
      readyCount: 10,
      missingTitleCount: 0,
      missingCompanyCount: 10,
      missingLocationCount: 4,
    });
    const [raised] = await openAlerts(site.id);
    expect(raised).toMatchObject({
      kind: 'fields_missing',
      runId: broken.runId,
      details: {
        read: 10,
        fields: ['location'],
        missing: { title: 0, company: 10, location: 4 },
        median_share: { title: 0, company: 1, location: 0.05 },
        rise: 0.2,
      },
    });
    expect(raised!.message).toBe(
      "fields missing: of the 10 postings the run read, 4 have no location (40%, against a median of 5% over the site's last runs)",
    );
    await runMissing(site.id, 0);
    expect(await openAlerts(site.id)).toEqual([]);
  });

  it("raises http_errors for the class of answers whose share of the run's requests jumps, retried ones included", async () => {
    const site = await newSite();
    const answers = (answered: Partial<RunRequestCounts>) => ({
      requests: 40,
      clientErrors: 0,
      serverErrors: 0,
      rateLimited: 0,
      unanswered: 0,
      ...answered,
    });
    /** A clean run of ten postings: whatever the site answered was retried away. */
    const runAnswering = (requests: RunRequestCounts | undefined, policy?: ExpiryPolicy) =>
      runWholeListing(handle.db, site.id, range(10), {
        ...(requests && { requests }),
        ...(policy && { policy }),
      });
    // A board that always answers a few 404s (dead links in its listing): its usual.
    await runAnswering(answers({ clientErrors: 4 }));
    await runAnswering(answers({ clientErrors: 4, serverErrors: 1 }));
    const flaky = await runAnswering(
      answers({ clientErrors: 5, serverErrors: 14, rateLimited: 10 }),
    );
    // Every posting was read in the end: error_rate sees nothing, http_errors does.
    expect(flaky).toMatchObject({
      status: 'succeeded',
      errorsCount: 0,
      requestsCount: 40,
      clientErrorsCount: 5,
      serverErrorsCount: 14,
      rateLimitedCount: 10,
      unansweredCount: 0,
    });
    const [raised] = await openAlerts(site.id);
    expect(raised).toMatchObject({
      kind: 'http_errors',
      runId: flaky.runId,
      details: {
        requests: 40,
        classes: ['5xx', '429'],
        answers: { '4xx': 5, '5xx': 14, '429': 10, unanswered: 0 },
        median_share: { '4xx': 0.1, '5xx': 0.0125, '429': 0, unanswered: 0 },
        rise: 0.2,
      },
    });
    expect(raised!.message).toBe(
      "http errors: of the 40 requests the run made to the site, 14 were answered 5xx (35%, against a median of 1% over the site's last runs); 10 were answered 429 (25%, against a median of 0% over the site's last runs)",
    );
    // A run whose requests were not counted (Redis forgot them), or too few, is not judged.
    await runAnswering(undefined);
    await runAnswering(answers({ requests: 9, serverErrors: 9 }));
    expect(await openAlerts(site.id)).toHaveLength(1);
    // The next run answered as usual resolves it; HTTP_ERRORS_ALERT_RISE=1 raises nothing.
    await runAnswering(answers({ clientErrors: 4 }));
    expect(await openAlerts(site.id)).toEqual([]);
    await runAnswering(answers({ serverErrors: 40 }), {
      ...DEFAULT_EXPIRY_POLICY,
      httpErrorsRise: 1,
    });
    expect(await openAlerts(site.id)).toEqual([]);
  });

  it('raises overdue for an enabled site no run finished for three intervals, and resolves it when one does', async () => {
    const site = await newSite();
    const alertsOf = async () =>
      (await listSiteAlerts(handle.db, { siteId: site.id, state: 'all' })).filter(
        (alert) => alert.kind === 'overdue',
      );
    await watchOverdueSites(handle.db, 3);
    expect(await alertsOf()).toEqual([]);

    // Registered four hours ago with an hourly interval, never run.
    await handle.pool.query(
      `UPDATE site_schedules SET created_at = now() - interval '4 hours' WHERE id = $1`,
      [site.id],
    );
    expect(await watchOverdueSites(handle.db, 3)).toMatchObject({ raised: 1 });
    const [raised] = await alertsOf();
    expect(raised).toMatchObject({
      kind: 'overdue',
      runId: null,
      details: { last_finished_at: null, interval_minutes: 60, overdue_intervals: 3 },
      resolvedAt: null,
    });
    expect(raised!.message).toMatch(
      /^overdue: no run of the site has finished since it was registered 24\d minutes ago, 4\.0 of its 60-minute intervals$/,
    );
    // Looked at again (by this replica or another): the same open alert.
    expect(await watchOverdueSites(handle.db, 3)).toMatchObject({ raised: 0 });
    expect(await alertsOf()).toMatchObject([{ id: raised!.id, resolvedAt: null }]);

    // A run that finishes resolves it at once.
    const run = await runFailing(site.id, 0);
    const [resolved] = await alertsOf();
    expect(resolved).toMatchObject({ id: raised!.id });
    expect(resolved!.resolvedAt).toBeInstanceOf(Date);
    expect(await watchOverdueSites(handle.db, 3)).toMatchObject({ raised: 0 });

    // Its last run finished five hours ago: overdue again, and a disabled site is not.
    await handle.pool.query(
      `UPDATE scrape_runs SET finished_at = now() - interval '5 hours' WHERE run_id = $1`,
      [run.runId],
    );
    await watchOverdueSites(handle.db, 3);
    const open = (await alertsOf()).filter((alert) => alert.resolvedAt === null);
    expect(open).toHaveLength(1);
    expect(open[0]!.message).toMatch(/^overdue: the site's last run finished 30\d minutes ago/);
    // An adaptive site is overdue by the interval its change rate chose (here four hours).
    await handle.pool.query(
      'UPDATE site_schedules SET adaptive = true, adaptive_interval_minutes = 240 WHERE id = $1',
      [site.id],
    );
    expect(await watchOverdueSites(handle.db, 3)).toMatchObject({ resolved: 1 });
    await handle.pool.query('UPDATE site_schedules SET adaptive = false WHERE id = $1', [site.id]);
    expect(await watchOverdueSites(handle.db, 3)).toMatchObject({ raised: 1 });
    await handle.pool.query('UPDATE site_schedules SET enabled = false WHERE id = $1', [site.id]);
    expect(await watchOverdueSites(handle.db, 3)).toMatchObject({ resolved: 1 });
    expect((await alertsOf()).filter((alert) => alert.resolvedAt === null)).toEqual([]);
  });
});

describe('adaptive cadence', () => {
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);
  async function siteState(siteId: string) {
    const { rows } = await handle.pool.query<{
      change_rate_per_hour: number | null;
      adaptive_interval_minutes: number | null;
      next_in_minutes: number | null;
    }>(
      `SELECT s.change_rate_per_hour, s.adaptive_interval_minutes,
              round(extract(epoch FROM s.next_run_at - r.started_at) / 60)::int AS next_in_minutes
       FROM site_schedules s
       JOIN LATERAL (SELECT started_at FROM scrape_runs WHERE site_schedule_id = s.id
                     ORDER BY created_at DESC LIMIT 1) r ON true
       WHERE s.id = $1`,
      [siteId],
    );
    return rows[0]!;
  }
  /** Moves every run of the site `hours` back in time, as if the next one came that much later. */
  const age = (siteId: string, hours: number) =>
    handle.pool.query(
      `UPDATE scrape_runs SET started_at = started_at - make_interval(hours => $2),
              created_at = created_at - make_interval(hours => $2)
       WHERE site_schedule_id = $1`,
      [siteId, hours],
    );
  /** A whole listing of ten postings, the first `changed` of them read anew. */
  const runChanging = (siteId: string, changed: number) =>
    runWholeListing(handle.db, siteId, range(10), {
      outcome: (i) => (i < changed ? { title: `Job ${i} (${Math.random()})` } : 'skipped'),
    });

  it("moves an adaptive site's interval with the changes its runs find, and leaves others alone", async () => {
    const site = await insertSite(handle.db, {
      siteName: 'cadence-adaptive',
      kind: 'greenhouse',
      config: { board: 'cadence-adaptive' },
      adaptive: true,
    });
    const fixed = await insertSite(handle.db, {
      siteName: 'cadence-fixed',
      kind: 'greenhouse',
      config: { board: 'cadence-fixed' },
    });
    // A first run finds every posting new: it measures nothing.
    await runChanging(site.id, 10);
    expect(await siteState(site.id)).toMatchObject({
      change_rate_per_hour: null,
      adaptive_interval_minutes: null,
    });
    // Two hours later, 8 changes: 4 an hour, four per base interval, so twice as often.
    await age(site.id, 2);
    await runChanging(site.id, 8);
    const busy = await siteState(site.id);
    expect(busy.change_rate_per_hour).toBeCloseTo(4, 1);
    expect(busy).toMatchObject({ adaptive_interval_minutes: 30, next_in_minutes: 30 });
    const [scheduled] = await Promise.all([findScheduledSite(handle.db, site.id)]);
    expect(scheduled).toMatchObject({ intervalMinutes: 30 });
    expect(scheduled!.cadence!.reason).toMatch(/^about 4\.0 changes an hour.*every 30 minutes/);

    // Two quiet hours: the smoothed rate falls to 2.8 an hour, the interval grows to 36 minutes.
    await age(site.id, 2);
    await runChanging(site.id, 0);
    const quiet = await siteState(site.id);
    expect(quiet.change_rate_per_hour).toBeCloseTo(2.8, 1);
    expect(quiet).toMatchObject({ adaptive_interval_minutes: 36, next_in_minutes: 36 });

    // A run that does not succeed says nothing about how often the site changes.
    await age(site.id, 2);
    await runWholeListing(handle.db, site.id, range(10), { outcome: () => 'error' });
    expect((await siteState(site.id)).adaptive_interval_minutes).toBe(36);

    await runChanging(fixed.id, 10);
    await age(fixed.id, 2);
    await runChanging(fixed.id, 8);
    expect(await siteState(fixed.id)).toMatchObject({
      change_rate_per_hour: null,
      adaptive_interval_minutes: null,
    });
    expect(await findScheduledSite(handle.db, fixed.id)).toMatchObject({
      intervalMinutes: 60,
      cadence: null,
    });
  });
});
