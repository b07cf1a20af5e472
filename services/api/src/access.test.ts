import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createHash } from 'node:crypto';
import { createApiKey, createRun, ensureApiKey, listAudit, revokeApiKey } from '@gleaner/db';
import { multipartForm } from '@gleaner/testing';
import type { Access } from './plugins/access.js';
import {
  careerSiteConfig,
  createApiTestStack,
  type ApiTestStack,
} from './test-stack.test-support.js';

let stack: ApiTestStack;
let app: FastifyInstance;

type Caller = 'none' | 'malformed' | 'unknown' | 'revoked' | 'tenant' | 'viewer' | 'admin';
const keys = {} as Record<Caller, string | undefined>;
const keyIds = {} as Record<Caller, string | undefined>;

/** Who each level lets in; everyone else must be turned away with 401 or 403. */
const admitted: Record<Access, readonly Caller[]> = {
  public: ['none', 'tenant', 'viewer', 'admin'],
  read: ['viewer', 'admin'],
  'tenant-read': ['tenant', 'viewer', 'admin'],
  'tenant-write': ['tenant', 'admin'],
  admin: ['admin'],
};

const SITE_CONFIG = careerSiteConfig;
const TENANT = 'acme-people';

function authorization(caller: Caller): Record<string, string> {
  if (caller === 'none') return { authorization: '' };
  if (caller === 'malformed') return { authorization: 'Bearer not-a-key' };
  return { authorization: `Bearer ${keys[caller]}` };
}

/** A concrete URL for a route pattern: each parameter filled with a plausible value. */
function concrete(url: string): string {
  const values: Record<string, string> = {
    site: 'acme',
    runId: 'manual_000000000000',
    id: '00000000-0000-4000-8000-000000000000',
    queueName: 'scrape',
    jobId: '1',
  };
  return url.replace(/:(\w+)/g, (_, name: string) => values[name] ?? 'x').replace(/\*/g, 'x');
}

beforeAll(async () => {
  stack = await createApiTestStack('access', { API_BODY_LIMIT_BYTES: 65_536 });
  app = stack.app;
  const { db } = stack.handle;
  keys.admin = stack.adminKey;
  const viewer = await createApiKey(db, {
    name: 'viewer',
    scope: { role: 'viewer', tenantId: null },
  });
  const tenant = await createApiKey(db, {
    name: 'tenant',
    scope: { role: 'tenant', tenantId: TENANT },
  });
  keys.viewer = viewer.key;
  keyIds.viewer = viewer.row.id;
  keys.tenant = tenant.key;
  keyIds.tenant = tenant.row.id;
  keyIds.admin = (
    await ensureApiKey(db, {
      name: 'test admin',
      scope: { role: 'admin', tenantId: null },
      key: stack.adminKey,
    })
  ).id;
  const revoked = await createApiKey(db, {
    name: 'gone',
    scope: { role: 'admin', tenantId: null },
  });
  await revokeApiKey(db, revoked.row.id);
  keys.revoked = revoked.key;
  keys.unknown = `glk_deadbeef_${'A'.repeat(43)}`;
});

afterAll(async () => {
  await stack?.close();
});

