import { get, Agent, type IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  adminHeaders,
  createTestRedisNamespace,
  freePort,
  startService,
  waitFor,
  waitForLog,
  UNSHED_API_ENV,
  type ServiceProcess,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';

/**
 * The API process stops within its grace period even when a response is still being sent as the
 * SIGTERM arrives: its headers (keep-alive) are out, the client reads slowly, and only then does
 * the connection turn idle. server.close() had dropped only the connections idle at that moment,
 * so this one kept the close waiting for the keep-alive timeout (72 s), and close-with-grace
 * ended the process with code 1 — `npm start`'s demo-run poll, on a loaded machine.
 */
let database: TestDatabase;
let namespace: TestRedisNamespace;
let api: ServiceProcess | undefined;

beforeAll(async () => {
  database = await createTestDatabase('api-shutdown');
  namespace = createTestRedisNamespace('api-shutdown');
});

afterAll(async () => {
  await api?.stop(1_000);
  await namespace?.cleanup();
  await database?.drop();
});

describe('api shutdown', () => {
  it('ends a keep-alive connection whose response finishes after the server stopped listening', async () => {
    const port = await freePort();
    api = startService('api', {
      ...UNSHED_API_ENV,
      DATABASE_URL: database.url,
      REDIS_URL: namespace.url,
      QUEUE_PREFIX: namespace.prefix,
      API_HOST: '127.0.0.1',
      API_PORT: String(port),
      SHUTDOWN_GRACE_MS: '1000',
    });
    await waitForLog(api, 'api started');
    const exited = new Promise<number | null>((resolve) => api!.child.once('exit', resolve));

    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // Swagger UI's bundle: over a megabyte, more than the socket buffers take at once.
      const response = await new Promise<IncomingMessage>((resolve, reject) =>
        get(
          {
            host: '127.0.0.1',
            port,
            path: '/docs/static/swagger-ui-bundle.js',
            agent,
            headers: adminHeaders,
          },
          resolve,
        ).on('error', reject),
      );
      response.pause();
      expect(response.statusCode).toBe(200);
      expect(response.headers.connection).toBe('keep-alive');

      api.child.kill('SIGTERM');
      await waitFor(() => api!.logs.some((line) => line.msg === 'api shutting down') || undefined, {
        what: 'the api to start shutting down',
      });
      await sleep(200); // server.close() has run: the connection is busy, so it survived it
      let bytes = 0;
      const ended = new Promise((resolve, reject) => {
        response.once('end', resolve).once('error', reject);
      });
      response.on('data', (chunk: Buffer) => (bytes += chunk.length)).resume();
      await ended;
      expect(bytes).toBeGreaterThan(1_000_000);

      const code = await Promise.race([exited, sleep(5_000).then(() => 'still running')]);
      expect(code, api.stderr()).toBe(0);
      const steps = api.logs.filter((line) => line.msg === 'shutdown step done');
      expect(steps.map((line) => line.step)).toEqual([
        'http server',
        'queues',
        'postgres',
        'connection budget',
        'redis',
      ]);
      for (const step of steps) expect(step.durationMs).toEqual(expect.any(Number));
    } finally {
      agent.destroy();
    }
  });
});
