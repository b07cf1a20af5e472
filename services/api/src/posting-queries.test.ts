import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { indexPendingSearch } from '@gleaner/db';
import { createApiTestStack, type ApiTestStack } from './test-stack.test-support.js';

/**
 * Every query the API sends for its posting lists, searches and run pages runs under EXPLAIN on
 * a table of 100,000 postings: a sequential scan of postings fails the test. At two million
 * postings such a scan takes seconds; the plans chosen here are the ones that stay in
 * milliseconds.
 */

const POSTINGS = 100_000;
const SITES = 200;

interface Recorded {
  text: string;
  values: unknown[];
}

let stack: ApiTestStack;
let recorded: Recorded[] = [];
let explainQuery: (text: string, values: unknown[]) => Promise<{ rows: unknown[] }>;

beforeAll(async () => {
  stack = await createApiTestStack('posting-queries');
  const pool = stack.handle.pool;
  const original = pool.query.bind(pool) as (...args: unknown[]) => Promise<pg.QueryResult>;
  explainQuery = (text, values) => original({ text, values });
  // Record what the app sends: drizzle and the plain-SQL repositories both go through here.
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const [first, second] = args;
    if (typeof first === 'string')
      recorded.push({ text: first, values: (second as unknown[]) ?? [] });
    else if (first && typeof first === 'object' && 'text' in first) {
      const config = first as { text: string; values?: unknown[] };
      recorded.push({ text: config.text, values: config.values ?? (second as unknown[]) ?? [] });
    }
    return original(...args);
  };
  await seed(original);
}, 240_000);

afterAll(async () => {
  await stack?.close();
});