describe('the authorization matrix', () => {
  it(
    'lets no caller through a route its key does not open, and audits each mutating request once: every route, Bull Board included',
    { timeout: 180_000 },
    async () => {
      await app.ready();
      const routes = app.routeAccess().filter((route) => route.method !== 'OPTIONS');
      // Bull Board's page, its assets and its actions are among them.
      expect(
        routes.some(
          (route) => route.url.startsWith('/admin/queues/api/') && route.method === 'PUT',
        ),
      ).toBe(true);
      expect(routes.length).toBeGreaterThan(40);
      // Every route that changes something has an audit name of its own.
      const unnamed = routes.filter(
        (route) =>
          !['GET', 'HEAD'].includes(route.method) && !/^[a-z_]+(\.[a-z_-]+)+$/.test(route.audit),
      );
      expect(unnamed.map((route) => `${route.method} ${route.url}: ${route.audit}`)).toEqual([]);
      const breaches: string[] = [];
      const callers: Caller[] = [
        'none',
        'malformed',
        'unknown',
        'revoked',
        'tenant',
        'viewer',
        'admin',
      ];
      for (const route of routes) {
        // Keep the site the concrete URLs name: deleting it would turn later checks into 404s.
        await app.inject({
          method: 'POST',
          url: '/sites',
          payload: { site_name: 'acme', kind: 'career-site', config: SITE_CONFIG },
        });
        for (const caller of callers) {
          const hasBody = !['GET', 'HEAD', 'DELETE'].includes(route.method);
          const response = await app.inject({
            method: route.method as 'GET',
            url: concrete(route.url),
            headers: {
              ...authorization(caller),
              ...(hasBody ? { 'content-type': 'application/json' } : {}),
            },
            ...(hasBody ? { payload: '{}' } : {}),
          });
          const allowed = admitted[route.access].includes(caller);
          const where = `${route.method} ${route.url} (${route.access}) as ${caller}`;
          if (!['GET', 'HEAD'].includes(route.method)) {
            // One entry per request made with a live key, naming it; none for a request without.
            const { rows: entries } = await stack.handle.pool.query<{
              apiKeyId: string | null;
              action: string;
              statusCode: number | null;
            }>(
              'SELECT api_key_id AS "apiKeyId", action, status_code AS "statusCode" FROM audit_log WHERE request_id = $1',
              [response.headers['x-request-id']],
            );
            const keyId = keyIds[caller];
            if (keyId === undefined && entries.length > 0)
              breaches.push(`${where}: audited without a live key`);
            if (keyId !== undefined) {
              const named = entries.filter(
                (entry) =>
                  entry.apiKeyId === keyId &&
                  entry.action === route.audit &&
                  entry.statusCode === response.statusCode,
              );
              if (entries.length !== 1 || named.length !== 1)
                breaches.push(
                  `${where}: ${entries.length} audit entries, ${named.length} naming the key and ${route.audit}`,
                );
            }
          }
          if (!allowed) {
            const expected = ['none', 'malformed', 'unknown', 'revoked'].includes(caller)
              ? 401
              : 403;
            if (response.statusCode !== expected)
              breaches.push(`${where}: ${response.statusCode}, expected ${expected}`);
            else if (
              !String(response.headers['content-type']).startsWith('application/problem+json')
            )
              breaches.push(`${where}: the ${expected} is not a problem`);
          } else if (response.statusCode === 401 || response.statusCode === 403) {
            // Admitted keys are never refused by the guard (a tenant narrowed by a handler is a 403
            // naming the field; these requests name no tenant).
            if (!(caller === 'tenant' && response.json().errors !== undefined))
              breaches.push(`${where}: refused with ${response.statusCode}`);
          }
        }
      }
      expect(breaches).toEqual([]);
    },
  );

  it('refuses a cross-site form sent with the browser login, on every route that changes something', async () => {
    await app.ready();
    const routes = app
      .routeAccess()
      .filter((route) => !['GET', 'HEAD', 'OPTIONS'].includes(route.method));
    const basic = `Basic ${Buffer.from(`operator:${keys.admin}`).toString('base64')}`;
    const breaches: string[] = [];
    for (const route of routes) {
      for (const from of [
        { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
        // A browser that sends no Fetch Metadata; a sandboxed page's opaque origin.
        { origin: 'https://evil.example' },
        { origin: 'null' },
      ]) {
        const response = await app.inject({
          method: route.method as 'POST',
          url: concrete(route.url),
          headers: {
            authorization: basic,
            'content-type': 'application/x-www-form-urlencoded',
            ...from,
          },
          payload: 'ids=all',
        });
        if (response.statusCode !== 403 || response.json().title !== 'Cross-Site Request Refused')
          breaches.push(`${route.method} ${route.url} from ${from.origin}: ${response.statusCode}`);
      }
    }
    expect(breaches).toEqual([]);
  });

  it("lets the browser login act from the API's own pages, and a Bearer key from anywhere", async () => {
    const basic = `Basic ${Buffer.from(`operator:${keys.admin}`).toString('base64')}`;
    // Bull Board's own fetch: same origin, no body.
    const board = await app.inject({
      method: 'PUT',
      url: '/admin/queues/api/queues/documents/pause',
      headers: {
        authorization: basic,
        origin: 'http://localhost:80',
        'sec-fetch-site': 'same-origin',
      },
    });
    expect(board.statusCode).toBe(200);
    const resumed = await app.inject({
      method: 'PUT',
      url: '/admin/queues/api/queues/documents/resume',
      headers: { authorization: basic, origin: 'http://localhost:80' },
    });
    expect(resumed.statusCode).toBe(200);
    const bearer = await app.inject({
      method: 'POST',
      url: '/admin/documents/resume',
      headers: { origin: 'https://console.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(bearer.statusCode).toBe(200);
    const listed = await stack.buildApp({ API_CORS_ORIGINS: ['https://console.example'] });
    try {
      const fromConsole = await listed.inject({
        method: 'POST',
        url: '/admin/documents/resume',
        headers: { authorization: basic, origin: 'https://console.example' },
      });
      expect(fromConsole.statusCode).toBe(200);
    } finally {
      await listed.close();
    }
  });

  it('takes only JSON bodies on JSON routes, and forms on the upload routes too', async () => {
    for (const [url, type, payload] of [
      ['/admin/documents/retry', 'text/plain', '{"ids":[]}'],
      ['/scheduler/run', 'application/x-www-form-urlencoded', 'force=1'],
      ['/admin/documents/pause', 'multipart/form-data; boundary=x', '--x--\r\n'],
    ] as const) {
      const response = await app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': type },
        payload,
      });
      expect(response.statusCode, `${url} ${type}`).toBe(415);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json().errors[0].field).toBe('headers.content-type');
    }
    const form = multipartForm({ tenant_id: 'form-uploads', kind: 'other' }, [
      { name: 'a.txt', type: 'text/plain', bytes: Buffer.from('a form upload is fine') },
    ]);
    const upload = await app.inject({
      method: 'POST',
      url: '/documents',
      headers: { 'content-type': form.contentType },
      payload: form.payload,
    });
    expect(upload.statusCode).toBe(202);
  });

  it('answers a missing key with a challenge a browser can answer', async () => {
    const response = await app.inject({
      method: 'GET',
      url: '/sites',
      headers: authorization('none'),
    });
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Basic realm="gleaner", charset="UTF-8"');
    expect(response.json()).toMatchObject({ status: 401, title: 'Unauthorized' });
  });

  it('takes the key as the password of HTTP Basic, whatever the user name', async () => {
    const basic = `Basic ${Buffer.from(`anyone:${keys.viewer}`).toString('base64')}`;
    const response = await app.inject({
      method: 'GET',
      url: '/sites',
      headers: { authorization: basic },
    });
    expect(response.statusCode).toBe(200);
  });

  it('keeps /health open and every other route closed to anonymous callers', async () => {
    expect(
      (await app.inject({ method: 'GET', url: '/health', headers: authorization('none') }))
        .statusCode,
    ).not.toBe(401);
    const anonymousDelete = await app.inject({
      method: 'DELETE',
      url: '/sites/acme',
      headers: authorization('none'),
    });
    expect(anonymousDelete.statusCode).toBe(401);
    expect(
      (await app.inject({ method: 'GET', url: '/docs/json', headers: authorization('none') }))
        .statusCode,
    ).toBe(401);
    expect(
      (await app.inject({ method: 'GET', url: '/docs/json', headers: authorization('tenant') }))
        .statusCode,
    ).toBe(200);
  });
});

describe('tenant keys', () => {
  const asTenant = { authorization: `Bearer ${'' /* set below */}` };
  beforeAll(() => {
    asTenant.authorization = `Bearer ${keys.tenant}`;
  });

  it("store and read their own tenant's documents only", async () => {
    const own = await app.inject({
      method: 'POST',
      url: '/documents',
      headers: asTenant,
      payload: { tenant_id: TENANT, kind: 'resume', text: 'Kubernetes operator, ten years' },
    });
    expect(own.statusCode).toBe(202);
    const other = await app.inject({
      method: 'POST',
      url: '/documents',
      payload: { tenant_id: 'someone-else', kind: 'resume', text: 'Not yours to see' },
    });
    expect(other.statusCode).toBe(202);

    const foreignUpload = await app.inject({
      method: 'POST',
      url: '/documents',
      headers: asTenant,
      payload: { tenant_id: 'someone-else', kind: 'resume', text: 'planted' },
    });
    expect(foreignUpload.statusCode).toBe(403);
    expect(foreignUpload.json().errors).toEqual([
      { field: 'body.tenant_id', message: `must be ${TENANT} for this key` },
    ]);
    const foreignBatch = await app.inject({
      method: 'POST',
      url: '/documents/batch',
      headers: asTenant,
      payload: [
        { tenant_id: TENANT, kind: 'other', text: 'fine' },
        { tenant_id: 'someone-else', kind: 'other', text: 'planted' },
      ],
    });
    expect(foreignBatch.statusCode).toBe(403);
    expect(foreignBatch.json().errors[0].field).toBe('body.1.tenant_id');
    const form = multipartForm({ tenant_id: 'someone-else', kind: 'other' }, [
      { name: 'p.txt', type: 'text/plain', bytes: Buffer.from('planted by form') },
    ]);
    const foreignForm = await app.inject({
      method: 'POST',
      url: '/documents/batch',
      headers: { ...asTenant, 'content-type': form.contentType },
      payload: form.payload,
    });
    expect(foreignForm.statusCode).toBe(403);
    expect(foreignForm.json().errors[0].field).toBe('body.tenant_id');

    expect(
      (await app.inject({ method: 'GET', url: `/documents/${own.json().id}`, headers: asTenant }))
        .statusCode,
    ).toBe(200);
    expect(
      (await app.inject({ method: 'GET', url: `/documents/${other.json().id}`, headers: asTenant }))
        .statusCode,
    ).toBe(404);
    expect(
      (
        await app.inject({
          method: 'GET',
          url: `/documents/${other.json().id}/text`,
          headers: asTenant,
        })
      ).statusCode,
    ).toBe(404);
    expect(
      (
        await app.inject({
          method: 'GET',
          url: `/documents?tenant_id=${TENANT}`,
          headers: asTenant,
        })
      ).json().data,
    ).toHaveLength(1);
    const foreignList = await app.inject({
      method: 'GET',
      url: '/documents?tenant_id=someone-else',
      headers: asTenant,
    });
    expect(foreignList.statusCode).toBe(403);
    expect(foreignList.json().errors[0].field).toBe('querystring.tenant_id');
    expect(
      (
        await app.inject({
          method: 'GET',
          url: '/documents/search?tenant_id=someone-else&q=yours',
          headers: asTenant,
        })
      ).statusCode,
    ).toBe(403);
    expect(
      (
        await app.inject({
          method: 'GET',
          url: `/admin/extraction/status?tenant_id=${TENANT}`,
          headers: asTenant,
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await app.inject({
          method: 'GET',
          url: '/admin/extraction/status?tenant_id=someone-else',
          headers: asTenant,
        })
      ).statusCode,
    ).toBe(403);
  });

  it("see the runs of their tenant's sites, and no other run", async () => {
    const { db } = stack.handle;
    const ownSite = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: {
        site_name: 'tenant-owned',
        kind: 'career-site',
        config: SITE_CONFIG,
        tenant_id: TENANT,
      },
    });
    expect(ownSite.json()).toMatchObject({ data: { tenant_id: TENANT } });
    const otherSite = await app.inject({
      method: 'POST',
      url: '/sites',
      payload: { site_name: 'operator-owned', kind: 'career-site', config: SITE_CONFIG },
    });
    const ownRun = await createRun(db, { siteId: ownSite.json().data.id, trigger: 'manual' });
    const otherRun = await createRun(db, { siteId: otherSite.json().data.id, trigger: 'manual' });
    expect(
      (await app.inject({ method: 'GET', url: `/jobs/scrape/${ownRun.runId}`, headers: asTenant }))
        .statusCode,
    ).toBe(200);
    expect(
      (
        await app.inject({
          method: 'GET',
          url: `/jobs/scrape/${otherRun.runId}`,
          headers: asTenant,
        })
      ).statusCode,
    ).toBe(404);
    // An operator's key sees both.
    expect(
      (await app.inject({ method: 'GET', url: `/jobs/scrape/${otherRun.runId}` })).statusCode,
    ).toBe(200);
  });
});

describe('keys', () => {
  it('are created once with their secret, listed without it, and stop working when revoked', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/admin/keys',
      payload: { name: 'ci', scope: 'viewer' },
    });
    expect(created.statusCode).toBe(201);
    const { key, id, prefix } = created.json();
    expect(key).toMatch(new RegExp(`^glk_${prefix}_[A-Za-z0-9_-]{43}$`));
    const listed = await app.inject({ method: 'GET', url: '/admin/keys' });
    expect(listed.body).not.toContain(key.slice(13));
    expect(listed.json().items).toContainEqual(
      expect.objectContaining({ id, name: 'ci', scope: 'viewer' }),
    );

    const headers = { authorization: `Bearer ${key}` };
    expect((await app.inject({ method: 'GET', url: '/sites', headers })).statusCode).toBe(200);
    expect((await app.inject({ method: 'DELETE', url: `/admin/keys/${prefix}` })).statusCode).toBe(
      200,
    );
    expect((await app.inject({ method: 'GET', url: '/sites', headers })).statusCode).toBe(401);

    const listedAudit = await app.inject({ method: 'GET', url: '/admin/audit?action=keys.create' });
    expect(listedAudit.json().items).toContainEqual(
      expect.objectContaining({ action: 'keys.create', selector: { id, prefix }, affected: 1 }),
    );
    const audit = await listAudit(stack.handle.db, { action: 'keys.revoke' });
    expect(audit[0]).toMatchObject({ selector: { id, prefix }, affected: 1 });
    expect(audit[0]!.actor).toMatch(/\(test admin\)$/);
  });

  it('are refused by every API process as soon as one revokes them', async () => {
    const other = await stack.buildApp();
    try {
      const { key, row } = await createApiKey(stack.handle.db, {
        name: 'short-lived',
        scope: { role: 'viewer', tenantId: null },
      });
      const headers = { authorization: `Bearer ${key}` };
      // The other process has the key in its cache (good for 10 s).
      expect((await other.inject({ method: 'GET', url: '/sites', headers })).statusCode).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 200)); // its channel subscribed
      expect(
        (await app.inject({ method: 'DELETE', url: `/admin/keys/${row.id}` })).statusCode,
      ).toBe(200);
      const revokedAt = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - revokedAt < 5_000) {
        status = (await other.inject({ method: 'GET', url: '/sites', headers })).statusCode;
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(status).toBe(401);
      expect(Date.now() - revokedAt).toBeLessThan(1_000);
    } finally {
      await other.close();
    }
  });

  it('have their last use stamped in batches, and at the latest when the API closes', async () => {
    const other = await stack.buildApp();
    const { key, row } = await createApiKey(stack.handle.db, {
      name: 'stamped',
      scope: { role: 'viewer', tenantId: null },
    });
    for (let i = 0; i < 3; i++)
      await other.inject({
        method: 'GET',
        url: '/sites',
        headers: { authorization: `Bearer ${key}` },
      });
    await other.close();
    const listed = await app.inject({ method: 'GET', url: '/admin/keys' });
    const stamped = listed.json().items.find((item: { id: string }) => item.id === row.id);
    expect(stamped.last_used_at).not.toBeNull();
  });

  it("name an operator's key by its hash, never by its first characters", async () => {
    const secret = 'operator-chosen-secret-of-forty-characters';
    const row = await ensureApiKey(stack.handle.db, {
      name: 'ADMIN_API_KEY',
      scope: { role: 'admin', tenantId: null },
      key: secret,
    });
    expect(row.prefix).toBe(createHash('sha256').update(secret).digest('hex').slice(0, 8));
    expect(row.prefix).not.toBe(secret.slice(0, 8));
    const headers = { authorization: `Bearer ${secret}` };
    expect((await app.inject({ method: 'GET', url: '/admin/keys', headers })).statusCode).toBe(200);
  });

  it('are in the audit log for everything they change, filtered by key, action and target', async () => {
    const { key, row } = await createApiKey(stack.handle.db, {
      name: 'auditor',
      scope: { role: 'admin', tenantId: null },
    });
    const headers = { authorization: `Bearer ${key}` };
    await app.inject({
      method: 'POST',
      url: '/sites',
      headers,
      payload: { site_name: 'audited', kind: 'career-site', config: SITE_CONFIG },
    });
    const deleted = await app.inject({ method: 'DELETE', url: '/sites/audited', headers });
    expect(deleted.statusCode).toBe(204);
    const missing = await app.inject({ method: 'DELETE', url: '/sites/audited', headers });
    expect(missing.statusCode).toBe(404);
    const page = await app.inject({
      method: 'GET',
      url: `/admin/audit?actor=${row.prefix}&target=audited`,
    });
    expect(page.statusCode).toBe(200);
    expect(page.json().items).toEqual([
      expect.objectContaining({
        action: 'sites.delete',
        target: 'audited',
        status_code: 404,
        api_key_id: row.id,
        actor: `${row.prefix} (auditor)`,
        request_id: missing.headers['x-request-id'],
      }),
      expect.objectContaining({ action: 'sites.delete', status_code: 204 }),
      expect.objectContaining({ action: 'sites.create', target: 'audited', status_code: 201 }),
    ]);
    const [newest] = page.json().items;
    const older = await app.inject({
      method: 'GET',
      url: `/admin/audit?actor=${row.id}&action=sites.delete&before=${newest.id}`,
    });
    expect(older.json().items).toEqual([
      expect.objectContaining({ action: 'sites.delete', status_code: 204 }),
    ]);
  });

  it('refuse a scope that is not admin, viewer or tenant:<id>, naming the field', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/admin/keys',
      payload: { name: 'x', scope: 'root' },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toEqual([
      { field: 'body.scope', message: 'must be admin, viewer or tenant:<id>' },
    ]);
  });
});

