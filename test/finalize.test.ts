import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completeListing,
  createDb,
  createRun,
  finalizeRun,
  getRun,
  insertSite,
  settlePostings,
  startRun,
  upsertListedPostings,
  ActiveRunExistsError,
  type DbHandle,
  type PostingSettle,
} from '@gleaner/db';
import { createTestDatabase, type TestDatabase } from '@gleaner/testing';
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

  it('expires postings a complete, succeeded run did not list, and only those', async () => {
    const first = await runWithPostings(5);
    await Promise.all(first.postings.map((p) => settleThenFinalize(first.run.id, p.id, 'ready')));
    const second = await createRun(handle.db, { siteId: first.site.id, trigger: 'manual' });
    await startRun(handle.db, second.id);
    const relisted = await upsertListedPostings(
      handle.db,
      first.site.id,
      second.id,
      [0, 1, 2].map((i) => ({ externalId: `job-${i}`, url: `https://example.com/jobs/${i}` })),
    );
    await completeListing(handle.db, second.id, { requestedPages: 3, listingComplete: true });
    const results = await Promise.all(
      relisted.map((p) => settleThenFinalize(second.id, p.id, 'skipped')),
    );
    const closer = results.find(Boolean);
    expect(closer).toMatchObject({ status: 'succeeded', expired: 2, expiredCount: 2 });
    const rows = await handle.pool.query<{ external_id: string; status: string }>(
      'SELECT external_id, status FROM postings WHERE site_id = $1 ORDER BY external_id',
      [first.site.id],
    );
    expect(rows.rows.filter((r) => r.status === 'expired').map((r) => r.external_id)).toEqual([
      'job-3',
      'job-4',
    ]);
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
