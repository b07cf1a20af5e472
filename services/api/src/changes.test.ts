import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import {
  createApiKey,
  postingFields,
  postingFieldKeys,
  snakeCase,
  trimPostingChanges,
  type DbHandle,
} from '@gleaner/db';
import { runWholeListing } from '@gleaner/testing';
import {
  careerSiteConfig,
  createApiTestStack,
  type ApiTestStack,
} from './test-stack.test-support.js';

interface Change {
  position: number;
  type: 'created' | 'updated' | 'closed' | 'reopened';
  posting_id: string;
  site_id: string;
  changes: Record<string, { previous: unknown; current: unknown }>;
  occurred_at: string;
}

let stack: ApiTestStack;
let handle: DbHandle;
let app: FastifyInstance;

const config = careerSiteConfig;
const range = (count: number) => Array.from({ length: count }, (_, i) => i);

beforeAll(async () => {
  stack = await createApiTestStack('changes');
  ({ handle, app } = stack);
});

afterAll(async () => {
  await stack?.close();
});

async function createSite(siteName: string, tenantId?: string): Promise<string> {
  const created = await app.inject({
    method: 'POST',
    url: '/sites',
    payload: { site_name: siteName, kind: 'career-site', config, tenant_id: tenantId },
  });
  expect(created.statusCode, created.body).toBe(201);
  return created.json().data.id as string;
}

/** Every event from `since` on, following `next_cursor` a page at a time until an empty page. */
async function readFeed(
  query: string,
  { since = '0', authorization }: { since?: string; authorization?: string } = {},
): Promise<{ events: Change[]; cursor: string }> {
  const events: Change[] = [];
  let cursor = since;
  for (;;) {
    const page = await app.inject({
      method: 'GET',
      url: `/changes?since=${cursor}&${query}`,
      ...(authorization ? { headers: { authorization } } : {}),
    });
    expect(page.statusCode, page.body).toBe(200);
    const body: { data: Change[]; next_cursor: string } = page.json();
    events.push(...body.data);
    if (body.data.length === 0) {
      expect(body.next_cursor).toBe(cursor);
      return { events, cursor };
    }
    expect(body.next_cursor).toBe(String(body.data.at(-1)!.position));
    cursor = body.next_cursor;
  }
}

async function postingIdOf(siteId: string, externalId: string): Promise<string> {
  const { rows } = await handle.pool.query<{ id: string }>(
    'SELECT id FROM postings WHERE site_id = $1 AND external_id = $2',
    [siteId, externalId],
  );
  return rows[0]!.id;
}

