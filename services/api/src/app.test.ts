import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Queues } from '@gleaner/queue';
import { Agent, get, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApiTestStack, type ApiTestStack } from './test-stack.test-support.js';

let stack: ApiTestStack;
let queues: Queues;
let app: FastifyInstance;

beforeAll(async () => {
  stack = await createApiTestStack('api');
  ({ queues, app } = stack);
  const site = await app.inject({
    method: 'POST',
    url: '/sites',
    payload: {
      site_name: 'acme',
      kind: 'career-site',
      config: { url: 'https://acme.example', sitemapUrl: 'https://acme.example/sitemap.xml' },
    },
  });
  expect(site.statusCode).toBe(201);
});

afterAll(async () => {
  await stack?.close();
});

function expectProblem(
  response: { statusCode: number; headers: Record<string, unknown>; json(): any },
  status: number,
  field?: string,
) {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = response.json();
  expect(body).toMatchObject({
    status,
    title: expect.any(String),
    detail: expect.any(String),
    type: expect.any(String),
  });
  if (field) expect(body.errors.map((e: { field: string }) => e.field)).toContain(field);
  return body;
}

describe('POST /jobs/scrape rejects bad input with problem bodies', () => {
  it.each([
    ['unknown site', { site_name: 'nope' }, 404, 'body.site_name'],
    ['unknown site id', { site_id: '00000000-0000-4000-8000-000000000000' }, 404, 'body.site_id'],
    ['missing site', {}, 400, 'body.site_name'],
    ['wrong type', { site_name: 42 }, 400, 'body.site_name'],
    ['bad results_wanted', { site_name: 'acme', results_wanted: -3 }, 400, 'body.results_wanted'],
    [
      'fractional results_wanted',
      { site_name: 'acme', results_wanted: 2.5 },
      400,
      'body.results_wanted',
    ],
    ['unknown field', { site_name: 'acme', surprise: true }, 400, 'body'],
    ['array body', [1, 2], 400, undefined],
    ['bad site_id', { site_id: 'not-a-uuid' }, 400, 'body.site_id'],
  ])('%s', async (_name, payload, status, field) => {
    const response = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      payload: payload as object,
    });
    expectProblem(response, status, field);
  });

  it('malformed JSON', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      headers: { 'content-type': 'application/json' },
      payload: '{"site_name": "acme",',
    });
    expectProblem(response, 400, 'body');
  });

  it('oversize body', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ site_name: 'a'.repeat(10_000) }),
    });
    expectProblem(response, 413, 'body');
  });

  it('unsupported media type', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      headers: { 'content-type': 'application/xml' },
      payload: '<a/>',
    });
    expectProblem(response, 415);
  });

  it('bad mode and too many sync results', async () => {
    expectProblem(
      await app.inject({
        method: 'POST',
        url: '/jobs/scrape?mode=fast',
        payload: { site_name: 'acme' },
      }),
      400,
      'querystring.mode',
    );
    expectProblem(
      await app.inject({
        method: 'POST',
        url: '/jobs/scrape?mode=sync',
        payload: { site_name: 'acme', results_wanted: 26 },
      }),
      400,
      'body.results_wanted',
    );
  });

  it('unknown run and malformed run id', async () => {
    expectProblem(
      await app.inject({ method: 'GET', url: '/jobs/scrape/manual_000000000000' }),
      404,
      'params.runId',
    );
    expectProblem(await app.inject({ method: 'GET', url: '/jobs/scrape/bad%20id' }), 400);
  });
});

describe('shutdown', () => {
  it('closes while a keep-alive request is in flight, telling its client to close the connection', async () => {
    const closing = await stack.buildApp();
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    closing.get('/slow', async () => {
      entered();
      await finished;
      return { ok: true };
    });
    await closing.listen({ host: '127.0.0.1', port: 0 });
    const { port } = closing.server.address() as AddressInfo;
    const agent = new Agent({ keepAlive: true });
    try {
      const response = new Promise<IncomingMessage>((resolve, reject) =>
        get(
          `http://127.0.0.1:${port}/slow`,
          { agent, headers: { authorization: `Bearer ${stack.adminKey}` } },
          resolve,
        ).on('error', reject),
      );
      await inHandler;
      let closed = false;
      const closeDone = closing.close().then(() => (closed = true));
      // The server has stopped listening (server.close() ran) before the response goes out.
      while (closing.server.listening) await new Promise((resolve) => setTimeout(resolve, 10));
      finish();
      const answer = await response;
      let body = '';
      for await (const chunk of answer) body += String(chunk);
      expect(answer.statusCode).toBe(200);
      expect(JSON.parse(body)).toEqual({ ok: true });
      expect(answer.headers.connection).toBe('close');
      // Without the header the socket stays open and close() waits for the keep-alive timeout.
      await Promise.race([closeDone, new Promise((resolve) => setTimeout(resolve, 5_000))]);
      expect(closed).toBe(true);
    } finally {
      agent.destroy();
      await closing.close();
    }
  });
});

