import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createApiKey, type DbHandle } from '@gleaner/db';
import { createApiTestStack, type ApiTestStack } from './test-stack.test-support.js';

let stack: ApiTestStack;
let handle: DbHandle;
let app: FastifyInstance;
let tenantAuth: string;
let otherTenantAuth: string;
let viewerAuth: string;

beforeAll(async () => {
  stack = await createApiTestStack('webhooks-api');
  ({ handle, app } = stack);
  const key = async (scope: Parameters<typeof createApiKey>[1]['scope']) =>
    `Bearer ${(await createApiKey(handle.db, { name: 'webhooks', scope })).key}`;
  tenantAuth = await key({ role: 'tenant', tenantId: 'acme' });
  otherTenantAuth = await key({ role: 'tenant', tenantId: 'globex' });
  viewerAuth = await key({ role: 'viewer', tenantId: null });
});

afterAll(async () => {
  await stack?.close();
});

// A reserved name (RFC 2606): registered, never contacted (no worker runs here).
const receiver = 'https://hooks.acme.example/gleaner';

async function register(
  payload: Record<string, unknown>,
  authorization?: string,
): Promise<{ id: string; secret: string; tenant_id: string | null; event_types: string[] }> {
  const created = await app.inject({
    method: 'POST',
    url: '/webhooks/endpoints',
    payload,
    ...(authorization ? { headers: { authorization } } : {}),
  });
  expect(created.statusCode, created.body).toBe(201);
  return created.json().data;
}

