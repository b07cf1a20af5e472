import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminHeaders,
  createTestDatabase,
  createTestRedisNamespace,
  freePort,
  startService,
  waitFor,
  UNSHED_API_ENV,
  type ServiceProcess,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';

/**
 * `API_PROCESSES=2`: two API processes answer on one port under a primary that starts another
 * when one dies and, on SIGTERM, stops them all before it exits.
 */
let database: TestDatabase;
let namespace: TestRedisNamespace;
let api: ServiceProcess | undefined;

beforeAll(async () => {
  database = await createTestDatabase('api-processes');
  namespace = createTestRedisNamespace('api-processes');
});

afterAll(async () => {
  await api?.stop(2_000);
  await namespace?.cleanup();
  await database?.drop();
});

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

function startedPids(service: ServiceProcess): number[] {
  return service.logs
    .filter((line) => line.msg === 'api started')
    .map((line) => line.pid as number);
}

describe('API_PROCESSES', () => {
  it('answers from several processes, replaces one that dies, and stops them all', async () => {
    const port = await freePort();
    const environment = {
      DATABASE_URL: database.url,
      REDIS_URL: namespace.url,
      QUEUE_PREFIX: namespace.prefix,
      API_HOST: '127.0.0.1',
      API_PORT: String(port),
      SHUTDOWN_GRACE_MS: '2000',
    };
    api = startService('api', { ...environment, ...UNSHED_API_ENV, API_PROCESSES: '2' });
    const service = api;
    const first = await waitFor(
      () => {
        const pids = startedPids(service);
        return pids.length >= 2 ? pids : undefined;
      },
      { timeoutMs: 60_000, what: 'two api processes to start' },
    );
    expect(new Set(first).size).toBe(2);
    expect(first).not.toContain(service.child.pid);
    for (let i = 0; i < 4; i += 1) {
      const health = await fetch(`http://127.0.0.1:${port}/jobs/health`, { headers: adminHeaders });
      expect(health.status).toBe(200);
    }

    // One dies: the primary starts another, and the port keeps answering meanwhile.
    process.kill(first[0]!, 'SIGKILL');
    const replacement = await waitFor(
      () => startedPids(service).find((pid) => !first.includes(pid)),
      { timeoutMs: 60_000, what: 'a replacement api process' },
    );
    expect(service.logs.some((line) => line.msg === 'api process exited; starting another')).toBe(
      true,
    );
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);

    const exited = once(service.child, 'exit');
    service.child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
    expect(isAlive(first[1]!)).toBe(false);
    expect(isAlive(replacement)).toBe(false);
    api = undefined;
  }, 120_000);

  it('refuses a count it cannot run', async () => {
    const refused = startService('api', {
      DATABASE_URL: database.url,
      REDIS_URL: namespace.url,
      API_PROCESSES: 'many',
    });
    const [code] = (await once(refused.child, 'exit')) as [number | null];
    expect(code).toBe(1);
    expect(refused.stderr()).toMatch(/API_PROCESSES: .+/);
  });
});
