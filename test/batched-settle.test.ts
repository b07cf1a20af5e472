import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completeListing,
  createDb,
  createRun,
  getRun,
  loadBody,
  sha256Hex,
  startRun,
  upsertListedPostings,
  type DbHandle,
  settlePostings,
  type PostingSettle,
} from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import { createSettlement } from '@gleaner/worker';
import { createTestDatabase, type TestDatabase } from '@gleaner/testing';
import { seedRunWithPostings } from './support/seed.js';

/**
 * The crawl stage's batched Postgres path: many postings read and settled per statement, with
 * the same guards, history and run finalization as one at a time.
 */
let testDb: TestDatabase;
let handle: DbHandle;

beforeAll(async () => {
  testDb = await createTestDatabase('batched');
  handle = createDb({ url: testDb.url, poolMax: 4 });
});

afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

const runWithPostings = (count: number) => seedRunWithPostings(handle.db, count, 'batched');

type ReadyPage = Extract<PostingSettle, { status: 'ready' }>;

function page(
  postingId: string,
  runId: string,
  title: string,
  html = `<h1>${title}</h1>`,
): ReadyPage {
  const body = Buffer.from(html);
  return {
    status: 'ready',
    postingId,
    runId,
    body,
    contentType: 'text/html; charset=utf-8',
    sha256: sha256Hex(body),
    textSha256: sha256Hex(Buffer.from(title.toLowerCase())),
    fields: {
      title,
      company: 'Acme',
      salaryMin: 100_000,
      isRemote: true,
      provenance: { title: 'json-ld' },
      extractionVersion: 'test-1',
      contentSimhash: '0123456789abcdef',
    },
  };
}

/** Counts the statements the store sends, by wrapping the pool's query. */
function countQueries(): { count: () => number; restore: () => void } {
  const pool = handle.db.$client;
  const original = pool.query.bind(pool);
  let count = 0;
  pool.query = ((...args: Parameters<typeof pool.query>) => {
    count += 1;
    return (original as (...a: unknown[]) => unknown)(...args);
  }) as typeof pool.query;
  return { count: () => count, restore: () => void (pool.query = original) };
}

const silent = () =>
  createLogger({ service: 'test', level: 'silent', destination: new PassThrough() });

