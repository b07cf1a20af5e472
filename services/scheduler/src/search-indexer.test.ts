import { PassThrough } from 'node:stream';
import { createDb, insertSite, type DbHandle } from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import { createTestDatabase, waitFor, type TestDatabase } from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSearchIndexer } from './search-indexer.js';

let database: TestDatabase;
let handle: DbHandle;
let siteId: string;
const logger = createLogger({
  service: 'scheduler',
  level: 'silent',
  destination: new PassThrough(),
});

beforeAll(async () => {
  database = await createTestDatabase('search-indexer');
  handle = createDb({ url: database.url, poolMax: 3 });
  const site = await insertSite(handle.db, {
    siteName: 'indexed',
    kind: 'career-site',
    config: { url: 'https://indexed.example/' },
  });
  siteId = site.id;
});

afterAll(async () => {
  await handle?.close();
  await database?.drop();
});

async function addPostings(count: number, title: string) {
  await handle.pool.query(
    `INSERT INTO postings (site_id, external_id, url, status, title, description_text)
     SELECT $1, $2 || g, 'https://indexed.example/' || g, 'ready', $2, 'Build services with Rust.'
     FROM generate_series(1, $3::int) g`,
    [siteId, title, count],
  );
}

const matching = async (words: string) =>
  Number(
    (
      await handle.pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM postings WHERE search @@ websearch_to_tsquery('english', $1)",
        [words],
      )
    ).rows[0]!.n,
  );

describe('search indexer', () => {
  it('brings marked postings up to date in batches, pausing between them', async () => {
    await addPostings(5, 'Compiler Engineer');
    expect(await matching('compiler')).toBe(0);
    const pauses: number[] = [];
    const indexer = createSearchIndexer({
      db: handle.db,
      logger,
      intervalMs: 60_000,
      batchSize: 2,
      pauseMs: 7,
      sleep: (ms) => {
        pauses.push(ms);
        return Promise.resolve();
      },
    });
    expect(await indexer.drain()).toBe(5);
    // Batches of 2, 2 and 1: a pause after each full one.
    expect(pauses).toEqual([7, 7]);
    expect(await matching('compiler engineer')).toBe(5);
    expect(await matching('rust')).toBe(5);
    expect(await indexer.drain()).toBe(0);
  });

  it('runs on its own every interval until stopped', async () => {
    const indexer = createSearchIndexer({
      db: handle.db,
      logger,
      intervalMs: 50,
      batchSize: 100,
      pauseMs: 0,
    });
    indexer.start();
    try {
      await addPostings(3, 'Kernel Developer');
      await waitFor(async () => ((await matching('kernel')) === 3 ? true : undefined), {
        timeoutMs: 10_000,
        what: 'the indexer to index the new postings',
      });
    } finally {
      await indexer.stop();
    }
    const { rows } = await handle.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM postings WHERE search_pending',
    );
    expect(Number(rows[0]!.n)).toBe(0);
  });
});
