import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionClosedError } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { createDb, CursorInvalidError, listSites, SiteExistsError } from '@gleaner/db';
import { ClassifiedError } from '@gleaner/errors';
import { createLogger } from '@gleaner/logger';
import { createTestRedisNamespace, testAdminUrl, testRedisUrl } from '@gleaner/testing';
import { closeQueues, createQueues, createRedisConnection } from '@gleaner/queue';
import { buildApp } from '../app.js';
import { testApiConfig } from '../testing.js';
import { classifyError } from './problem.js';

/** Nothing listens here: connections are refused at once. */
const DEAD_POSTGRES = 'postgres://gleaner@127.0.0.1:1/gleaner';
const DEAD_REDIS = 'redis://127.0.0.1:1';

/** The error `promise` rejects with. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('classifyError', () => {
  const handles: { close(): Promise<void> | void }[] = [];
  afterAll(async () => {
    for (const handle of handles) await handle.close();
  });

  it('takes a refused Postgres connection for a 503, through drizzle’s wrapper', async () => {
    const dead = createDb({ url: DEAD_POSTGRES, poolMax: 1 });
    handles.push(dead);
    const error = await rejectionOf(listSites(dead.db));
    expect(classifyError(error)).toMatchObject({ code: 'ECONNREFUSED', problem: { status: 503 } });
  });

  it('takes pg-pool’s connect timeout, without a code of its own, for a 503', async () => {
    // One connection, held: the query waits for a second one until the timeout. (Long enough
    // for the first connection to open on a busy machine.)
    const pool = new pg.Pool({
      max: 1,
      connectionTimeoutMillis: 500,
      connectionString: testAdminUrl,
    });
    handles.push({ close: () => pool.end() });
    const held = await pool.connect();
    const error = await rejectionOf(pool.query('select 1'));
    held.release();
    expect(classifyError(error)).toMatchObject({
      code: 'PG_CONNECT_TIMEOUT',
      problem: { status: 503 },
    });
  });

  it('takes Postgres shutting down or full for a 503', () => {
    for (const code of ['57P01', '53300', '08006']) {
      const error = Object.assign(new pg.DatabaseError('backend gone', 0, 'error'), { code });
      expect(classifyError(new Error('Failed query', { cause: error }))?.problem.status).toBe(503);
    }
  });

  it('takes ioredis failing fast while Redis is down, or closed, for a 503', async () => {
    const offline = createRedisConnection(DEAD_REDIS, 'producer');
    const queueing = createRedisConnection(DEAD_REDIS, 'producer', { enableOfflineQueue: true });
    const closed = createRedisConnection(testRedisUrl, 'producer');
    for (const redis of [offline, queueing, closed]) {
      redis.on('error', () => {});
      handles.push({ close: () => redis.disconnect() });
    }
    expect(classifyError(await rejectionOf(offline.ping()))?.code).toBe('REDIS_OFFLINE');
    expect(classifyError(await rejectionOf(queueing.ping()))?.code).toBe(
      'REDIS_MAX_RETRIES_PER_REQUEST',
    );
    if (closed.status !== 'ready') await once(closed, 'ready');
    const ended = once(closed, 'end');
    closed.disconnect();
    await ended;
    expect(classifyError(await rejectionOf(closed.ping()))?.code).toBe('REDIS_CONNECTION_CLOSED');
    expect(classifyError(new ConnectionClosedError())?.code).toBe('REDIS_CONNECTION_CLOSED');
  });

  it('answers our own codes by the table', () => {
    expect(classifyError(new CursorInvalidError())?.problem).toMatchObject({
      status: 400,
      field: 'querystring.cursor',
    });
    expect(classifyError(new SiteExistsError('acme'))?.problem).toMatchObject({
      status: 409,
      field: 'body.site_name',
    });
  });

  it('leaves an error that only mentions a code, or has one it does not list, to the 500', () => {
    expect(classifyError(new Error('GET http://acme.example/ failed: ECONNREFUSED'))).toBe(
      undefined,
    );
    expect(classifyError(new ClassifiedError('no', 'SOME_UNLISTED_CODE', 'permanent'))).toBe(
      undefined,
    );
    expect(classifyError(Object.assign(new Error('loop'), { code: 'constructor' }))).toBe(
      undefined,
    );
    const cyclic = new Error('a');
    (cyclic as { cause?: unknown }).cause = cyclic;
    expect(classifyError(cyclic)).toBe(undefined);
  });
});

/**
 * A loopback TCP proxy to the test Redis, to pull the plug on: the API's connection is up (and
 * BullMQ's queues initialised) before Redis goes away, as when Redis restarts under a running API.
 */
async function redisProxy(): Promise<{ url: string; cut: () => void }> {
  const target = new URL(testRedisUrl);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}${target.pathname}`,
    cut: () => {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

describe('answers of an API whose backing services are down', () => {
  const ADMIN_KEY = 'glk_00000000_a-key-this-test-alone-knows-0000000000000';
  let app: FastifyInstance;
  let cutRedis: () => void;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const dead = createDb({ url: DEAD_POSTGRES, poolMax: 1 });
    const proxy = await redisProxy();
    cutRedis = proxy.cut;
    const redis = createRedisConnection(proxy.url, 'producer');
    redis.on('error', () => {});
    const namespace = createTestRedisNamespace('problem');
    const queues = createQueues(redis, namespace.prefix);
    // Once Redis is cut, each queue reports the lost connection as an `error` event too.
    for (const queue of Object.values(queues)) queue.on('error', () => {});
    app = await buildApp({
      config: testApiConfig(),
      logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
      db: dead.db,
      pool: dead.pool,
      redis,
      queues,
      // Keys live in the Postgres this test has killed: one admin key, known without it.
      keys: {
        authenticate: async (key) =>
          key === ADMIN_KEY
            ? { id: randomUUID(), name: 'test', prefix: '00000000', role: 'admin', tenantId: null }
            : undefined,
        revoked: async () => undefined,
        close: async () => undefined,
      },
    });
    app.get('/boom', async () => {
      throw new Error('secret: password=hunter2 at /srv/app/internal.ts:42');
    });
    close = async () => {
      proxy.cut();
      await app.close();
      await closeQueues(queues);
      redis.disconnect();
      await dead.close();
      await namespace.cleanup();
    };
  });

  afterAll(async () => {
    await close?.();
  });

  function expectUnavailable(
    response: Awaited<ReturnType<FastifyInstance['inject']>>,
    url: string,
  ) {
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({
      status: 503,
      title: 'Service Unavailable',
      instance: url,
    });
    expect(response.body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|Failed query|Stream/);
  }

  const inject = (options: { method: 'GET'; url: string }) =>
    app.inject({ ...options, headers: { authorization: `Bearer ${ADMIN_KEY}` } });

  it('Postgres down: 503 with Retry-After', async () => {
    expectUnavailable(await inject({ method: 'GET', url: '/sites' }), '/sites');
  });

  it('Redis gone from under a running API: 503 with Retry-After', async () => {
    expect((await inject({ method: 'GET', url: '/jobs/queue/status' })).statusCode).toBe(200);
    cutRedis();
    expectUnavailable(
      await inject({ method: 'GET', url: '/jobs/queue/status' }),
      '/jobs/queue/status',
    );
  });

  it('an unknown error: 500, and nothing of it in the answer', async () => {
    const response = await inject({ method: 'GET', url: '/boom' });
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({
      type: 'https://gleaner.dev/problems/internal-server-error',
      title: 'Internal Server Error',
      status: 500,
      detail: 'an unexpected error occurred; it has been logged',
      instance: '/boom',
    });
  });
});
