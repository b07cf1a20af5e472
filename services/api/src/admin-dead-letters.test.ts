import { randomUUID } from 'node:crypto';
import {
  claimDocument,
  completeListing,
  createRun,
  failDocument,
  finalizeRun,
  getDocument,
  getPosting,
  getRun,
  insertDocuments,
  insertSite,
  listAudit,
  settlePostings,
  startRun,
  upsertListedPostings,
  type DbHandle,
} from '@gleaner/db';
import { crawlJob, documentJob, enqueue, type JobPayload, type Queues } from '@gleaner/queue';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiTestStack, type ApiTestStack } from './test-stack.test-support.js';

let stack: ApiTestStack;
let handle: DbHandle;
let app: FastifyInstance;
let queues: Queues;

/** Every request of this file goes through here, as the stack's admin key. */
async function api(method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) {
  const response = await app.inject({ method, url, payload });
  return { status: response.statusCode, body: response.json() };
}

beforeAll(async () => {
  stack = await createApiTestStack('dead_letters');
  ({ handle, app, queues } = stack);
});

afterAll(async () => {
  await stack?.close();
});

/** Parks a failed job as the worker does when it gives up on it. */
async function park(
  queue: 'crawl' | 'documents',
  payload: JobPayload<'crawl'> | JobPayload<'documents'>,
  failure: { code: string; retryClass: 'permanent' | 'transient'; attempts: number },
): Promise<string> {
  const jobId =
    queue === 'crawl'
      ? crawlJob.jobId(payload as JobPayload<'crawl'>)
      : documentJob.jobId(payload as JobPayload<'documents'>);
  // A millisecond apart, so that the newest-first order is the order of these calls.
  await new Promise((resolve) => setTimeout(resolve, 2));
  return enqueue(queues, 'dead-letter', {
    queue,
    jobName: queue === 'crawl' ? crawlJob.name : documentJob.name,
    jobId,
    payload,
    errorClass: failure.retryClass,
    errorCode: failure.code,
    error: `${failure.code}: it failed`,
    attemptsMade: failure.attempts,
    failedAt: new Date().toISOString(),
  });
}

/**
 * A site whose run listed `count` postings, of which the first `failed` failed their crawl for
 * good (settled `error` as the crawl handler gives up, and parked). The others were unchanged
 * (`skipped`) and the run finalized, unless `runEnds` is false: then they are still pending.
 */
async function siteWithFailedCrawls(name: string, count: number, failed: number, runEnds = true) {
  const site = await insertSite(handle.db, {
    siteName: name,
    kind: 'career-site',
    config: { url: 'https://example.com', sitemapUrl: 'https://example.com/sitemap.xml' },
    minPauseSeconds: 2,
    maxPauseSeconds: 4,
    tenantId: 'owner',
  });
  const run = await createRun(handle.db, { siteId: site.id, trigger: 'manual' });
  await startRun(handle.db, run.id);
  const postings = await upsertListedPostings(
    handle.db,
    site.id,
    run.id,
    Array.from({ length: count }, (_, i) => ({
      externalId: `job-${i}`,
      url: `https://example.com/jobs/${i}`,
    })),
  );
  await completeListing(handle.db, run.id, { requestedPages: count, listingComplete: true });
  const letters: string[] = [];
  for (const posting of postings.slice(0, failed)) {
    await settlePostings(handle.db, [
      { status: 'error', postingId: posting.id, runId: run.id, error: 'crawl: timed out' },
    ]);
    letters.push(
      await park(
        'crawl',
        { runId: run.id, siteId: site.id, postingId: posting.id },
        { code: 'HTTP_FETCH_TIMEOUT', retryClass: 'transient', attempts: 4 },
      ),
    );
  }
  if (runEnds) {
    await settlePostings(
      handle.db,
      postings
        .slice(failed)
        .map((posting) => ({ status: 'skipped' as const, postingId: posting.id, runId: run.id })),
    );
    await finalizeRun(handle.db, run.id);
  }
  return { site, run: (await getRun(handle.db, run.id))!, postings, letters };
}

