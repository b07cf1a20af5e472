import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createApiTestStack, type ApiTestStack } from '../test-stack.test-support.js';

let stack: ApiTestStack;
let app: FastifyInstance;
let document: any;

beforeAll(async () => {
  stack = await createApiTestStack('openapi');
  app = stack.app;
  const answer = await app.inject({ method: 'GET', url: '/docs/json' });
  expect(answer.statusCode).toBe(200);
  document = answer.json();
});

afterAll(async () => {
  await stack?.close();
});

const operations = () =>
  Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ route: `${method} ${path}`, operation })),
  );

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with the API key schemes required everywhere but /health', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.components.securitySchemes).toEqual({
      bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      basicAuth: expect.objectContaining({ type: 'http', scheme: 'basic' }),
    });
    expect(document.security).toEqual([{ bearerAuth: [] }, { basicAuth: [] }]);
    expect(document.paths['/health'].get.security).toEqual([]);
    const open = operations().filter(({ operation }) => operation.security !== undefined);
    expect(open.map(({ route }) => route)).toEqual(['get /health']);
  });

  it('describes a success response with its schema for every route', () => {
    const routes = operations();
    expect(routes.length).toBeGreaterThanOrEqual(29);
    for (const { route, operation } of routes) {
      const successes = Object.entries(operation.responses as Record<string, any>).filter(
        ([status]) => status.startsWith('2'),
      );
      expect(successes.length, route).toBeGreaterThan(0);
      for (const [status, response] of successes) {
        if (status === '204') continue;
        const [media] = Object.values<{ schema?: unknown }>(response.content ?? {});
        expect(media?.schema, `${route} ${status}`).toBeDefined();
      }
    }
  });

  it('describes errors as problem details, with the statuses every keyed route can answer', () => {
    for (const { route, operation } of operations()) {
      if (route === 'get /health') continue;
      // The health probes answer 503 with their own report.
      const statuses = ['401', '403', '429', '500', ...(route.endsWith('/health') ? [] : ['503'])];
      for (const status of statuses) {
        const response = operation.responses[status];
        expect(
          response?.content?.['application/problem+json']?.schema,
          `${route} ${status}`,
        ).toEqual({ $ref: '#/components/schemas/Problem' });
      }
    }
    expect(document.components.schemas.Problem).toMatchObject({
      type: 'object',
      required: ['type', 'title', 'status', 'detail', 'instance'],
      properties: { errors: { type: 'array' } },
    });
    const cancel = document.paths['/jobs/scrape/{runId}/cancel'].post.responses;
    expect(Object.keys(cancel)).toEqual(
      expect.arrayContaining(['200', '400', '404', '409', '401', '403']),
    );
  });

  it('names the shared views as components', () => {
    expect(Object.keys(document.components.schemas).sort()).toEqual(
      [
        'ExtractionBackfill',
        'Posting',
        'PostingChange',
        'PostingCounts',
        'PostingFieldChange',
        'PostingListItem',
        'PostingVersion',
        'Problem',
        'Run',
        'Site',
        'SiteAlert',
        'SiteDetail',
        'SiteTemplate',
        'WebhookDelivery',
        'WebhookEndpoint',
        'WebhookSecret',
        'Worker',
      ].sort(),
    );
    expect(
      document.paths['/sites/{site}/runs'].get.responses['200'].content['application/json'].schema
        .properties.data.items,
    ).toEqual({ $ref: '#/components/schemas/Run' });
  });
});

describe('answers checked against the documented schemas', () => {
  it('pass a problem’s extension members through, and its validation errors', async () => {
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
    const started = await app.inject({
      method: 'POST',
      url: '/jobs/scrape',
      payload: { site_name: 'acme' },
    });
    expect(started.statusCode).toBe(202);
    const runId = started.json().data.run_id as string;

    const run = await app.inject({ method: 'GET', url: `/jobs/scrape/${runId}` });
    expect(run.statusCode).toBe(200);
    expect(run.json().data).toMatchObject({ run_id: runId, status: 'queued', postings: [] });

    const cancelled = await app.inject({ method: 'POST', url: `/jobs/scrape/${runId}/cancel` });
    expect(cancelled.statusCode).toBe(200);
    const again = await app.inject({ method: 'POST', url: `/jobs/scrape/${runId}/cancel` });
    expect(again.statusCode).toBe(409);
    expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(again.json()).toMatchObject({
      title: 'Run Already Ended',
      status: 409,
      run_id: runId,
      run_status: 'cancelled',
    });

    const invalid = await app.inject({
      method: 'GET',
      url: '/sites/acme/runs?limit=0',
    });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().errors).toEqual([
      { field: 'querystring.limit', message: expect.any(String) },
    ]);
  });
});
