import { createTestRedisNamespace, type TestRedisNamespace } from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisConnection, waitForRedis } from './connection.js';
import {
  createRunLogWriter,
  readRunLogAfter,
  readRunLogTail,
  runLogKey,
  type RunLogLine,
} from './run-log.js';

let namespace: TestRedisNamespace;
let redis: Redis;

beforeAll(async () => {
  namespace = createTestRedisNamespace('run-log');
  redis = createRedisConnection(namespace.url, 'producer');
  await waitForRedis(redis);
});

afterAll(async () => {
  redis?.disconnect();
  await namespace?.cleanup();
});

function line(msg: string, stage: RunLogLine['stage'] = 'CRL'): RunLogLine {
  return { stage, level: 'info', time: Date.now(), msg };
}

describe('a run log', () => {
  it('keeps each run its own lines in order, capped and expiring', async () => {
    const errors: Error[] = [];
    const writer = createRunLogWriter({
      redis,
      prefix: namespace.prefix,
      maxLines: 50,
      ttlSeconds: 3600,
      onError: (error) => errors.push(error),
    });
    writer.append('manual_a', line('listing done', 'ING'));
    for (let i = 0; i < 500; i += 1) writer.append('manual_a', line(`posting ${i}`));
    writer.append('manual_b', line('other run', 'EXT'));
    await writer.close();
    writer.append('manual_a', line('after close'));
    await writer.flush();

    const a = runLogKey(namespace.prefix, 'manual_a');
    const b = runLogKey(namespace.prefix, 'manual_b');
    // MAXLEN ~ trims whole radix-tree nodes: at least the cap is kept, far fewer than were sent.
    const kept = await redis.xlen(a);
    expect(kept).toBeGreaterThanOrEqual(50);
    expect(kept).toBeLessThan(300);
    const ttl = await redis.ttl(a);
    expect(ttl).toBeGreaterThan(3500);
    expect(ttl).toBeLessThanOrEqual(3600);

    const tail = await readRunLogTail(redis, a, 3);
    expect(tail.map((entry) => entry.line.msg)).toEqual([
      'posting 497',
      'posting 498',
      'posting 499',
    ]);
    const after = await readRunLogAfter(redis, a, tail[0]!.id, 10);
    expect(after.map((entry) => entry.line.msg)).toEqual(['posting 498', 'posting 499']);
    expect((await readRunLogTail(redis, b, 10)).map((entry) => entry.line)).toEqual([
      expect.objectContaining({ stage: 'EXT', msg: 'other run', level: 'info' }),
    ]);
    expect(errors).toEqual([]);
  });

  it('drops what it cannot hold or send, and says so', async () => {
    const errors: Error[] = [];
    const down = createRedisConnection('redis://127.0.0.1:1', 'producer', {
      retryStrategy: () => null,
    });
    down.on('error', () => {});
    const writer = createRunLogWriter({
      redis: down,
      prefix: namespace.prefix,
      maxBuffered: 2,
      onError: (error) => errors.push(error),
    });
    for (let i = 0; i < 5; i += 1) writer.append('manual_c', line(`line ${i}`));
    await writer.close();
    down.disconnect();
    expect(errors.map((error) => error.message)).toEqual([
      'run log: 3 lines dropped (buffer full)',
      expect.stringMatching(/^run log: 2 lines not sent: /),
    ]);
  });
});
