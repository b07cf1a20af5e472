import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRun, indexPendingSearch, upsertListedPostings } from '@gleaner/db';
import { createApiTestStack, type ApiTestStack } from './test-stack.test-support.js';

let stack: ApiTestStack;
const sites: Record<'a' | 'b', string> = { a: '', b: '' };
let runId = '';

interface Posting {
  title: string;
  company?: string;
  description: string;
  remote?: boolean;
  status?: string;
}

async function addSite(name: string, tenant: string): Promise<string> {
  const created = await stack.app.inject({
    method: 'POST',
    url: '/sites',
    payload: { site_name: name, kind: 'career-site', config: { url: `https://${name}.example/` } },
  });
  expect(created.statusCode).toBe(201);
  const id = created.json().data.id as string;
  await stack.handle.pool.query('UPDATE site_schedules SET tenant_id = $1 WHERE id = $2', [
    tenant,
    id,
  ]);
  return id;
}

/** Postings as extraction leaves them; the search vector is the trigger's. */
async function addPostings(siteId: string, run: string, postings: Record<string, Posting>) {
  const listed = await upsertListedPostings(
    stack.handle.db,
    siteId,
    run,
    Object.keys(postings).map((externalId) => ({
      externalId,
      url: `https://example.test/${externalId}`,
    })),
  );
  for (const row of listed) {
    const posting = postings[row.externalId]!;
    await stack.handle.pool.query(
      `UPDATE postings SET title = $2, company = $3, description = $4, description_text = $4,
              is_remote = $5, status = $6, extracted_at = now()
       WHERE id = $1`,
      [
        row.id,
        posting.title,
        posting.company ?? 'Acme',
        posting.description,
        posting.remote ?? false,
        posting.status ?? 'ready',
      ],
    );
  }
}

/** What the scheduler's search indexer does within seconds of a change. */
async function indexSearch() {
  while ((await indexPendingSearch(stack.handle.db, 100)) > 0);
}

beforeAll(async () => {
  stack = await createApiTestStack('posting-search');
  sites.a = await addSite('search-a', 'tenant-a');
  sites.b = await addSite('search-b', 'tenant-b');
  const runA = await createRun(stack.handle.db, { siteId: sites.a, trigger: 'manual' });
  const runB = await createRun(stack.handle.db, { siteId: sites.b, trigger: 'manual' });
  runId = runA.runId;
  await addPostings(sites.a, runA.id, {
    'title-match': {
      title: 'Kubernetes Platform Engineer',
      description: 'Join the infrastructure group and keep our clusters healthy.',
    },
    'description-match': {
      title: 'Backend Developer',
      description:
        'You will ship services that run on Kubernetes, and help the platform team with on-call.',
    },
    phrase: {
      title: 'Site Reliability Engineer',
      description: 'Own reliability of the site and its incident response.',
      remote: true,
    },
    'words-apart': {
      title: 'Reliability Analyst',
      description: 'Analyse the reliability of every production site we run.',
    },
    java: {
      title: 'Python and Java Developer',
      description: 'Write Python services and maintain legacy Java code.',
    },
    python: {
      title: 'Python Developer',
      description: 'Write Python services for data pipelines.',
      status: 'expired',
    },
  });
  await addPostings(sites.b, runB.id, {
    'other-tenant': {
      title: 'Kubernetes Administrator',
      company: 'Globex',
      description: 'Run Kubernetes clusters for Globex.',
    },
  });
  await indexSearch();
});

afterAll(async () => {
  await stack?.close();
});

async function search(query: string) {
  const response = await stack.app.inject({ method: 'GET', url: `/postings?${query}` });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<{
    data: { id: string; external_id: string; rank: number; snippet: string; title: string }[];
    next_cursor: string | null;
  }>();
}

const externalIds = (body: { data: { external_id: string }[] }) =>
  body.data.map((posting) => posting.external_id);

