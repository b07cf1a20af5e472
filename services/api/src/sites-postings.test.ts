import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import {
  createRun,
  indexPendingSearch,
  failRun,
  settlePostings,
  startRun,
  upsertListedPostings,
  type DbHandle,
} from '@gleaner/db';
import { runWholeListing } from '@gleaner/testing';
import {
  careerSiteConfig,
  createApiTestStack,
  type ApiTestStack,
} from './test-stack.test-support.js';

const cursorOf = (text: string) => Buffer.from(text).toString('base64url');

let stack: ApiTestStack;
let handle: DbHandle;
let app: FastifyInstance;

const config = careerSiteConfig;

beforeAll(async () => {
  stack = await createApiTestStack('sites', {
    API_BODY_LIMIT_BYTES: 65536,
  });
  ({ handle, app } = stack);
});

afterAll(async () => {
  await stack?.close();
});

describe('/sites/:site/runs', () => {
  it("lists a site's runs newest first, a page at a time", async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: { site_name: 'runs-paged', kind: 'career-site', config },
    });
    const siteId = created.json().data.id as string;
    const runIds: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const run = await createRun(handle.db, { siteId, trigger: 'manual' });
      await failRun(handle.db, run.id, 'closed by the test');
      runIds.push(run.runId);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `&cursor=${cursor}` : '';
      const page = await app.inject({
        method: 'GET',
        url: `/sites/runs-paged/runs?limit=2${query}`,
      });
      expect(page.statusCode).toBe(200);
      const body: { data: { run_id: string }[]; next_cursor: string | null } = page.json();
      expect(body.data.length).toBeLessThanOrEqual(2);
      for (const run of body.data) {
        expect(run).toMatchObject({ site_name: 'runs-paged', status: 'failed' });
        seen.push(run.run_id);
      }
      cursor = body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...runIds].reverse());

    const badCursor = await app.inject({
      method: 'GET',
      url: '/sites/runs-paged/runs?cursor=bm90LWEtY3Vyc29y',
    });
    expect(badCursor.statusCode).toBe(400);
    const unknown = await app.inject({ method: 'GET', url: '/sites/no-such-site/runs' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().errors[0].field).toBe('params.site');
  });
});

