import { mkdtempSync, rmSync } from 'node:fs';
import { connect as connectTcp } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServer } from './redis-server.js';

const dir = mkdtempSync(path.join(tmpdir(), 'gleaner-redis-server-test-'));
let server: RedisServer | undefined;

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const connect = async (url: string): Promise<Redis> => {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  await redis.connect();
  return redis;
};

/** The error code of a plain TCP connect to the port, or 'connected'. */
const tcpOutcome = (port: number): Promise<string> =>
  new Promise((resolve) => {
    const socket = connectTcp(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });

describe('a redis-server of its own', () => {
  it('refuses connections while stopped and keeps its data across a restart (AOF)', async () => {
    server = await startRedisServer({ dir });
    const before = await connect(server.url);
    await before.set('kept', 'yes');
    before.disconnect();

    await server.stop();
    expect(server.pid()).toBeUndefined();
    expect(await tcpOutcome(server.port)).toBe('ECONNREFUSED');

    await server.start();
    const after = await connect(server.url);
    expect(await after.get('kept')).toBe('yes');
    expect(await after.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    after.disconnect();
  });
});