describe('webhook endpoints', () => {
  it('registers an endpoint with a whsec_ secret, for the key’s tenant', async () => {
    const endpoint = await register(
      { url: receiver, event_types: ['posting.created', 'alert.raised'], description: 'ours' },
      tenantAuth,
    );
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(endpoint.tenant_id).toBe('acme');
    expect(endpoint.event_types).toEqual(['posting.created', 'alert.raised']);

    // The secret is not in reads, only in its own route.
    const read = await app.inject({
      method: 'GET',
      url: `/webhooks/endpoints/${endpoint.id}`,
      headers: { authorization: tenantAuth },
    });
    expect(read.statusCode).toBe(200);
    expect(read.json().data).not.toHaveProperty('secret');
    const secret = await app.inject({
      method: 'GET',
      url: `/webhooks/endpoints/${endpoint.id}/secret`,
      headers: { authorization: tenantAuth },
    });
    expect(secret.json().data.secret).toBe(endpoint.secret);
    // A viewer may list endpoints but not read a secret.
    const asViewer = await app.inject({
      method: 'GET',
      url: `/webhooks/endpoints/${endpoint.id}/secret`,
      headers: { authorization: viewerAuth },
    });
    expect(asViewer.statusCode).toBe(403);
  });

  it('refuses a receiver on a private, loopback or metadata address, naming the field', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hooks',
      'http://10.1.2.3/hooks',
      'http://169.254.169.254/latest',
      'http://[::1]/hooks',
      'http://localhost/hooks',
    ]) {
      const refused = await app.inject({
        method: 'POST',
        url: '/webhooks/endpoints',
        payload: { url },
      });
      expect(refused.statusCode, url).toBe(400);
      expect(refused.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(refused.json().errors[0].field, url).toBe('body.url');
    }
    const notHttp = await app.inject({
      method: 'POST',
      url: '/webhooks/endpoints',
      payload: { url: 'ftp://203.0.113.10/hooks' },
    });
    expect(notHttp.statusCode).toBe(400);
    const badType = await app.inject({
      method: 'POST',
      url: '/webhooks/endpoints',
      payload: { url: receiver, event_types: ['posting.deleted'] },
    });
    expect(badType.statusCode).toBe(400);
    expect(JSON.stringify(badType.json().errors)).toContain('event_types');
  });

  it('keeps tenants apart: a tenant key sees and changes only its own endpoints', async () => {
    const theirs = await register({ url: receiver }, otherTenantAuth);
    const listed = await app.inject({
      method: 'GET',
      url: '/webhooks/endpoints',
      headers: { authorization: tenantAuth },
    });
    expect(listed.json().data.every((e: { tenant_id: string }) => e.tenant_id === 'acme')).toBe(
      true,
    );
    for (const [method, url] of [
      ['GET', `/webhooks/endpoints/${theirs.id}`],
      ['PATCH', `/webhooks/endpoints/${theirs.id}`],
      ['DELETE', `/webhooks/endpoints/${theirs.id}`],
      ['POST', `/webhooks/endpoints/${theirs.id}/rotate-secret`],
    ] as const) {
      const refused = await app.inject({
        method,
        url,
        headers: { authorization: tenantAuth },
        ...(method === 'PATCH' ? { payload: { enabled: false } } : {}),
      });
      expect(refused.statusCode, `${method} ${url}`).toBe(404);
    }
    // A tenant key cannot register for another tenant.
    const forOther = await app.inject({
      method: 'POST',
      url: '/webhooks/endpoints',
      headers: { authorization: tenantAuth },
      payload: { url: receiver, tenant_id: 'globex' },
    });
    expect(forOther.statusCode).toBe(403);
    expect(forOther.json().errors[0].field).toBe('body.tenant_id');
    // The admin key sees everyone's.
    const all = await app.inject({ method: 'GET', url: '/webhooks/endpoints' });
    expect(all.json().data.map((e: { id: string }) => e.id)).toContain(theirs.id);
  });

  it('disables and enables an endpoint, and rotates its secret with the old one kept a while', async () => {
    const endpoint = await register({ url: receiver });
    const disabled = await app.inject({
      method: 'PATCH',
      url: `/webhooks/endpoints/${endpoint.id}`,
      payload: { enabled: false },
    });
    expect(disabled.json().data).toMatchObject({
      enabled: false,
      disabled_reason: 'disabled through the API',
    });
    const enabled = await app.inject({
      method: 'PATCH',
      url: `/webhooks/endpoints/${endpoint.id}`,
      payload: { enabled: true, event_types: ['run.finished'] },
    });
    expect(enabled.json().data).toMatchObject({
      enabled: true,
      disabled_reason: null,
      event_types: ['run.finished'],
    });

    const rotated = await app.inject({
      method: 'POST',
      url: `/webhooks/endpoints/${endpoint.id}/rotate-secret`,
    });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().data.secret).toMatch(/^whsec_/);
    expect(rotated.json().data.secret).not.toBe(endpoint.secret);
    const { rows } = await handle.pool.query<{ previous_secret: string; grace_hours: number }>(
      `SELECT previous_secret, round(extract(epoch FROM previous_secret_expires_at - now()) / 3600)::int AS grace_hours
       FROM webhook_endpoints WHERE id = $1`,
      [endpoint.id],
    );
    expect(rows[0]).toEqual({ previous_secret: endpoint.secret, grace_hours: 24 });
  });

  it('lists deliveries with their attempts and replays one under the same id', async () => {
    const endpoint = await register({ url: receiver });
    const { rows } = await handle.pool.query<{ id: string }>(
      `INSERT INTO webhook_deliveries (endpoint_id, event_type, event_key, payload, occurred_at, status, attempts, last_status_code)
       VALUES ($1, 'run.finished', 'run.finished:test', '{"run_id":"manual_1"}', now(), 'failed', 1, 500) RETURNING id`,
      [endpoint.id],
    );
    const deliveryId = rows[0]!.id;
    await handle.pool.query(
      `INSERT INTO webhook_attempts (delivery_id, attempt, status_code, error, duration_ms) VALUES ($1, 1, 500, 'answered 500', 12)`,
      [deliveryId],
    );
    const listed = await app.inject({
      method: 'GET',
      url: `/webhooks/endpoints/${endpoint.id}/deliveries`,
    });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data).toEqual([
      expect.objectContaining({
        id: deliveryId,
        webhook_id: `msg_${deliveryId.replaceAll('-', '')}`,
        status: 'failed',
        attempts: 1,
        next_attempt_at: null,
        payload: { run_id: 'manual_1' },
        attempt_log: [
          expect.objectContaining({ attempt: 1, status_code: 500, error: 'answered 500' }),
        ],
      }),
    ]);

    const replayed = await app.inject({
      method: 'POST',
      url: `/webhooks/endpoints/${endpoint.id}/deliveries/${deliveryId}/replay`,
    });
    expect(replayed.statusCode, replayed.body).toBe(202);
    // Pending again, its next attempt (the second) queued under a new generation.
    const job = await stack.queues.webhooks.getJob(`webhook-${deliveryId}-1-2`);
    expect(job?.data).toEqual({ deliveryId, generation: 1, attempt: 2 });
    const pending = await app.inject({
      method: 'GET',
      url: `/webhooks/endpoints/${endpoint.id}/deliveries?status=pending`,
    });
    expect(pending.json().data.map((d: { id: string }) => d.id)).toEqual([deliveryId]);

    const unknown = await app.inject({
      method: 'POST',
      url: `/webhooks/endpoints/${endpoint.id}/deliveries/00000000-0000-4000-8000-000000000000/replay`,
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().errors[0].field).toBe('params.deliveryId');

    await app.inject({
      method: 'PATCH',
      url: `/webhooks/endpoints/${endpoint.id}`,
      payload: { enabled: false },
    });
    const whileDisabled = await app.inject({
      method: 'POST',
      url: `/webhooks/endpoints/${endpoint.id}/deliveries/${deliveryId}/replay`,
    });
    expect(whileDisabled.statusCode).toBe(409);

    const removed = await app.inject({
      method: 'DELETE',
      url: `/webhooks/endpoints/${endpoint.id}`,
    });
    expect(removed.statusCode).toBe(204);
    const gone = await app.inject({ method: 'GET', url: `/webhooks/endpoints/${endpoint.id}` });
    expect(gone.statusCode).toBe(404);
    expect(gone.json().errors[0].field).toBe('params.id');
  });
});