describe('the edges of the API', () => {
  it('rate-limits each key across replicas, answering 429 with Retry-After', async () => {
    const limited = await stack.buildApp({ API_RATE_LIMIT_PER_MINUTE: 3 });
    try {
      const { key } = await createApiKey(stack.handle.db, {
        name: 'busy',
        scope: { role: 'viewer', tenantId: null },
      });
      const headers = { authorization: `Bearer ${key}` };
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++)
        statuses.push((await limited.inject({ method: 'GET', url: '/sites', headers })).statusCode);
      expect(statuses).toEqual([200, 200, 200, 429]);
      // Another replica shares the count (it is kept in Redis).
      const replica = await stack.buildApp({ API_RATE_LIMIT_PER_MINUTE: 3 });
      try {
        const fifth = await replica.inject({ method: 'GET', url: '/sites', headers });
        expect(fifth.statusCode).toBe(429);
        expect(Number(fifth.headers['retry-after'])).toBeGreaterThan(0);
        expect(fifth.headers['content-type']).toMatch(/^application\/problem\+json/);
      } finally {
        await replica.close();
      }
      // Other keys have budgets of their own.
      const calm = await createApiKey(stack.handle.db, {
        name: 'calm',
        scope: { role: 'viewer', tenantId: null },
      });
      const calmHeaders = { authorization: `Bearer ${calm.key}` };
      expect(
        (await limited.inject({ method: 'GET', url: '/sites', headers: calmHeaders })).statusCode,
      ).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('caps the uploads one key has in flight, answering one more 429 with Retry-After', async () => {
    const capped = await stack.buildApp({ API_UPLOADS_PER_KEY: 1 });
    try {
      const form = multipartForm({ tenant_id: 'form-uploads', kind: 'other' }, [
        { name: 'slow.txt', type: 'text/plain', bytes: Buffer.from('arrives slowly, '.repeat(64)) },
      ]);
      const headers = { authorization: `Bearer ${keys.admin}`, 'content-type': form.contentType };
      const body = new PassThrough();
      const slow = capped.inject({ method: 'POST', url: '/documents', headers, payload: body });
      body.write(form.payload.subarray(0, 100));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const second = await capped.inject({
        method: 'POST',
        url: '/documents',
        headers,
        payload: form.payload,
      });
      expect(second.statusCode).toBe(429);
      expect(second.headers['retry-after']).toBe('1');
      expect(second.json().title).toBe('Too Many Uploads');
      body.end(form.payload.subarray(100));
      expect((await slow).statusCode).toBe(202);
      // The slot is free again.
      const third = await capped.inject({
        method: 'POST',
        url: '/documents',
        headers,
        payload: form.payload,
      });
      expect(third.statusCode).toBe(202);
    } finally {
      await capped.close();
    }
  });

  it('gives the docs and Bull Board a strict content security policy', async () => {
    for (const url of ['/docs/', '/admin/queues']) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(200);
      const policy = String(response.headers['content-security-policy']);
      expect(policy).toContain("default-src 'none'");
      expect(policy).toContain("script-src 'self'");
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).not.toMatch(/script-src[^;]*unsafe/);
    }
  });

  it('sends security headers and no CORS permission unless origins are configured', async () => {
    const response = await app.inject({
      method: 'GET',
      url: '/sites',
      headers: { origin: 'https://evil.example' },
    });
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
    const open = await stack.buildApp({ API_CORS_ORIGINS: ['https://console.example'] });
    try {
      const allowed = await open.inject({
        method: 'OPTIONS',
        url: '/sites',
        headers: { origin: 'https://console.example', 'access-control-request-method': 'GET' },
      });
      expect(allowed.headers['access-control-allow-origin']).toBe('https://console.example');
    } finally {
      await open.close();
    }
  });
});
