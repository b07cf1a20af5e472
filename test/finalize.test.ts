import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completeListing,
  createDb,
  createRun,
  finalizeRun,
  getRun,
  insertSite,
  listSiteAlerts,
  settlePostings,
  startRun,
  upsertListedPostings,
  ActiveRunExistsError,
  DEFAULT_EXPIRY_POLICY,
  type DbHandle,
  type ExpiryPolicy,
  type PostingSettle,
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
