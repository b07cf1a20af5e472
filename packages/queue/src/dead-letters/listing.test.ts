import { randomUUID } from 'node:crypto';
import { createDb, CursorInvalidError, type DbHandle } from '@gleaner/db';
import {
  createTestDatabase,
  createTestRedisNamespace,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisConnection } from '../connection.js';
import { closeQueues, createQueues, enqueue, type Queues } from '../queues.js';
import { decodeDeadLetterCursor, encodeDeadLetterCursor, listDeadLetters } from './listing.js';

describe('dead-letter cursors', () => {
  it('round-trip and refuse what they did not issue', () => {
    const cursor = { id: 'dead-crawl-crawl-a-b', parkedAt: 1_700_000_000_123 };
    expect(decodeDeadLetterCursor(encodeDeadLetterCursor(cursor))).toEqual(cursor);
    for (const bad of [
      'not base64 json',
      Buffer.from('[1, 2]').toString('base64url'),
      Buffer.from('[1.5, "dead-x"]').toString('base64url'),
      Buffer.from('[1, "dead-a:b"]').toString('base64url'),
      Buffer.from('{"id": "dead-x"}').toString('base64url'),
    ])
      expect(() => decodeDeadLetterCursor(bad)).toThrow(CursorInvalidError);
  });
});

describe('listing dead letters from Redis', () => {
  let database: TestDatabase;
  let namespace: TestRedisNamespace;
  let handle: DbHandle;
  let redis: Redis;
  let queues: Queues;

  beforeAll(async () => {
    database = await createTestDatabase('dead_letters');
    namespace = createTestRedisNamespace('dead-letters');
    handle = createDb({ url: database.url, poolMax: 2 });
    redis = createRedisConnection(namespace.url, 'producer');
    queues = createQueues(redis, namespace.prefix);
  });

  afterAll(async () => {
    if (queues) await closeQueues(queues);
    redis?.disconnect();
    await handle?.close();
    await namespace?.cleanup();
    await database?.drop();
  });

  /** Parks documents dead letters as a worker would, oldest first; returns their ids newest first. */
  async function park(count: number, errorCode: (index: number) => string): Promise<string[]> {
    const ids: string[] = [];
    for (let index = 0; index < count; index += 1) {
      // A millisecond apart: entries parked in the same one are ordered by the list alone.
      await new Promise((resolve) => setTimeout(resolve, 2));
      ids.unshift(
        await enqueue(queues, 'dead-letter', {
          queue: 'documents',
          jobName: 'documents.extract-text',
          jobId: `document-${randomUUID()}-0`,
          payload: { documentId: randomUUID(), generation: 0 },
          errorClass: 'permanent',
          errorCode: errorCode(index),
          error: `failure ${index}`,
          attemptsMade: 1,
          failedAt: new Date().toISOString(),
        }),
      );
    }
    return ids;
  }

  it('pages newest first, and goes on after the entry a cursor names was removed', async () => {
    const ids = await park(7, () => 'DOCUMENT_CORRUPTION');
    const deps = { db: handle.db, queues, redis };
    const first = await listDeadLetters(deps, {}, { limit: 3 });
    expect(first.letters.map((l) => l.id)).toEqual(ids.slice(0, 3));
    expect(first.letters[0]).toMatchObject({
      queue: 'documents',
      errorClass: 'DOCUMENT_CORRUPTION',
      concern: { subjectType: 'document', siteId: null },
    });
    // The page's last entry is requeued or purged before the next page is asked for.
    await queues['dead-letter'].remove(ids[2]!);
    const second = await listDeadLetters(deps, {}, { limit: 3, cursor: first.nextCursor! });
    expect(second.letters.map((l) => l.id)).toEqual(ids.slice(3, 6));
    const third = await listDeadLetters(deps, {}, { limit: 3, cursor: second.nextCursor! });
    expect(third.letters.map((l) => l.id)).toEqual(ids.slice(6));
    expect(third.nextCursor).toBeNull();
    await Promise.all(ids.map((id) => queues['dead-letter'].remove(id)));
  });

  it('hands on a cursor when a page examined as much as it may before filling up', async () => {
    const ids = await park(6, (index) => (index % 3 === 0 ? 'RARE_FAILURE' : 'COMMON_FAILURE'));
    const deps = { db: handle.db, queues, redis };
    // Newest first: indexes 5..0, RARE at 3 and 0 → positions 2 and 5 of the list.
    const first = await listDeadLetters(
      deps,
      { errorClass: 'RARE_FAILURE' },
      { limit: 5, maxScan: 4 },
    );
    expect(first.letters.map((l) => l.id)).toEqual([ids[2]]);
    expect(first.nextCursor).not.toBeNull();
    const second = await listDeadLetters(
      deps,
      { errorClass: 'RARE_FAILURE' },
      { limit: 5, maxScan: 4, cursor: first.nextCursor! },
    );
    expect(second.letters.map((l) => l.id)).toEqual([ids[5]]);
    expect(second.nextCursor).toBeNull();
    await Promise.all(ids.map((id) => queues['dead-letter'].remove(id)));
  });
});
