import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import {
  createWebhookEndpoint,
  insertSite,
  getWebhookEndpoint,
  listWebhookDeliveries,
  webhookHealth,
  type WebhookEndpointRow,
} from '@gleaner/db';
import { createFetcher, type Fetcher } from '@gleaner/http';
import { createLogger } from '@gleaner/logger';
import {
  createReconciler,
  createWebhookDispatcher,
  type WebhookDispatcher,
} from '@gleaner/scheduler';
import { runWholeListing, waitFor } from '@gleaner/testing';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/** What a receiver was sent: the three Standard Webhooks headers, the body, and when. */
interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  at: number;
}

interface Receiver {
  server: Server;
  port: number;
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** A loopback receiver answering each message's attempts as `answer` decides, by attempt number. */
async function startReceiver(
  answer: (attempt: number, response: ServerResponse) => void,
): Promise<Receiver> {
  const received: Received[] = [];
  const attempts = new Map<string, number>();
  const open = new Set<ServerResponse>();
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const header = (name: string) => String(request.headers[name] ?? '');
      const id = header('webhook-id');
      received.push({
        id,
        timestamp: header('webhook-timestamp'),
        signature: header('webhook-signature'),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      open.add(response);
      response.on('close', () => open.delete(response));
      answer(attempt, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    async close() {
      for (const response of open) response.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Fails, then times out, then answers 429 with `Retry-After: 1`, then takes the message. */
function flaky(attempt: number, response: ServerResponse): void {
  if (attempt === 1) response.writeHead(500).end('boom');
  else if (attempt === 2) {
    // Never answered: the attempt's deadline (700 ms) ends it.
  } else if (attempt === 3) response.writeHead(429, { 'retry-after': '1' }).end('slow down');
  else response.writeHead(204).end();
}

const ATTEMPT_TIMEOUT_MS = 700;
/** Short waits between attempts, so that the 1 s `Retry-After` stands out. */
const SCHEDULE_MS = [50, 50, 50, 50];

let system: InProcessSystem;
let webhookFetcher: Fetcher;
let dispatcher: WebhookDispatcher;
let receiver: Receiver;
let goneReceiver: Receiver;
let canary: Receiver;
let flakyEndpoint: WebhookEndpointRow;
let goneEndpoint: WebhookEndpointRow;
let privateEndpoint: WebhookEndpointRow;
let siteId: string;

beforeAll(async () => {
  receiver = await startReceiver(flaky);
  goneReceiver = await startReceiver((_, response) => response.writeHead(410).end('gone'));
  // Never allowed: a receiver on a private address the worker must refuse.
  canary = await startReceiver((_, response) => response.writeHead(204).end());
  const allowed = new Set([receiver.port, goneReceiver.port]);
  // As the worker builds it: no private address but the fixtures' exact ports, no redirect.
  webhookFetcher = createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: ATTEMPT_TIMEOUT_MS,
    maxBodyBytes: 64 * 1024,
    maxRedirects: 0,
    allowPrivateNetworks: false,
    allowPeer: (peer) => peer.address === '127.0.0.1' && allowed.has(peer.port),
  });
  system = await startInProcessSystem('webhooks', {
    more: () => ({
      deps: { webhooks: { fetcher: webhookFetcher, schedule: SCHEDULE_MS } },
      queues: ['webhooks'],
      concurrency: { webhooks: 16 },
    }),
  });
  const db = system.handle.db;
  flakyEndpoint = await createWebhookEndpoint(db, { tenantId: null, url: receiver.url });
  goneEndpoint = await createWebhookEndpoint(db, {
    tenantId: null,
    url: goneReceiver.url,
    eventTypes: ['posting.created'],
  });
  privateEndpoint = await createWebhookEndpoint(db, {
    tenantId: null,
    url: canary.url,
    eventTypes: ['alert.raised'],
  });
  siteId = (
    await insertSite(db, {
      siteName: 'acme-webhooks',
      kind: 'career-site',
      config: { url: 'https://acme.example' },
    })
  ).id;
  dispatcher = createWebhookDispatcher({
    db,
    queues: system.queues,
    logger: createLogger({ service: 'scheduler', level: 'silent', destination: new PassThrough() }),
    intervalMs: 100,
    batchSize: 100,
  });
  dispatcher.start();
}, 60_000);

afterAll(async () => {
  await dispatcher?.stop();
  await system?.close();
  await webhookFetcher?.close();
  await Promise.all([receiver, goneReceiver, canary].map((r) => r?.close()));
});

async function settledDeliveries(endpointId: string, expected: number) {
  return waitFor(
    async () => {
      const deliveries = await listWebhookDeliveries(system.handle.db, endpointId, { limit: 500 });
      return deliveries.length === expected && deliveries.every((d) => d.status !== 'pending')
        ? deliveries
        : undefined;
    },
    { timeoutMs: 60_000, what: `${expected} settled deliveries of ${endpointId}` },
  );
}

describe('signed webhooks', () => {
  it('deliver every event once in effect through failures, a timeout and a 429, signed as the spec says', async () => {
    const db = system.handle.db;
    // Three normal listings of 10 postings, then an empty answer: the listing guard holds the
    // postings and raises a drift alert.
    for (let round = 0; round < 3; round += 1)
      expect((await runWholeListing(db, siteId, [...Array(10).keys()])).status).toBe('succeeded');
    const held = await runWholeListing(db, siteId, []);
    expect(held.status).toBe('partial');

    // 10 postings created, 4 runs finished, 1 alert raised.
    const deliveries = await settledDeliveries(flakyEndpoint.id, 15);
    expect(deliveries.map((d) => d.status)).toEqual(Array(15).fill('delivered'));

    // Each message was sent four times, under one id, with one body; signatures verify with the
    // specification's reference library, and each attempt is signed at its own time.
    const byId = new Map<string, Received[]>();
    for (const request of receiver.received)
      byId.set(request.id, [...(byId.get(request.id) ?? []), request]);
    expect(byId.size).toBe(15);
    const verifier = new Webhook(flakyEndpoint.secret);
    for (const [id, requests] of byId) {
      expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(requests).toHaveLength(4);
      expect(new Set(requests.map((r) => r.body)).size).toBe(1);
      for (const request of requests) {
        expect(() =>
          verifier.verify(request.body, {
            'webhook-id': request.id,
            'webhook-timestamp': request.timestamp,
            'webhook-signature': request.signature,
          }),
        ).not.toThrow();
        expect(request.signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      }
      // The 429's Retry-After (1 s) was honoured over the schedule's 50 ms.
      expect(requests[3]!.at - requests[2]!.at).toBeGreaterThanOrEqual(950);
    }
    // A tampered body does not verify.
    const [first] = receiver.received;
    expect(() =>
      verifier.verify(first!.body.replace('"type"', '"typ"'), {
        'webhook-id': first!.id,
        'webhook-timestamp': first!.timestamp,
        'webhook-signature': first!.signature,
      }),
    ).toThrow();

    // Exactly the events that happened, once each.
    const messages = [...byId.values()].map(
      (requests) =>
        JSON.parse(requests[0]!.body) as {
          type: string;
          timestamp: string;
          data: Record<string, unknown>;
        },
    );
    const count = (type: string) => messages.filter((message) => message.type === type).length;
    expect(count('posting.created')).toBe(10);
    expect(count('run.finished')).toBe(4);
    expect(count('alert.raised')).toBe(1);
    expect(
      new Set(messages.filter((m) => m.type === 'posting.created').map((m) => m.data.posting_id))
        .size,
    ).toBe(10);
    const alert = messages.find((message) => message.type === 'alert.raised')!;
    expect(alert.data).toMatchObject({ kind: 'listing_drop', site_name: 'acme-webhooks' });
    expect(
      messages
        .filter((m) => m.type === 'run.finished')
        .map((m) => m.data.status)
        .sort(),
    ).toEqual(['partial', 'succeeded', 'succeeded', 'succeeded']);

    // Every attempt is logged with what the receiver answered.
    for (const delivery of deliveries) {
      expect(delivery.attempts).toBe(4);
      expect(delivery.attemptLog.map((attempt) => attempt.statusCode)).toEqual([
        500,
        null,
        429,
        204,
      ]);
      expect(delivery.attemptLog[1]!.error).toMatch(/took longer than 700 ms/);
      expect(delivery.attemptLog[2]!.retryAfterMs).toBe(1000);
    }
  }, 90_000);

  it('disables an endpoint whose receiver answers 410, and sends it nothing more', async () => {
    const db = system.handle.db;
    const deliveries = await waitFor(
      async () => {
        const all = await listWebhookDeliveries(db, goneEndpoint.id, { limit: 500 });
        return all.length === 10 && all.every((d) => d.status !== 'pending') ? all : undefined;
      },
      { timeoutMs: 30_000, what: 'the 410 endpoint’s deliveries to settle' },
    );
    const endpoint = await getWebhookEndpoint(db, goneEndpoint.id, undefined);
    expect(endpoint!.enabled).toBe(false);
    expect(endpoint!.disabledReason).toMatch(/410 Gone/);
    const gone = deliveries.filter((d) => d.lastStatusCode === 410);
    expect(gone.length).toBeGreaterThanOrEqual(1);
    for (const delivery of gone) expect(delivery.status).toBe('failed');
    // Those not yet sent when it went away were cancelled, unsent.
    expect(deliveries.every((d) => d.status === 'failed' || d.status === 'cancelled')).toBe(true);
    expect(goneReceiver.received.length).toBe(gone.length);

    // Two new postings: the disabled endpoint gets no delivery of them. (The other endpoint
    // gets them, the run's end, and the drift alert's resolution.)
    const sent = goneReceiver.received.length;
    await runWholeListing(db, siteId, [...Array(12).keys()]);
    await settledDeliveries(flakyEndpoint.id, 15 + 2 + 1 + 1);
    expect(await listWebhookDeliveries(db, goneEndpoint.id, { limit: 500 })).toHaveLength(10);
    expect(goneReceiver.received.length).toBe(sent);
    expect(await webhookHealth(db)).toMatchObject({ endpointsEnabled: 2, endpointsDisabled: 1 });
  }, 90_000);

  it('refuses a receiver on a private address: its delivery fails at once and nothing is sent', async () => {
    const [delivery] = await settledDeliveries(privateEndpoint.id, 1);
    expect(delivery!.status).toBe('failed');
    expect(delivery!.attempts).toBe(1);
    expect(delivery!.attemptLog[0]!.statusCode).toBeNull();
    expect(delivery!.lastError).toMatch(/127\.0\.0\.1/);
    expect(canary.received).toHaveLength(0);
  });

  it('sends a delivery whose job Redis lost: the reconciler adds it again, under the id it had', async () => {
    const db = system.handle.db;
    const quiet = await createWebhookEndpoint(db, {
      tenantId: null,
      url: receiver.url.replace('/hooks', '/lost'),
      eventTypes: ['run.finished'],
    });
    // A delivery made, its job never added (the dispatcher died between the two), its attempt
    // due a while ago. The receiver answers 500, then times out, then 429, then takes it.
    const { rows } = await system.handle.pool.query<{ id: string }>(
      `INSERT INTO webhook_deliveries (endpoint_id, event_type, event_key, payload, occurred_at, next_attempt_at)
       VALUES ($1, 'run.finished', 'run.finished:lost', '{"run_id":"manual_lost"}', now(), now() - interval '1 minute')
       RETURNING id`,
      [quiet.id],
    );
    const deliveryId = rows[0]!.id;
    const reconciler = createReconciler({
      db,
      queues: system.queues,
      logger: createLogger({
        service: 'scheduler',
        level: 'silent',
        destination: new PassThrough(),
      }),
      runDeadlineMs: 10 * 60_000,
      graceMs: 300,
    });
    const repairs = await reconciler.reconcile({ redis: true });
    expect(repairs.webhooksRequeued).toBe(1);
    expect(await system.queues.webhooks.getJob(`webhook-${deliveryId}-0-1`)).toBeDefined();
    const [delivered] = await settledDeliveries(quiet.id, 1);
    expect(delivered).toMatchObject({ id: deliveryId, status: 'delivered', attempts: 4 });
    // Delivered: nothing more for the reconciler to add.
    expect((await reconciler.reconcile({ redis: true })).webhooksRequeued).toBe(0);
  }, 60_000);
});