describe('GET /postings?q=', () => {
  it('ranks a posting whose title holds the words above one whose description does', async () => {
    const body = await search(`q=kubernetes&site_id=${sites.a}`);
    expect(externalIds(body)).toEqual(['title-match', 'description-match']);
    expect(body.data[0]!.rank).toBeGreaterThan(body.data[1]!.rank);
    // Stemming: "engineers" finds "Engineer".
    expect(externalIds(await search(`q=engineers&site_id=${sites.a}`))).toEqual(
      expect.arrayContaining(['title-match', 'phrase']),
    );
  });

  it('cuts snippets from the description with the words marked', async () => {
    const body = await search(`q=kubernetes&site_id=${sites.a}`);
    expect(body.data[1]!.snippet).toContain('<b>Kubernetes</b>');
    expect(body.data[1]).not.toHaveProperty('description');
  });

  it('matches quoted phrases as phrases', async () => {
    const body = await search('q=%22site%20reliability%22');
    expect(externalIds(body)).toEqual(['phrase']);
    expect(externalIds(await search('q=site%20reliability')).sort()).toEqual([
      'phrase',
      'words-apart',
    ]);
  });

  it('leaves out postings with an excluded word', async () => {
    expect(externalIds(await search('q=python')).sort()).toEqual(['java', 'python']);
    expect(externalIds(await search('q=python%20-java'))).toEqual(['python']);
    expect(externalIds(await search('q=python%20-java&status=ready'))).toEqual([]);
  });

  it('combines with a site, a tenant and the other filters', async () => {
    expect(externalIds(await search('q=kubernetes')).sort()).toEqual([
      'description-match',
      'other-tenant',
      'title-match',
    ]);
    expect(externalIds(await search(`q=kubernetes&site_id=${sites.b}`))).toEqual(['other-tenant']);
    expect(externalIds(await search('q=kubernetes&tenant_id=tenant-b'))).toEqual(['other-tenant']);
    expect(externalIds(await search('q=kubernetes&tenant_id=tenant-a')).sort()).toEqual([
      'description-match',
      'title-match',
    ]);
    expect(externalIds(await search(`q=kubernetes&tenant_id=tenant-a&site_id=${sites.b}`))).toEqual(
      [],
    );
    expect(externalIds(await search('q=reliability&remote=true'))).toEqual(['phrase']);
    expect(externalIds(await search('q=kubernetes&tenant_id=nobody'))).toEqual([]);
  });

  it('pages through ranked results with its cursor', async () => {
    const first = await search('q=kubernetes&limit=2');
    expect(first.data).toHaveLength(2);
    expect(first.next_cursor).not.toBeNull();
    const second = await search(`q=kubernetes&limit=2&cursor=${first.next_cursor}`);
    expect(second.next_cursor).toBeNull();
    expect([...externalIds(first), ...externalIds(second)].sort()).toEqual([
      'description-match',
      'other-tenant',
      'title-match',
    ]);
    // A list's cursor is not a search's, nor the other way round.
    const list = await stack.app.inject({ method: 'GET', url: '/postings?limit=1' });
    const listCursor = list.json().next_cursor as string;
    const mixed = await stack.app.inject({
      method: 'GET',
      url: `/postings?q=kubernetes&cursor=${listCursor}`,
    });
    expect(mixed.statusCode).toBe(400);
    expect(mixed.json().errors[0].field).toBe('querystring.cursor');
  });

  it('answers a repeated search from memory for POSTINGS_SEARCH_CACHE_MS', async () => {
    const cached = await stack.buildApp({ POSTINGS_SEARCH_CACHE_MS: 60_000 });
    const headers = { authorization: `Bearer ${stack.adminKey}` };
    const url = `/postings?q=analyst&site_id=${sites.a}`;
    try {
      const before = await cached.inject({ method: 'GET', url, headers });
      expect(before.json().data.map((p: { title: string }) => p.title)).toEqual([
        'Reliability Analyst',
      ]);
      await stack.handle.pool.query(
        "UPDATE postings SET title = 'Reliability Lead' WHERE external_id = 'words-apart'",
      );
      await indexSearch();
      // The cached app still answers what it found; an app without the cache sees the change.
      expect((await cached.inject({ method: 'GET', url, headers })).body).toBe(before.body);
      expect((await search(`q=analyst&site_id=${sites.a}`)).data).toEqual([]);
      // Another search is not the cached one.
      expect(
        (await cached.inject({ method: 'GET', url: `${url}&limit=5`, headers })).json().data,
      ).toEqual([]);
    } finally {
      await stack.handle.pool.query(
        "UPDATE postings SET title = 'Reliability Analyst' WHERE external_id = 'words-apart'",
      );
      await indexSearch();
      await cached.close();
    }
  });

  it('finds a changed posting by its new words once the search indexer has passed', async () => {
    const pending = async () =>
      (
        await stack.handle.pool.query<{ search_pending: boolean }>(
          "SELECT search_pending FROM postings WHERE external_id = 'java'",
        )
      ).rows[0]!.search_pending;
    // The pipeline's updates that leave the text alone do not mark it.
    await stack.handle.pool.query(
      "UPDATE postings SET status = 'ready', title = title, updated_at = now() WHERE external_id = 'java'",
    );
    expect(await pending()).toBe(false);
    await stack.handle.pool.query(
      "UPDATE postings SET description_text = description_text || ' Some Scala too.' WHERE external_id = 'java'",
    );
    expect(await pending()).toBe(true);
    expect(externalIds(await search('q=scala'))).toEqual([]);
    expect(await indexPendingSearch(stack.handle.db, 100)).toBe(1);
    expect(await pending()).toBe(false);
    expect(externalIds(await search('q=scala'))).toEqual(['java']);
  });

  it('finds nothing for stop words alone, without an error', async () => {
    expect((await search('q=the%20and')).data).toEqual([]);
  });
});