describe('GET /changes', () => {
  it('tells created, updated, closed and reopened postings in commit order, a page at a time', async () => {
    const siteId = await createSite('feed-acme');
    const urlBase = 'https://careers.acme.example/jobs';
    await runWholeListing(handle.db, siteId, range(10), { urlBase });
    const chef = await postingIdOf(siteId, 'job-3');
    await handle.pool.query(
      `UPDATE postings SET title = 'Chef', salary_min = 40000 WHERE id = $1`,
      [chef],
    );
    // The same fields again, and a status the pipeline moves through: not changes.
    await handle.pool.query(
      `UPDATE postings SET title = 'Chef', status = 'ready', last_seen_at = now() WHERE id = $1`,
      [chef],
    );
    // job-9 missed by two complete listings closes; listed again, it reopens.
    await runWholeListing(handle.db, siteId, range(9), { urlBase });
    await runWholeListing(handle.db, siteId, range(9), { urlBase });
    await runWholeListing(handle.db, siteId, range(10), { urlBase });
    const nine = await postingIdOf(siteId, 'job-9');

    const { events, cursor } = await readFeed(`site_name=feed-acme&limit=4`);
    expect(events.map((event) => event.type)).toEqual([
      ...range(10).map(() => 'created'),
      'updated',
      'closed',
      'reopened',
    ]);
    const positions = events.map((event) => event.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(new Set(positions).size).toBe(positions.length);
    expect(events.every((event) => event.site_id === siteId)).toBe(true);
    expect(events[10]).toMatchObject({
      posting_id: chef,
      changes: {
        title: { previous: null, current: 'Chef' },
        salary_min: { previous: null, current: 40000 },
      },
    });
    expect(Object.keys(events[10]!.changes)).toHaveLength(2);
    expect(events[11]).toMatchObject({ posting_id: nine, type: 'closed', changes: {} });
    expect(events[12]).toMatchObject({ posting_id: nine, type: 'reopened' });
    expect(Date.parse(events[12]!.occurred_at)).toBeGreaterThanOrEqual(
      Date.parse(events[11]!.occurred_at),
    );

    // Read on from the last cursor: nothing new, then only what came after it.
    expect((await readFeed('site_name=feed-acme', { since: cursor })).events).toEqual([]);
    await handle.pool.query(`UPDATE postings SET status = 'expired' WHERE id = $1`, [chef]);
    const after = await readFeed('site_name=feed-acme', { since: cursor });
    expect(after.events).toMatchObject([{ posting_id: chef, type: 'closed' }]);

    const closed = await readFeed(`site_id=${siteId}&type=closed`);
    expect(closed.events.map((event) => event.posting_id)).toEqual([nine, chef]);
  });

  it('starts from now with since=latest', async () => {
    const siteId = await createSite('feed-latest');
    await runWholeListing(handle.db, siteId, range(3));
    const latest = await app.inject({ method: 'GET', url: '/changes?since=latest' });
    expect(latest.json().data).toEqual([]);
    const from = latest.json().next_cursor as string;
    expect(Number(from)).toBeGreaterThanOrEqual(3);
    await runWholeListing(handle.db, siteId, range(4));
    const { events } = await readFeed('site_name=feed-latest', { since: from });
    expect(events).toMatchObject([
      { type: 'created', posting_id: await postingIdOf(siteId, 'job-3') },
    ]);
  });

  it('compares every posting field, named as the API names it', async () => {
    const siteId = await createSite('feed-fields');
    await runWholeListing(handle.db, siteId, range(1));
    const id = await postingIdOf(siteId, 'job-0');
    const columns = postingFieldKeys.map((key) => snakeCase(key));
    const values = postingFieldKeys.map((key) =>
      postingFields[key] === 'boolean' ? true : postingFields[key] === 'number' ? 1 : `new ${key}`,
    );
    await handle.pool.query(
      `UPDATE postings SET ${columns.map((column, i) => `${column} = $${i + 2}`).join(', ')} WHERE id = $1`,
      [id, ...values],
    );
    const { events } = await readFeed(`site_id=${siteId}&type=updated`);
    expect(events).toHaveLength(1);
    expect(Object.keys(events[0]!.changes).sort()).toEqual([...columns].sort());
    expect(events[0]!.changes.title).toEqual({ previous: null, current: 'new title' });
    expect(events[0]!.changes.is_remote).toEqual({ previous: null, current: true });
  });

  it("narrows a tenant key to its own sites' changes", async () => {
    const own = await createSite('feed-tenant-own', 'feed-tenant');
    const other = await createSite('feed-tenant-other', 'feed-someone-else');
    await runWholeListing(handle.db, own, range(2));
    await runWholeListing(handle.db, other, range(2));
    const { key } = await createApiKey(handle.db, {
      name: 'feed tenant',
      scope: { role: 'tenant', tenantId: 'feed-tenant' },
    });
    const authorization = `Bearer ${key}`;
    const { events } = await readFeed('limit=1000', { authorization });
    expect(events.length).toBe(2);
    expect(new Set(events.map((event) => event.site_id))).toEqual(new Set([own]));

    const forbidden = await app.inject({
      method: 'GET',
      url: '/changes?tenant_id=feed-someone-else',
      headers: { authorization },
    });
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().errors[0].field).toBe('querystring.tenant_id');
    // An admin key may ask for any tenant's.
    const asAdmin = await readFeed('tenant_id=feed-someone-else&limit=1000');
    expect(new Set(asAdmin.events.map((event) => event.site_id))).toEqual(new Set([other]));
  });

  it('refuses a bad cursor, type or site with a problem naming the field', async () => {
    for (const [url, status, field] of [
      ['/changes?since=abc', 400, 'querystring.since'],
      ['/changes?since=-1', 400, 'querystring.since'],
      ['/changes?type=deleted', 400, 'querystring.type'],
      ['/changes?limit=0', 400, 'querystring.limit'],
      ['/changes?site_name=no-such-site', 404, 'querystring.site_name'],
    ] as const) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(status);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json().errors[0].field, url).toBe(field);
    }
  });

  it('misses nothing and orders each posting by commit while writers race a reader', async () => {
    const siteId = await createSite('feed-race');
    await runWholeListing(handle.db, siteId, range(8));
    const ids = await Promise.all(range(8).map((i) => postingIdOf(siteId, `job-${i}`)));
    const start = (await readFeed(`site_id=${siteId}`)).cursor;

    // Eight writers, each 15 transactions: write its own posting, wait a little (so that
    // transactions overlap and commit out of the order they began in), then write the shared
    // posting 0, whose row lock orders those writes.
    // Each writer on a connection of its own, so that the reader's queries never wait for one.
    const writers = range(8).map(async (writer) => {
      const client = new pg.Client(handle.pool.options);
      await client.connect();
      try {
        for (let round = 0; round < 15; round += 1) {
          await client.query('BEGIN');
          await client.query('UPDATE postings SET company = $2 WHERE id = $1', [
            ids[writer],
            `writer ${writer} round ${round}`,
          ]);
          await client.query('SELECT pg_sleep(random() * 0.01)');
          await client.query('UPDATE postings SET title = $2 WHERE id = $1', [
            ids[0],
            `writer ${writer} round ${round}`,
          ]);
          await client.query('COMMIT');
        }
      } finally {
        await client.end();
      }
    });
    // A reader paging on while they write: a position it passed can never appear later.
    const seen: Change[] = [];
    let cursor = start;
    let writing = true;
    const done = Promise.all(writers).finally(() => {
      writing = false;
    });
    while (writing) {
      const page = await app.inject({
        method: 'GET',
        url: `/changes?since=${cursor}&site_id=${siteId}&limit=7`,
      });
      const body: { data: Change[]; next_cursor: string } = page.json();
      seen.push(...body.data);
      cursor = body.next_cursor;
    }
    await done;
    seen.push(...(await readFeed(`site_id=${siteId}`, { since: cursor })).events);

    // 8 × 15 company changes and 8 × 15 title changes of posting 0 (each UPDATE is its own
    // event), with positions that run on with no gap.
    const positions = seen.map((event) => event.position);
    expect(positions[0]).toBe(Number(start) + 1);
    expect(positions).toEqual(positions.map((_, i) => Number(start) + 1 + i));
    const changedFields = seen.flatMap((event) => Object.keys(event.changes));
    expect(changedFields.filter((field) => field === 'company')).toHaveLength(8 * 15);
    expect(changedFields.filter((field) => field === 'title')).toHaveLength(8 * 15);

    // Each posting's events chain: each one's previous value is the current value before it,
    // and the last current value is what the table holds.
    const { rows } = await handle.pool.query<{ id: string; title: string | null; company: string }>(
      'SELECT id, title, company FROM postings WHERE site_id = $1',
      [siteId],
    );
    for (const field of ['title', 'company'] as const) {
      const last = new Map<string, unknown>();
      for (const event of seen) {
        const change = event.changes[field];
        if (!change) continue;
        expect(change.previous, `${field} of ${event.posting_id} at ${event.position}`).toEqual(
          last.get(event.posting_id) ?? null,
        );
        last.set(event.posting_id, change.current);
      }
      for (const row of rows) expect(last.get(row.id) ?? null).toEqual(row[field]);
    }
  });

  it('numbers what a transaction kept when a savepoint holding its first change was rolled back', async () => {
    const siteId = await createSite('feed-savepoint');
    await runWholeListing(handle.db, siteId, range(3));
    const ids = await Promise.all(range(3).map((i) => postingIdOf(siteId, `job-${i}`)));
    const start = (await readFeed(`site_id=${siteId}`)).cursor;

    const client = new pg.Client(handle.pool.options);
    await client.connect();
    try {
      // Rolled back with the savepoint: the transaction's first change, its registration for
      // numbering and the id of its first change.
      await client.query('BEGIN');
      await client.query('SAVEPOINT first');
      await client.query('UPDATE postings SET company = $2 WHERE id = $1', [ids[0], 'undone']);
      await client.query('ROLLBACK TO SAVEPOINT first');
      await client.query('UPDATE postings SET company = $2 WHERE id = $1', [ids[1], 'kept 1']);
      // Released: a change under a savepoint that is kept is numbered with the rest.
      await client.query('SAVEPOINT second');
      await client.query('UPDATE postings SET company = $2 WHERE id = $1', [ids[2], 'kept 2']);
      await client.query('RELEASE SAVEPOINT second');
      await client.query('COMMIT');
    } finally {
      await client.end();
    }

    const { events } = await readFeed(`site_id=${siteId}`, { since: start });
    expect(events.map((event) => [event.posting_id, event.changes.company?.current])).toEqual([
      [ids[1], 'kept 1'],
      [ids[2], 'kept 2'],
    ]);
    expect(events.map((event) => event.position)).toEqual([Number(start) + 1, Number(start) + 2]);
    const { rows } = await handle.pool.query<{ count: string }>(
      'SELECT count(*) FROM posting_changes WHERE position IS NULL',
    );
    expect(rows[0]!.count).toBe('0');
  });

  it("records one statement's changed rows only, and nothing for a bookkeeping write after it", async () => {
    const siteId = await createSite('feed-statement');
    await runWholeListing(handle.db, siteId, range(4));
    const ids = await Promise.all(range(4).map((i) => postingIdOf(siteId, `job-${i}`)));
    await handle.pool.query(`UPDATE postings SET description = $2 WHERE id = $1`, [
      ids[3],
      'Long text kept as it is',
    ]);
    const start = (await readFeed(`site_id=${siteId}`)).cursor;

    const client = new pg.Client(handle.pool.options);
    await client.connect();
    try {
      await client.query('BEGIN');
      // One statement: two rows change, one is written with the values it has, one keeps its
      // description and changes nothing else.
      await client.query(
        `UPDATE postings p SET title = v.title, description = coalesce(v.description, p.description)
         FROM (VALUES ($1::uuid, 'Baker', NULL), ($2::uuid, 'Cook', 'New text'),
                      ($3::uuid, NULL, NULL), ($4::uuid, NULL, NULL)) AS v(id, title, description)
         WHERE p.id = v.id`,
        ids,
      );
      // Bookkeeping in the same transaction, after the changes were recorded: nothing more.
      await client.query(
        `UPDATE postings SET last_seen_at = now(), description = description WHERE id = ANY($1)`,
        [ids],
      );
      await client.query('COMMIT');
    } finally {
      await client.end();
    }

    const { events } = await readFeed(`site_id=${siteId}`, { since: start });
    // Positions follow commit order; within one statement, its rows come in no set order.
    const byPosting = events.map((event) => [event.posting_id, event.type, event.changes]);
    byPosting.sort((a, b) => ids.indexOf(a[0] as string) - ids.indexOf(b[0] as string));
    expect(byPosting).toEqual([
      [ids[0], 'updated', { title: { previous: null, current: 'Baker' } }],
      [
        ids[1],
        'updated',
        {
          title: { previous: null, current: 'Cook' },
          description: { previous: null, current: 'New text' },
        },
      ],
    ]);
  });

  it('records a statement whose own query writes postings again from a trigger', async () => {
    const siteId = await createSite('feed-nested');
    await runWholeListing(handle.db, siteId, range(2));
    const [changed, touched] = await Promise.all(
      range(2).map((i) => postingIdOf(siteId, `job-${i}`)),
    );
    const start = (await readFeed(`site_id=${siteId}`)).cursor;

    const client = new pg.Client(handle.pool.options);
    await client.connect();
    try {
      // A trigger on another table that writes postings (bookkeeping only) from inside the
      // query that changes a posting's title: its statement runs before the outer one's
      // statement trigger does.
      await client.query(`
        CREATE TEMPORARY TABLE feed_nested_touch (posting_id uuid);
        CREATE FUNCTION pg_temp.feed_nested_touch() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          UPDATE postings SET last_seen_at = now() WHERE id = NEW.posting_id;
          RETURN NULL;
        END $$;
        CREATE TRIGGER feed_nested_touch AFTER INSERT ON feed_nested_touch
          FOR EACH ROW EXECUTE FUNCTION pg_temp.feed_nested_touch();`);
      await client.query(
        `WITH changed AS (UPDATE postings SET title = 'Nested' WHERE id = $1 RETURNING id)
         INSERT INTO feed_nested_touch VALUES ($2)`,
        [changed, touched],
      );
    } finally {
      await client.end();
    }

    const { events } = await readFeed(`site_id=${siteId}`, { since: start });
    expect(events.map((event) => [event.posting_id, event.changes])).toEqual([
      [changed, { title: { previous: null, current: 'Nested' } }],
    ]);
  });

  // Last in the file: it deletes the feed's older events.
  it('refuses a cursor behind the retention, and reads from the oldest event kept from 0', async () => {
    const siteId = await createSite('feed-retention');
    await runWholeListing(handle.db, siteId, range(2));
    const [first, second] = (await readFeed(`site_id=${siteId}`)).events;
    // Every event up to `first` is past its retention; the later ones are not.
    await handle.pool.query(
      `UPDATE posting_changes SET occurred_at = now() + interval '1 hour' WHERE position > $1`,
      [first!.position],
    );
    const trimmed = await trimPostingChanges(handle.db, {
      before: new Date(Date.now() + 60_000),
      limit: 1_000_000,
    });
    expect(trimmed).toBe(first!.position);

    const gone = await app.inject({ method: 'GET', url: `/changes?since=${first!.position - 1}` });
    expect(gone.statusCode).toBe(410);
    expect(gone.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(gone.json().errors[0].field).toBe('querystring.since');
    expect(gone.json().detail).toContain(`the oldest kept is ${second!.position}`);
    const onward = await app.inject({ method: 'GET', url: `/changes?since=${first!.position}` });
    expect(onward.json().data[0].position).toBe(second!.position);
    const fromStart = await app.inject({ method: 'GET', url: '/changes?since=0' });
    expect(fromStart.json().data[0].position).toBe(second!.position);
  });
});