async function seed(query: (...args: unknown[]) => Promise<pg.QueryResult>) {
  await query(
    `INSERT INTO site_schedules (site_name, kind, config, tenant_id)
     SELECT 'explain-site-' || lpad(i::text, 4, '0'), 'career-site', '{"url":"https://example.test/"}'::jsonb,
            'tenant-' || (i % 20)
     FROM generate_series(1, ${SITES}) i`,
  );
  await query(
    `INSERT INTO scrape_runs (run_id, site_schedule_id, trigger, status, listing_done, listing_complete)
     SELECT 'sched_explain_' || lpad(row_number() OVER (ORDER BY site_name)::text, 4, '0'), id,
            'schedule', 'succeeded', true, true
     FROM site_schedules`,
  );
  await query(
    `WITH sites AS (
       SELECT s.id, r.id AS run_id, row_number() OVER (ORDER BY s.site_name) - 1 AS n
       FROM site_schedules s JOIN scrape_runs r ON r.site_schedule_id = s.id
     ), words AS (
       SELECT ARRAY['Software Engineer','Data Engineer','Registered Nurse','Account Executive',
                    'Product Manager','Site Reliability Engineer','Warehouse Associate',
                    'Financial Analyst','UX Designer','Customer Success Manager'] AS titles,
              ARRAY['Berlin, Germany','London, United Kingdom','Austin, TX, United States',
                    'Paris, France','Toronto, ON, Canada'] AS places,
              ARRAY['You will build reliable services with a small team.',
                    'We care for patients and families every day.',
                    'Own the roadmap and talk to customers often.',
                    'Python, SQL and Kubernetes are part of the daily work.',
                    'Travel to client sites is expected twice a month.'] AS sentences
     )
     INSERT INTO postings (site_id, run_id, external_id, url, status, title, company, location,
                           is_remote, description_text, updated_at, first_seen_at, last_seen_at)
     SELECT s.id, s.run_id, 'job-' || g, 'https://example.test/jobs/' || g,
            CASE WHEN g % 50 = 0 THEN 'error' WHEN g % 20 = 0 THEN 'expired'
                 WHEN g % 97 = 0 THEN 'pending' ELSE 'ready' END,
            w.titles[1 + g % 10], 'Company ' || s.n, w.places[1 + g % 5], g % 7 = 0,
            w.sentences[1 + g % 5] || ' ' || w.sentences[1 + (g / 5) % 5] || ' ' || w.sentences[1 + (g / 25) % 5],
            now() - g * interval '41 seconds', now() - g * interval '41 seconds', now()
     FROM generate_series(1, ${POSTINGS}) g
     JOIN sites s ON s.n = g % ${SITES}
     CROSS JOIN words w`,
  );
  // What the scheduler's search indexer does within seconds of the inserts.
  while ((await indexPendingSearch(stack.handle.db, 20_000)) > 0);
  await query('ANALYZE');
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function* nodesOf(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodesOf(child);
}

/** The request's statements that read postings, each with the scans of its plan. */
async function plansOf(url: string) {
  recorded = [];
  const response = await stack.app.inject({ method: 'GET', url });
  expect(response.statusCode, `${url}: ${response.body}`).toBe(200);
  const statements = recorded.filter(({ text }) => /\bpostings\b/i.test(text));
  expect(statements.length, url).toBeGreaterThan(0);
  const plans = [];
  for (const statement of statements) {
    const { rows } = await explainQuery(
      `EXPLAIN (FORMAT JSON) ${statement.text}`,
      statement.values,
    );
    const [
      {
        'QUERY PLAN': [plan],
      },
    ] = rows as [{ 'QUERY PLAN': [{ Plan: PlanNode }] }];
    plans.push({ text: statement.text, nodes: [...nodesOf(plan.Plan)] });
  }
  return { response, plans };
}

async function expectIndexed(url: string) {
  const { response, plans } = await plansOf(url);
  for (const { text, nodes } of plans) {
    const seqScans = nodes.filter(
      (node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'postings',
    );
    expect(seqScans, `${url} scans postings sequentially:\n${text}`).toEqual([]);
  }
  return response;
}

async function someRow(sql: string): Promise<Record<string, string>> {
  const { rows } = await explainQuery(sql, []);
  return rows[0] as Record<string, string>;
}

describe('the API reads postings through an index, at 100,000 postings', () => {
  it('lists: first page, each filter, the filters together, a deep cursor', async () => {
    const site = await someRow(
      "SELECT id, site_name, tenant_id FROM site_schedules WHERE site_name = 'explain-site-0042'",
    );
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const urls = [
      '/postings?limit=20',
      `/postings?site_id=${site.id}`,
      `/postings?site_name=${site.site_name}`,
      `/postings?tenant_id=${site.tenant_id}`,
      '/postings?status=error',
      '/postings?status=ready',
      '/postings?remote=true',
      '/postings?remote=false',
      `/postings?updated_since=${encodeURIComponent(since)}`,
      `/postings?site_id=${site.id}&status=ready&remote=true&limit=20`,
      `/postings?tenant_id=${site.tenant_id}&status=expired&remote=false`,
      `/postings?status=pending&updated_since=${encodeURIComponent(since)}`,
      '/postings?limit=20&include=description,requirements',
      '/postings?limit=5&fields=title,company,updated_at',
    ];
    for (const url of urls) await expectIndexed(url);

    // Deep in the list: a cursor 90,000 postings down.
    const deep = await someRow(
      `SELECT floor(extract(epoch from updated_at) * 1000000)::bigint::text AS micros, id
       FROM postings ORDER BY updated_at DESC, id DESC OFFSET 90000 LIMIT 1`,
    );
    const cursor = Buffer.from(`${deep.micros}_${deep.id}`).toString('base64url');
    const page = await expectIndexed(`/postings?limit=20&cursor=${cursor}`);
    expect(page.json().data).toHaveLength(20);
  });

  it('searches: common and rare words, a phrase, an exclusion, with filters', async () => {
    const site = await someRow(
      "SELECT id, tenant_id FROM site_schedules WHERE site_name = 'explain-site-0006'",
    );
    const urls = [
      '/postings?q=engineer',
      '/postings?q=nurse%20patients',
      '/postings?q=%22site%20reliability%22',
      '/postings?q=engineer%20-data',
      '/postings?q=kubernetes&status=ready&remote=true',
      `/postings?q=engineer&site_id=${site.id}`,
      `/postings?q=travel&tenant_id=${site.tenant_id}`,
    ];
    for (const url of urls) {
      const response = await expectIndexed(url);
      expect(response.json().data.length, url).toBeGreaterThan(0);
    }
  });

  it("reads one posting and a run's counts and pages through the run's postings", async () => {
    const posting = await someRow('SELECT id FROM postings LIMIT 1');
    await expectIndexed(`/postings/${posting.id}`);
    const run = await someRow("SELECT run_id FROM scrape_runs WHERE run_id = 'sched_explain_0013'");
    const first = await expectIndexed(`/jobs/scrape/${run.run_id}?limit=100`);
    const body = first.json().data;
    expect(body.posting_counts.ready).toBeGreaterThan(0);
    expect(body.postings).toHaveLength(100);
    await expectIndexed(`/jobs/scrape/${run.run_id}?limit=100&cursor=${body.next_cursor}`);
    await expectIndexed(`/jobs/scrape/${run.run_id}?status=error&limit=10`);
  });
});