describe('posting lists send summaries', () => {
  it('leaves the long texts out unless include or fields ask for them', async () => {
    const summary = await search(`site_id=${sites.a}&limit=1`);
    const [first] = summary.data as unknown as Record<string, unknown>[];
    expect(first).toMatchObject({ site_id: sites.a, status: expect.any(String) });
    expect(first).toHaveProperty('title');
    expect(first).toHaveProperty('updated_at');
    for (const long of ['description', 'description_text', 'requirements', 'provenance'])
      expect(first).not.toHaveProperty(long);

    const included = await search(`site_id=${sites.a}&limit=1&include=description`);
    expect(included.data[0]).toHaveProperty('description');
    expect(included.data[0]).toHaveProperty('title');
    expect(included.data[0]).not.toHaveProperty('description_text');

    const picked = await search(`site_id=${sites.a}&limit=1&fields=title,description_text`);
    expect(Object.keys(picked.data[0]!).sort()).toEqual(['description_text', 'id', 'title']);

    const one = await stack.app.inject({ method: 'GET', url: `/postings/${picked.data[0]!.id}` });
    expect(one.json().data).toHaveProperty('description');
    expect(one.json().data).toHaveProperty('provenance');
  });

  it('answers 400 naming the parameter for an unknown field', async () => {
    for (const [url, field] of [
      ['/postings?fields=title,salary', 'querystring.fields'],
      ['/postings?include=title', 'querystring.include'],
      ['/postings?fields=,', 'querystring.fields'],
    ] as const) {
      const response = await stack.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().errors[0].field, url).toBe(field);
    }
  });
});

describe("a run's status", () => {
  it('counts its postings by status and pages through them', async () => {
    const first = await stack.app.inject({ method: 'GET', url: `/jobs/scrape/${runId}?limit=4` });
    expect(first.statusCode, first.body).toBe(200);
    const body = first.json().data;
    expect(body.posting_counts).toEqual({
      pending: 0,
      ready: 5,
      skipped: 0,
      error: 0,
      expired: 1,
    });
    expect(body.postings).toHaveLength(4);
    expect(body.postings[0]).not.toHaveProperty('description');
    const second = await stack.app.inject({
      method: 'GET',
      url: `/jobs/scrape/${runId}?limit=4&cursor=${body.next_cursor}`,
    });
    const rest = second.json().data;
    expect(rest.postings).toHaveLength(2);
    expect(rest.next_cursor).toBeNull();
    const ids = [...body.postings, ...rest.postings].map((posting: { id: string }) => posting.id);
    expect(new Set(ids).size).toBe(6);

    const expired = await stack.app.inject({
      method: 'GET',
      url: `/jobs/scrape/${runId}?status=expired&fields=external_id`,
    });
    expect(expired.json().data.postings).toEqual([
      { id: expect.any(String), external_id: 'python' },
    ]);
    const bad = await stack.app.inject({
      method: 'GET',
      url: `/jobs/scrape/${runId}?cursor=bm90LWEtY3Vyc29y`,
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].field).toBe('querystring.cursor');
  });
});