describe('/sites', () => {
  it('creates, reads, updates, disables and deletes a site', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: { site_name: 'acme', kind: 'career-site', config },
    });
    expect(created.statusCode).toBe(201);
    const id = created.json().data.id as string;
    expect(created.json().data).toMatchObject({
      site_name: 'acme',
      enabled: true,
      interval_minutes: 60,
      min_pause_seconds: 2,
      max_pause_seconds: 8,
      expire_after_misses: null,
    });

    // A site may expire its postings at the first listing without them, and no sooner.
    const eager = await app.inject({
      method: 'PATCH',
      url: '/sites/acme',
      payload: { expire_after_misses: 1 },
    });
    expect(eager.json().data.expire_after_misses).toBe(1);
    const never = await app.inject({
      method: 'PATCH',
      url: '/sites/acme',
      payload: { expire_after_misses: 0 },
    });
    expect(never.statusCode).toBe(400);
    expect(never.json().errors[0].field).toBe('body.expire_after_misses');

    // Adaptive cadence: bounds that cross are refused, naming the ceiling.
    expect(created.json().data).toMatchObject({
      adaptive: false,
      min_interval_minutes: null,
      max_interval_minutes: null,
      change_rate_per_hour: null,
      // Chosen for when it is turned on: with no rate measured, its base interval.
      adaptive_interval_minutes: 60,
    });
    const adaptive = await app.inject({
      method: 'PATCH',
      url: '/sites/acme',
      payload: { adaptive: true, min_interval_minutes: 20 },
    });
    expect(adaptive.json().data).toMatchObject({ adaptive: true, min_interval_minutes: 20 });
    // A floor above the base: the interval it is scheduled by moves up to it at once.
    const floor = await app.inject({
      method: 'PATCH',
      url: '/sites/acme',
      payload: { min_interval_minutes: 90, max_interval_minutes: 120 },
    });
    expect(floor.json().data).toMatchObject({ adaptive_interval_minutes: 90 });
    const crossed = await app.inject({
      method: 'PATCH',
      url: '/sites/acme',
      payload: { max_interval_minutes: 10 },
    });
    expect(crossed.statusCode).toBe(400);
    expect(crossed.json().errors[0].field).toBe('body.max_interval_minutes');
    const crossedAtBirth = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: {
        site_name: 'crossed',
        kind: 'career-site',
        config,
        min_interval_minutes: 30,
        max_interval_minutes: 20,
      },
    });
    expect(crossedAtBirth.statusCode).toBe(400);
    expect(crossedAtBirth.json().errors[0].field).toBe('body.max_interval_minutes');

    expect((await app.inject({ method: 'GET', url: `/sites/${id}` })).json().data.site_name).toBe(
      'acme',
    );
    expect((await app.inject({ method: 'GET', url: '/sites/acme' })).json().data.id).toBe(id);

    const patched = await app.inject({
      method: 'PATCH',
      url: '/sites/acme',
      payload: { interval_minutes: 15, enabled: false },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({ interval_minutes: 15, enabled: false });

    // A disabled site refuses a manual scrape, and says why.
    const refused = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      payload: { site_name: 'acme' },
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.json()).toMatchObject({
      status: 409,
      title: 'Site Disabled',
      errors: [{ field: 'body.site_name', message: 'site is disabled' }],
    });
    expect(refused.json().detail).toContain('is disabled');

    const badConfig = await app.inject({
      method: 'PATCH',
      url: '/sites/acme',
      payload: { config: { url: 'https://a.example', postingUrlPattern: '(' } },
    });
    expect(badConfig.statusCode).toBe(400);
    expect(badConfig.json().errors[0].field).toBe('body.config.postingUrlPattern');

    const badPause = await app.inject({
      method: 'PATCH',
      url: '/sites/acme',
      payload: { min_pause_seconds: 30 },
    });
    expect(badPause.json().errors[0].field).toBe('body.max_pause_seconds');

    expect(
      (await app.inject({ method: 'PATCH', url: '/sites/acme', payload: {} })).statusCode,
    ).toBe(400);
    expect((await app.inject({ method: 'DELETE', url: '/sites/acme' })).statusCode).toBe(204);
    const gone = await app.inject({ method: 'GET', url: `/sites/${id}` });
    expect(gone.statusCode).toBe(404);
    expect(gone.headers['content-type']).toMatch(/problem\+json/);
  });

  it('refuses what Postgres cannot store, naming the field', async () => {
    const nul = 'https://careers.acme.example/\u0000jobs';
    for (const [request, field] of [
      [{ method: 'GET', url: '/sites/%00' }, 'params.site'],
      [{ method: 'DELETE', url: '/sites/acme%00' }, 'params.site'],
      [
        {
          method: 'POST',
          url: '/sites',
          payload: {
            site_name: 'nul',
            kind: 'career-site',
            config: { ...config, sitemapUrl: nul },
          },
        },
        'body.config.sitemapUrl',
      ],
      [
        {
          method: 'POST',
          url: '/sites',
          payload: {
            site_name: 'nul',
            kind: 'career-site',
            config: { ...config, postingUrlPattern: '\ud800' },
          },
        },
        'body.config.postingUrlPattern',
      ],
      [
        { method: 'POST', url: '/jobs/scrape', payload: { site_name: 'acme\u0000' } },
        'body.site_name',
      ],
    ] as const) {
      const response = await app.inject(request);
      expect(response.statusCode, request.url).toBe(400);
      expect(
        response.json().errors.map((e: { field: string }) => e.field),
        request.url,
      ).toContain(field);
    }
  });

  it("shows a site's open alerts, and every site's on /admin/alerts", async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: { site_name: 'shrinking', kind: 'career-site', config },
    });
    const siteId = created.json().data.id as string;
    // Two listings of 20 postings, then one of 2: the listing guard holds it.
    for (const count of [20, 20, 2]) {
      const indexes = Array.from({ length: count }, (_, i) => i);
      await runWholeListing(handle.db, siteId, indexes, {
        urlBase: 'https://careers.acme.example/jobs',
      });
    }

    const site = (await app.inject({ method: 'GET', url: '/sites/shrinking' })).json().data;
    expect(site.alerts).toHaveLength(1);
    expect(site.alerts[0]).toMatchObject({
      site_id: siteId,
      site_name: 'shrinking',
      kind: 'listing_drop',
      occurrences: 1,
      details: { listed: 2, median_listed: 20 },
      resolved_at: null,
    });
    expect(site.alerts[0].message).toContain('listing guard');
    expect(site.alerts[0].run_id).toMatch(/^manual_/);

    const open = await app.inject({ method: 'GET', url: '/admin/alerts' });
    expect(open.statusCode).toBe(200);
    expect(open.json().data.map((alert: { site_name: string }) => alert.site_name)).toContain(
      'shrinking',
    );
    const resolved = await app.inject({ method: 'GET', url: '/admin/alerts?state=resolved' });
    expect(resolved.json().data).toEqual([]);
    const bad = await app.inject({ method: 'GET', url: '/admin/alerts?state=closed' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].field).toBe('querystring.state');
  });

  it('cancels the active run of a site it deletes', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: { site_name: 'busy', kind: 'career-site', config },
    });
    const started = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      payload: { site_name: 'busy' },
    });
    const runId = started.json().data.run_id as string;
    const response = await app.inject({
      method: 'DELETE',
      url: `/sites/${created.json().data.id}`,
    });
    expect(response.statusCode).toBe(204);
    expect((await app.inject({ method: 'GET', url: `/jobs/scrape/${runId}` })).statusCode).toBe(
      404,
    );
  });
});

