import { randomUUID } from 'node:crypto';
import {
  createDb,
  createWebhookEndpoint,
  dispatchWebhookEvents,
  insertSite,
  type DbHandle,
} from '@gleaner/db';
import { createTestDatabase, type TestDatabase } from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The webhook dispatcher reads the change feed after its cursor. Positions are gap-free, so a
 * first change past the cursor's next one means the feed's retention trimmed changes that no
 * dispatcher read (a scheduler down for longer than the retention): the pass says how many.
 */
let testDb: TestDatabase;
let handle: DbHandle;

beforeAll(async () => {
  testDb = await createTestDatabase('webhook_gap');
  handle = createDb({ url: testDb.url, poolMax: 4 });
});

afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

describe('the webhook dispatcher', () => {
  it('says how many posting changes were trimmed before it read them', async () => {
    const site = await insertSite(handle.db, {
      siteName: 'gap',
      kind: 'career-site',
      config: { url: 'https://careers.example.com' },
    });
    await createWebhookEndpoint(handle.db, { tenantId: null, url: 'https://hooks.example.com/a' });
    await handle.pool.query(
      `UPDATE webhook_cursors SET position = 100 WHERE source = 'posting_changes'`,
    );
    // Positions 101 to 104 were trimmed; 105 and 106 are still there.
    for (const position of [105, 106])
      await handle.pool.query(
        `INSERT INTO posting_changes (position, posting_id, site_id, type, changes)
         VALUES ($1, $2, $3, 'created', '{}')`,
        [position, randomUUID(), site.id],
      );
    const { changes } = await dispatchWebhookEvents(handle.db, 10);
    expect(changes).toMatchObject({ events: 2, skipped: 4 });
    expect(changes.deliveries).toHaveLength(2);
    // Read on from there: nothing more is missing.
    await handle.pool.query(
      `INSERT INTO posting_changes (position, posting_id, site_id, type, changes)
       VALUES (107, $1, $2, 'created', '{}')`,
      [randomUUID(), site.id],
    );
    expect((await dispatchWebhookEvents(handle.db, 10)).changes).toMatchObject({
      events: 1,
      skipped: 0,
    });
  });
});