/** A tenant's document whose extraction failed for good, parked. */
async function failedDocument(tenantId: string) {
  const [stored] = await insertDocuments(handle.db, [
    { tenantId, kind: 'resume', content: Buffer.from(`resume ${randomUUID()}`) },
  ]);
  const id = stored!.document.id;
  await claimDocument(handle.db, id, 0, 'test-worker');
  await failDocument(handle.db, id, 0, { errorType: 'corruption', message: 'broken file' });
  const letter = await park(
    'documents',
    { documentId: id, generation: 0 },
    { code: 'DOCUMENT_CORRUPTION', retryClass: 'permanent', attempts: 1 },
  );
  return { id, letter };
}

const ids = (body: { data?: { id: string }[]; entries?: { id: string }[] }) =>
  (body.data ?? body.entries ?? []).map((entry) => entry.id);

describe('GET /admin/dead-letters', () => {
  let acme: Awaited<ReturnType<typeof siteWithFailedCrawls>>;
  let document: Awaited<ReturnType<typeof failedDocument>>;

  beforeAll(async () => {
    acme = await siteWithFailedCrawls('acme-list', 3, 2);
    document = await failedDocument('tenant-a');
  });

  afterAll(async () => {
    await api('DELETE', '/admin/dead-letters?all=true');
  });

  it("lists every queue's dead letters newest first, with what they concern", async () => {
    const { status, body } = await api('GET', '/admin/dead-letters');
    expect(status).toBe(200);
    expect(ids(body)).toEqual([document.letter, acme.letters[1], acme.letters[0]]);
    expect(body.data[0]).toMatchObject({
      queue: 'documents',
      job_id: `document-${document.id}-0`,
      name: 'documents.extract-text',
      subject_type: 'document',
      subject_id: document.id,
      site_id: null,
      run_id: null,
      tenant_id: 'tenant-a',
      error_class: 'DOCUMENT_CORRUPTION',
      retry_class: 'permanent',
      attempts_made: 1,
    });
    expect(body.data[1]).toMatchObject({
      queue: 'crawl',
      subject_type: 'posting',
      subject_id: acme.postings[1]!.id,
      site_id: acme.site.id,
      site_name: 'acme-list',
      run_id: acme.run.runId,
      tenant_id: 'owner',
      error_class: 'HTTP_FETCH_TIMEOUT',
      retry_class: 'transient',
      attempts_made: 4,
      message: 'HTTP_FETCH_TIMEOUT: it failed',
    });
    expect(Date.parse(body.data[1].failed_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(body.next_cursor).toBeNull();
  });

  it('filters by queue, site (name or id), tenant, error class and time', async () => {
    const crawl = [acme.letters[1], acme.letters[0]];
    const cases: [string, (string | undefined)[]][] = [
      ['queue=documents', [document.letter]],
      ['queue=crawl', crawl],
      ['site=acme-list', crawl],
      [`site=${acme.site.id}`, crawl],
      ['tenant=tenant-a', [document.letter]],
      ['tenant=owner', crawl],
      ['tenant=nobody', []],
      ['error_class=HTTP_FETCH_TIMEOUT', crawl],
      ['queue=documents&error_class=HTTP_FETCH_TIMEOUT', []],
      [
        `since=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}`,
        [document.letter, ...crawl],
      ],
      [`since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, []],
    ];
    for (const [query, expected] of cases) {
      const { status, body } = await api('GET', `/admin/dead-letters?${query}`);
      expect({ query, status, ids: ids(body) }).toEqual({ query, status: 200, ids: expected });
    }
  });

  it('pages with limit and next_cursor', async () => {
    const first = await api('GET', '/admin/dead-letters?limit=2');
    expect(ids(first.body)).toEqual([document.letter, acme.letters[1]]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await api(
      'GET',
      `/admin/dead-letters?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`,
    );
    expect(ids(second.body)).toEqual([acme.letters[0]]);
    expect(second.body.next_cursor).toBeNull();
  });

  it('answers bad input with a problem naming the field', async () => {
    const cases: [string, number, string][] = [
      ['queue=dead-letter', 400, 'querystring.queue'],
      ['error_class=timeout', 400, 'querystring.error_class'],
      ['since=yesterday', 400, 'querystring.since'],
      ['limit=0', 400, 'querystring.limit'],
      ['cursor=bm90LWEtY3Vyc29y', 400, 'querystring.cursor'],
      ['site=no-such-site', 404, 'querystring.site'],
      ['colour=blue', 400, 'querystring'],
    ];
    for (const [query, status, field] of cases) {
      const response = await app.inject({
        method: 'GET',
        url: `/admin/dead-letters?${query}`,
      });
      expect({ query, status: response.statusCode }).toEqual({ query, status });
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json().errors).toEqual(
        expect.arrayContaining([expect.objectContaining({ field })]),
      );
    }
  });

  it('asks for an API key', async () => {
    const response = await app.inject({
      method: 'GET',
      url: '/admin/dead-letters',
      headers: { authorization: '' },
    });
    expect(response.statusCode).toBe(401);
  });
});

describe('POST /admin/dead-letters/requeue', () => {
  it('is a dry run by default that changes nothing, and is audited', async () => {
    const acme = await siteWithFailedCrawls('acme-dry', 2, 1);
    const dry = await api('POST', '/admin/dead-letters/requeue', { site: 'acme-dry' });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({
      dry_run: true,
      matched: 1,
      requeued: 1,
      skipped: 0,
      more: false,
      entries: [
        { id: acme.letters[0], outcome: 'would_requeue', delay_ms: 0, replay_run_id: null },
      ],
    });
    expect(await getPosting(handle.db, acme.postings[0]!.id)).toMatchObject({
      status: 'error',
      runId: acme.run.id,
    });
    expect(await queues['dead-letter'].getJob(acme.letters[0]!)).toBeDefined();
    expect(await queues.crawl.count()).toBe(0);
    const [audit] = await listAudit(handle.db, { action: 'dead_letters.requeue', limit: 1 });
    expect(audit).toMatchObject({
      dryRun: true,
      affected: 1,
      selector: { site: 'acme-dry', limit: 100 },
      details: { matched: 1, skipped: 0, runs: [] },
    });
    await api('DELETE', '/admin/dead-letters?site=acme-dry');
  });

  it("replays postings in a run, spacing a site's crawls by its politeness, and retries documents", async () => {
    const acme = await siteWithFailedCrawls('acme-replay', 3, 2);
    const document = await failedDocument('tenant-r');
    // A site whose run is still running: its posting waits for that run to end.
    const busy = await siteWithFailedCrawls('busy', 2, 1, false);

    const real = await api('POST', '/admin/dead-letters/requeue', { dry_run: false });
    expect(real.status).toBe(200);
    expect(real.body).toMatchObject({ dry_run: false, matched: 4, requeued: 3, skipped: 1 });
    const byId = new Map(
      real.body.entries.map((entry: { id: string }) => [entry.id, entry] as const),
    );
    expect(byId.get(busy.letters[0])).toMatchObject({
      outcome: 'skipped',
      reason: 'site busy has an active run; requeue once it has ended',
    });
    // Newest first: the site's second posting first, the first 2 s (its least pause) later.
    const replayRunId = (byId.get(acme.letters[1]) as { replay_run_id: string }).replay_run_id;
    expect(byId.get(acme.letters[1])).toMatchObject({ outcome: 'requeued', delay_ms: 0 });
    expect(byId.get(acme.letters[0])).toMatchObject({
      outcome: 'requeued',
      delay_ms: 2000,
      replay_run_id: replayRunId,
    });
    expect(byId.get(document.letter)).toMatchObject({ outcome: 'requeued', delay_ms: 0 });

    // The postings are pending in a replay run, which waits for them.
    const { rows } = await handle.pool.query<{ id: string }>(
      'SELECT id FROM scrape_runs WHERE run_id = $1',
      [replayRunId],
    );
    const replay = (await getRun(handle.db, rows[0]!.id))!;
    expect(replay).toMatchObject({
      status: 'running',
      siteScheduleId: acme.site.id,
      listingDone: true,
      listingComplete: false,
      requestedPages: 2,
    });
    for (const [index, delay] of [
      [1, 0],
      [0, 2000],
    ] as const) {
      const postingId = acme.postings[index]!.id;
      expect(await getPosting(handle.db, postingId)).toMatchObject({
        status: 'pending',
        runId: replay.id,
        error: null,
      });
      const job = await queues.crawl.getJob(
        crawlJob.jobId({ runId: replay.id, siteId: acme.site.id, postingId }),
      );
      expect(job?.opts.delay ?? 0).toBe(delay);
    }
    // The posting that had not failed stays where it was.
    expect(await getPosting(handle.db, acme.postings[2]!.id)).toMatchObject({
      status: 'skipped',
      runId: acme.run.id,
    });
    // The document is pending in its next generation, with that generation's job.
    expect(await getDocument(handle.db, document.id)).toMatchObject({
      status: 'pending',
      generation: 1,
    });
    expect(await queues.documents.getJob(`document-${document.id}-1`)).toBeDefined();

    // What was requeued left the dead letters; what was skipped stays.
    expect(ids((await api('GET', '/admin/dead-letters')).body)).toEqual([busy.letters[0]]);
    // A second requeue finds the skipped one only, still blocked.
    const again = await api('POST', '/admin/dead-letters/requeue', { dry_run: false });
    expect(again.body).toMatchObject({ matched: 1, requeued: 0, skipped: 1 });

    const audits = await listAudit(handle.db, { action: 'dead_letters.requeue', limit: 2 });
    expect(audits).toMatchObject([
      { dryRun: false, affected: 0, selector: { limit: 100 } },
      { dryRun: false, affected: 3, details: { matched: 4, skipped: 1, runs: [replayRunId] } },
    ]);
    await api('DELETE', '/admin/dead-letters?all=true');
  });

  it('answers bad input with a problem naming the field', async () => {
    const cases: [object, number, string][] = [
      [{ dry_run: 'yes' }, 400, 'body.dry_run'],
      [{ limit: 5000 }, 400, 'body.limit'],
      [{ queue: 'scheduler' }, 400, 'body.queue'],
      [{ since: '2026-13-01T00:00:00Z' }, 400, 'body.since'],
      [{ site: 'no-such-site' }, 404, 'body.site'],
      [{ everything: true }, 400, 'body'],
    ];
    for (const [payload, status, field] of cases) {
      const response = await api('POST', '/admin/dead-letters/requeue', payload);
      expect({ payload, status: response.status }).toEqual({ payload, status });
      expect(response.body.errors).toEqual(
        expect.arrayContaining([expect.objectContaining({ field })]),
      );
    }
  });
});

describe('DELETE /admin/dead-letters', () => {
  it('purges by selector, needs all=true for everything, and is audited', async () => {
    const acme = await siteWithFailedCrawls('acme-purge', 2, 2);
    const document = await failedDocument('tenant-p');

    const refused = await api('DELETE', '/admin/dead-letters');
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ field: 'querystring.all' })]);

    const dry = await api('DELETE', '/admin/dead-letters?all=true&dry_run=true');
    expect(dry.body).toMatchObject({ dry_run: true, matched: 3, purged: 3, more: false });
    expect(ids((await api('GET', '/admin/dead-letters')).body)).toHaveLength(3);

    const crawls = await api('DELETE', '/admin/dead-letters?queue=crawl&site=acme-purge');
    expect(crawls.body).toMatchObject({ dry_run: false, matched: 2, purged: 2 });
    expect(ids(crawls.body).sort()).toEqual([...acme.letters].sort());
    expect(ids((await api('GET', '/admin/dead-letters')).body)).toEqual([document.letter]);

    const rest = await api('DELETE', '/admin/dead-letters?all=true&limit=10');
    expect(rest.body).toMatchObject({ matched: 1, purged: 1 });
    expect((await api('GET', '/admin/dead-letters')).body.data).toEqual([]);
    // The rows are left as they were: a purge forgets the jobs, not the work.
    expect(await getDocument(handle.db, document.id)).toMatchObject({ status: 'failed' });

    const audits = await listAudit(handle.db, { action: 'dead_letters.purge', limit: 3 });
    expect(audits).toMatchObject([
      { dryRun: false, affected: 1, selector: { all: true, limit: 10 } },
      { dryRun: false, affected: 2, selector: { queue: 'crawl', site: 'acme-purge', limit: 1000 } },
      { dryRun: true, affected: 3, selector: { all: true, limit: 1000 } },
    ]);
  });
});