describe('GET /postings', () => {
  beforeAll(async () => {
    const site = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: { site_name: 'listings', kind: 'career-site', config },
    });
    const siteId = site.json().data.id as string;
    const run = await createRun(handle.db, { siteId, trigger: 'manual' });
    await startRun(handle.db, run.id);
    const rows = await upsertListedPostings(
      handle.db,
      siteId,
      run.id,
      Array.from({ length: 7 }, (_, i) => ({
        externalId: `p${i}`,
        url: `https://careers.acme.example/jobs/${i}`,
      })),
    );
    for (const [i, row] of rows.entries()) {
      await settlePostings(handle.db, [
        {
          status: 'ready',
          postingId: row.id,
          runId: run.id,
          contentType: 'text/html',
          sha256: `body-${i}`,
          textSha256: null,
          fields: {
            title: i % 2 === 0 ? `Rust Engineer ${i}` : `Designer ${i}`,
            company: 'Acme',
            isRemote: i < 3,
            description: `<p>Role ${i}</p>`,
          },
        },
      ]);
    }
    // What the scheduler's search indexer does within seconds.
    await indexPendingSearch(handle.db, 100);
  });

  it('pages with a cursor, newest first, without gaps or repeats', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/postings?site_name=listings&limit=3${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await app.inject({ method: 'GET', url })).json();
      seen.push(...page.data.map((p: { external_id: string }) => p.external_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(7);
    expect(new Set(seen).size).toBe(7);
  });

  it('filters by text, remote, status and updated_since', async () => {
    const text = (
      await app.inject({ method: 'GET', url: '/postings?site_name=listings&q=rust' })
    ).json();
    expect(text.data.map((p: { title: string }) => p.title).sort()).toEqual([
      'Rust Engineer 0',
      'Rust Engineer 2',
      'Rust Engineer 4',
      'Rust Engineer 6',
    ]);
    const remote = (
      await app.inject({ method: 'GET', url: '/postings?site_name=listings&remote=true' })
    ).json();
    expect(remote.data).toHaveLength(3);
    expect(
      (await app.inject({ method: 'GET', url: '/postings?status=error' })).json().data,
    ).toHaveLength(0);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(
      (await app.inject({ method: 'GET', url: `/postings?updated_since=${future}` })).json().data,
    ).toHaveLength(0);
  });

  it('rejects bad filters with problems naming the field', async () => {
    for (const [query, field] of [
      ['status=bogus', 'querystring.status'],
      ['remote=yes', 'querystring.remote'],
      ['updated_since=yesterday', 'querystring.updated_since'],
      ['limit=0', 'querystring.limit'],
      ['cursor=garbage', 'querystring.cursor'],
      ['site_name=nope', 'querystring.site_name'],
      // What Postgres cannot hold or cast: refused before any statement runs.
      ['q=rust%00', 'querystring.q'],
      ['site_name=acme%00', 'querystring.site_name'],
      ['updated_since=0000-01-01T00:00:00Z', 'querystring.updated_since'],
      [
        `cursor=${cursorOf('12345678901234567890_00000000-0000-4000-8000-000000000000')}`,
        'querystring.cursor',
      ],
      [
        `cursor=${cursorOf('9223372036854775808_00000000-0000-4000-8000-000000000000')}`,
        'querystring.cursor',
      ],
      [`cursor=${cursorOf('1_------------------------------------')}`, 'querystring.cursor'],
    ] as const) {
      const response = await app.inject({ method: 'GET', url: `/postings?${query}` });
      expect(response.statusCode, query).toBeGreaterThanOrEqual(400);
      expect(response.statusCode, query).toBeLessThan(500);
      expect(response.headers['content-type'], query).toMatch(/^application\/problem\+json/);
      expect(
        response.json().errors.map((e: { field: string }) => e.field),
        query,
      ).toContain(field);
    }
  });
});