describe('the rest of the API', () => {
  it('queues a run, refuses a second active one, and reports it', async () => {
    const first = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      payload: { site_name: 'acme' },
    });
    expect(first.statusCode).toBe(202);
    const data = first.json().data;
    expect(data).toMatchObject({
      status: 'queued',
      execution_mode: 'async',
      run_id: expect.stringMatching(/^manual_/),
    });
    expect(data.status_url).toMatch(new RegExp(`/jobs/scrape/${data.run_id}$`));
    const job = await queues.scrape.getJob(data.task_id);
    expect(job?.name).toBe('scrape.list-postings');

    const second = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      payload: { site_name: 'acme' },
    });
    expect(expectProblem(second, 409).run_id).toBe(data.run_id);

    const status = await app.inject({ method: 'GET', url: `/jobs/scrape/${data.run_id}` });
    expect(status.json().data).toMatchObject({
      run_id: data.run_id,
      status: 'queued',
      site_name: 'acme',
      postings: [],
    });
  });

  it('lists site kinds with their config schema, and sites', async () => {
    const response = await app.inject({ method: 'GET', url: '/jobs/sites' });
    expect(response.statusCode).toBe(200);
    const { kinds, sites } = response.json().data;
    expect(kinds[0]).toMatchObject({ kind: 'career-site', configSchema: { type: 'object' } });
    expect(sites.map((s: { site_name: string }) => s.site_name)).toEqual(['acme']);
  });

  it.each([
    'http://127.0.0.1/jobs',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://[::ffff:7f00:1]/',
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.5/',
    'http://localhost:8000/',
    'http://example.com@127.0.0.1/',
    'http://example.com:25/',
  ])('refuses a site whose URL the crawler must never fetch: %s', async (url) => {
    const response = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: {
        site_name: 'hostile',
        kind: 'career-site',
        config: { url: 'https://ok.example', sitemapUrl: url },
      },
    });
    expectProblem(response, 400, 'body.config.sitemapUrl');
  });

  it('validates a site config by its kind', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: { site_name: 'bad', kind: 'career-site', config: { url: 'ftp://x' } },
    });
    expectProblem(response, 400, 'body.config.url');
    expectProblem(
      await app.inject({
        method: 'POST',
        url: '/sites',
        payload: {
          site_name: 'acme',
          kind: 'career-site',
          config: { url: 'https://a.example', listingUrl: 'https://a.example/jobs' },
        },
      }),
      409,
      'body.site_name',
    );
  });

  it('reports health and queue status', async () => {
    const health = await app.inject({ method: 'GET', url: '/health' });
    expect(health.json()).toMatchObject({
      status: 'healthy',
      checks: { redis: { ok: true }, postgres: { ok: true } },
    });
    const jobsHealth = await app.inject({ method: 'GET', url: '/jobs/health' });
    expect(jobsHealth.statusCode).toBe(200);
    const queueStatus = await app.inject({ method: 'GET', url: '/jobs/queue/status' });
    expect(Object.keys(queueStatus.json().data).sort()).toEqual([
      'backfill',
      'crawl',
      'dead-letter',
      'documents',
      'extract',
      'llm-extract',
      'llm-pages',
      'llm-sync',
      'scheduler',
      'scrape',
      'webhooks',
    ]);
  });

  it('queues a scheduling pass for the first scheduler replica when none is running (202)', async () => {
    const response = await app.inject({ method: 'POST', url: '/scheduler/run' });
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({
      status: 'success',
      data: {
        request_id: expect.any(String),
        status: 'queued',
        status_url: '/scheduler/status',
        message: 'no scheduler replica has reported recently: the pass runs when one starts',
      },
    });
    const queued = await queues.scheduler.getJobs(['waiting']);
    expect(queued.map((job) => job.data.requestId)).toContain(response.json().data.request_id);
    const status = await app.inject({ method: 'GET', url: '/scheduler/status' });
    expect(status.json()).toMatchObject({ status: 'success', data: { replicas: [] } });
  });

  it('guards Bull Board with an API key (Basic, the key as password) and shows every queue', async () => {
    expectProblem(
      await app.inject({ method: 'GET', url: '/admin/queues', headers: { authorization: '' } }),
      401,
    );
    const auth = `Basic ${Buffer.from(`admin:${stack.adminKey}`).toString('base64')}`;
    const page = await app.inject({
      method: 'GET',
      url: '/admin/queues',
      headers: { authorization: auth },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<html');
    const api = await app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: { authorization: auth },
    });
    expect(api.statusCode).toBe(200);
    expect(
      api
        .json()
        .queues.map((q: { name: string }) => q.name)
        .sort(),
    ).toEqual([
      'backfill',
      'crawl',
      'dead-letter',
      'documents',
      'extract',
      'llm-extract',
      'llm-pages',
      'llm-sync',
      'scheduler',
      'scrape',
      'webhooks',
    ]);
  });

  it('answers unknown routes with a problem', async () => {
    expectProblem(await app.inject({ method: 'GET', url: '/nope' }), 404);
  });
});