describe('batched posting store', () => {
  it('reads, stores and settles concurrent jobs in a few statements and closes the run once', async () => {
    const { run, postings } = await runWithPostings(40);
    const settlement = createSettlement(handle.db, silent(), { maxBatchSize: 64 });
    const queries = countQueries();
    try {
      const found = await Promise.all(
        postings.map((p) => settlement.pendingWork({ postingId: p.id, runId: run.id })),
      );
      expect(found.every((f) => f?.status === 'pending' && f.runStatus === 'running')).toBe(true);
      expect(found[0]?.site).toMatchObject({ kind: 'career-site', maxConcurrency: 4 });
      expect(queries.count()).toBe(1);

      // Two postings with byte-identical pages share one stored body.
      const settled = await Promise.all(
        postings.map((p, i) =>
          settlement.settle(page(p.id, run.id, i < 2 ? 'Same page' : `Engineer ${i}`)),
        ),
      );
      expect(settled.every(Boolean)).toBe(true);
      // The read, one batch statement, then closing the run: whether it may close, the closing
      // statement and the closed row (drizzle goes through the same pool); then, once per run,
      // linking its postings across sources: its site, its postings, their keys, the candidates.
      expect(queries.count()).toBeLessThanOrEqual(5 + 4);
    } finally {
      queries.restore();
    }
    const closed = await getRun(handle.db, run.id);
    expect(closed).toMatchObject({ status: 'succeeded', readyCount: 40 });

    const { rows } = await handle.pool.query(
      `SELECT p.title, p.company, p.salary_min, p.is_remote, p.provenance, p.content_simhash,
              p.extraction_version, p.text_sha256 IS NOT NULL AS has_text_sha, b.content_encoding
       FROM postings p JOIN page_bodies b ON b.sha256 = p.body_sha256
       WHERE p.run_id = $1 ORDER BY p.external_id LIMIT 1`,
      [run.id],
    );
    expect(rows[0]).toMatchObject({
      title: 'Same page',
      company: 'Acme',
      salary_min: 100_000,
      is_remote: true,
      provenance: { title: 'json-ld' },
      content_simhash: '0123456789abcdef',
      extraction_version: 'test-1',
      has_text_sha: true,
      content_encoding: 'identity',
    });
    const bodies = await handle.pool.query<{ n: number }>(
      `SELECT count(DISTINCT body_sha256)::int AS n FROM postings WHERE run_id = $1`,
      [run.id],
    );
    expect(bodies.rows[0]!.n).toBe(39);
    const stored = await loadBody(handle.db, page(postings[5]!.id, run.id, 'Engineer 5').sha256);
    expect(stored?.body.toString()).toBe('<h1>Engineer 5</h1>');
  });

  it('settles batches of every size through the prepared statements, bodies shared or not', async () => {
    const { run, postings } = await runWithPostings(12);
    // One connection, so that its prepared statements are all of this test's.
    const single = createDb({ url: testDb.url, poolMax: 1 });
    try {
      // Batches of 1, 3 and 5 pages take the 1-, 4- and 8-slot statements (3 and 5 padded with
      // NULL slots); the two pages of the fourth batch share one body (sent once, 2 slots), which
      // the last page brings again (already stored).
      const batches = [
        postings.slice(0, 1),
        postings.slice(1, 4),
        postings.slice(4, 9),
        postings.slice(9, 11),
        postings.slice(11),
      ];
      for (const [index, batch] of batches.entries()) {
        const pages = batch.map((p) =>
          page(p.id, run.id, index >= 3 ? 'Shared page' : `Engineer ${p.externalId}`),
        );
        const settled = await settlePostings(single.db, pages);
        expect([...settled].sort()).toEqual(batch.map((p) => p.id).sort());
      }
      const { rows: prepared } = await single.pool.query<{ name: string }>(
        `SELECT name FROM pg_prepared_statements WHERE name LIKE 'gleaner-settle-ready-%' ORDER BY name`,
      );
      // Batch sizes share a few prepared texts: page slots come in powers of two.
      expect(prepared.map((row) => row.name)).toEqual(
        ['1', '2', '4', '8'].map((slots) => `gleaner-settle-ready-${slots}`),
      );
    } finally {
      await single.close();
    }
    const { rows } = await handle.pool.query<{ ready: number; bodies: number; stored: number }>(
      `SELECT count(*) FILTER (WHERE p.status = 'ready')::int AS ready,
              count(DISTINCT p.body_sha256)::int AS bodies,
              count(DISTINCT b.sha256)::int AS stored
       FROM postings p LEFT JOIN page_bodies b ON b.sha256 = p.body_sha256
       WHERE p.run_id = $1`,
      [run.id],
    );
    expect(rows[0]).toEqual({ ready: 12, bodies: 10, stored: 10 });
  });

  it('stores page bodies as fetched, compressed by Postgres with lz4', async () => {
    const { run, postings } = await runWithPostings(1);
    const settlement = createSettlement(handle.db, silent());
    const html = `<main>${'<p>Design and build the services our customers rely on.</p>'.repeat(500)}</main>`;
    const big = page(postings[0]!.id, run.id, 'Large page', html);
    expect(await settlement.settle(big)).toBe(true);
    const { rows } = await handle.pool.query(
      `SELECT content_encoding, byte_length::int, pg_column_compression(content) AS compression,
              pg_column_size(content) AS stored_size
       FROM page_bodies WHERE sha256 = $1`,
      [big.sha256],
    );
    expect(rows[0]).toMatchObject({
      content_encoding: 'identity',
      byte_length: html.length,
      compression: 'lz4',
    });
    expect(rows[0].stored_size).toBeLessThan(html.length / 5);
    expect((await loadBody(handle.db, big.sha256))?.body.toString()).toBe(html);
  });

  it('compresses long descriptions with lz4', async () => {
    const { run, postings } = await runWithPostings(1);
    const settlement = createSettlement(handle.db, silent());
    const text = 'Design and build the services our customers rely on. '.repeat(200);
    const long = page(postings[0]!.id, run.id, 'Long description');
    long.fields = { ...long.fields, description: `<p>${text}</p>`, descriptionText: text };
    expect(await settlement.settle(long)).toBe(true);
    const { rows } = await handle.pool.query(
      `SELECT pg_column_compression(description) AS description,
              pg_column_compression(description_text) AS description_text, description_text AS text
       FROM postings WHERE id = $1`,
      [postings[0]!.id],
    );
    expect(rows[0]).toEqual({ description: 'lz4', description_text: 'lz4', text });
  });

  it('stores long non-ASCII texts whole, as parameters of their own', async () => {
    const { run, postings } = await runWithPostings(2);
    const settlement = createSettlement(handle.db, silent());
    const text = 'Zürich – São Paulo: build the services our customers rely on. '.repeat(100);
    const encoded = page(postings[0]!.id, run.id, 'Encoded');
    encoded.fields = {
      ...encoded.fields,
      description: `<p>${text}</p>`,
      descriptionText: text,
      requirements: null,
    };
    const plain = page(postings[1]!.id, run.id, 'Plain');
    plain.fields = { ...plain.fields, description: `<p>${text}</p>`, descriptionText: text };
    expect(await Promise.all([settlement.settle(encoded), settlement.settle(plain)])).toEqual([
      true,
      true,
    ]);
    const { rows } = await handle.pool.query(
      `SELECT description, description_text, requirements FROM postings WHERE id = ANY($1) ORDER BY title`,
      [[postings[0]!.id, postings[1]!.id]],
    );
    const expected = { description: `<p>${text}</p>`, description_text: text, requirements: null };
    expect(rows).toEqual([expected, expected]);
  });

  it('settles nothing twice, keeps the previous version and clears fields the page dropped', async () => {
    const { site, run, postings } = await runWithPostings(2);
    const settlement = createSettlement(handle.db, silent());
    const [first, second] = postings;
    expect(await settlement.settle(page(first!.id, run.id, 'Backend engineer'))).toBe(true);
    // A duplicate delivery of the same job changes nothing.
    expect(await settlement.settle(page(first!.id, run.id, 'Duplicate'))).toBe(false);
    expect(
      await settlement.settle({ status: 'skipped', postingId: first!.id, runId: run.id }),
    ).toBe(false);
    expect(await getRun(handle.db, run.id)).toMatchObject({ status: 'running' });
    expect(await settlement.settle(page(second!.id, run.id, 'Designer'))).toBe(true);
    expect(await getRun(handle.db, run.id)).toMatchObject({ status: 'succeeded', readyCount: 2 });

    // The next run: the first page changed and lost its salary and company; the second did not.
    const nextRun = await createRun(handle.db, { siteId: site.id, trigger: 'manual' });
    await startRun(handle.db, nextRun.id);
    await upsertListedPostings(handle.db, site.id, nextRun.id, [
      { externalId: 'job-0', url: 'https://example.com/jobs/0' },
      { externalId: 'job-1', url: 'https://example.com/jobs/1' },
    ]);
    await completeListing(handle.db, nextRun.id, { requestedPages: 2, listingComplete: true });
    const edited = page(first!.id, nextRun.id, 'Staff backend engineer');
    edited.fields = { title: 'Staff backend engineer', provenance: { title: 'json-ld' } };
    const [a, b] = await Promise.all([
      settlement.settle(edited),
      settlement.settle({ status: 'skipped', postingId: second!.id, runId: nextRun.id }),
    ]);
    expect([a, b]).toEqual([true, true]);
    expect(await getRun(handle.db, nextRun.id)).toMatchObject({
      status: 'succeeded',
      readyCount: 1,
      skippedCount: 1,
    });
    const { rows } = await handle.pool.query(
      `SELECT p.title, p.salary_min, p.company, v.version, v.fields->>'title' AS old_title,
              (v.fields->>'salary_min')::real AS old_salary
       FROM postings p JOIN posting_versions v ON v.posting_id = p.id WHERE p.id = $1`,
      [first!.id],
    );
    expect(rows).toEqual([
      {
        title: 'Staff backend engineer',
        salary_min: null,
        company: null,
        version: 1,
        old_title: 'Backend engineer',
        old_salary: 100_000,
      },
    ]);
  });

  it('fails only the request whose row Postgres refuses, not the rest of its batch', async () => {
    const { run, postings } = await runWithPostings(6);
    const settlement = createSettlement(handle.db, silent());
    const pages = postings.map((p, i) => page(p.id, run.id, `Role ${i}`));
    // 1e39 does not fit the `real` salary column: Postgres refuses the row.
    pages[3]!.fields = { ...pages[3]!.fields, salaryMin: 1e39 };
    const results = await Promise.allSettled(pages.map((p) => settlement.settle(p)));
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    const { rows } = await handle.pool.query<{ status: string }>(
      'SELECT status FROM postings WHERE run_id = $1 ORDER BY external_id',
      [run.id],
    );
    expect(rows.map((r) => r.status)).toEqual([
      'ready',
      'ready',
      'ready',
      'pending',
      'ready',
      'ready',
    ]);
    expect(await getRun(handle.db, run.id)).toMatchObject({ status: 'running' });
  });

  it('drops NUL characters, which Postgres text cannot hold, from every field it stores', async () => {
    const { run, postings } = await runWithPostings(2);
    const settlement = createSettlement(handle.db, silent());
    const [first, second] = postings;
    const short = page(first!.id, run.id, 'Broken\u0000title');
    const long = page(second!.id, run.id, 'Encoded');
    long.fields = {
      ...long.fields,
      description: '<p>a\u0000b</p>',
      descriptionText: 'a\u0000b',
      provenance: { title: 'json-ld' },
    };
    expect(await Promise.all([settlement.settle(short), settlement.settle(long)])).toEqual([
      true,
      true,
    ]);
    const { rows } = await handle.pool.query<{ title: string; description: string; text: string }>(
      'SELECT title, description, description_text AS text FROM postings WHERE run_id = $1 ORDER BY external_id',
      [run.id],
    );
    expect(rows).toEqual([
      { title: 'Brokentitle', description: null, text: null },
      { title: 'Encoded', description: '<p>ab</p>', text: 'ab' },
    ]);
  });

  it('finds a batch’s postings by key while the statistics count few postings pending', async () => {
    // Statistics are gathered while runs are idle; a run's new postings are pending until the
    // next ANALYZE. Here another site's 5,000 postings were counted ready, then listed again.
    const own = await createTestDatabase('settle-plan');
    const ownHandle = createDb({ url: own.url, poolMax: 2 });
    try {
      await ownHandle.pool.query('ALTER TABLE postings SET (autovacuum_enabled = false)');
      const other = await seedRunWithPostings(ownHandle.db, 1, 'elsewhere');
      await ownHandle.pool.query(
        `INSERT INTO postings (site_id, run_id, external_id, url, status, title)
         SELECT $1, $2, 'other-' || g, 'https://example.com/other/' || g, 'ready', 'Other ' || g
         FROM generate_series(1, 5000) g`,
        [other.site.id, other.run.id],
      );
      await ownHandle.pool.query('ANALYZE postings');
      await ownHandle.pool.query(`UPDATE postings SET status = 'pending' WHERE run_id = $1`, [
        other.run.id,
      ]);

      const { run, postings } = await seedRunWithPostings(ownHandle.db, 48, 'batched');
      const settles: PostingSettle[] = postings.map((p, i) =>
        i < 32
          ? page(p.id, run.id, `Engineer ${i}`)
          : i < 40
            ? { status: 'skipped', postingId: p.id, runId: run.id }
            : { status: 'error', postingId: p.id, runId: run.id, error: 'gone' },
      );
      const pool = ownHandle.db.$client;
      const original = pool.query.bind(pool);
      const sent: { text: string; values: unknown[] }[] = [];
      pool.query = ((config: { text: string; values: unknown[] }) => {
        sent.push(config);
        return (original as (c: unknown) => unknown)(config);
      }) as typeof pool.query;
      try {
        expect((await settlePostings(ownHandle.db, settles)).size).toBe(48);
      } finally {
        pool.query = original;
      }
      expect(sent).toHaveLength(3);
      for (const statement of sent) {
        const { rows } = await ownHandle.pool.query<{ 'QUERY PLAN': unknown }>(
          `EXPLAIN (FORMAT JSON) ${statement.text}`,
          statement.values,
        );
        const plan = JSON.stringify(rows[0]!['QUERY PLAN']);
        // Reading every pending posting through the status index, once per batch, is what the
        // statements must not do; the batch's rows are found by primary key or by run and id.
        expect(plan).not.toContain('postings_status_updated_idx');
        expect(plan).toMatch(/"Index Name":"(postings_pkey|postings_run_idx)"/);
      }
    } finally {
      await ownHandle.close();
      await own.drop();
    }
  });
});
