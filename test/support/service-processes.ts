import {
  createTestDatabase,
  createTestRedisNamespace,
  startService,
  type ServiceProcess,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import { afterAll, beforeAll } from 'vitest';

type ServiceName = Parameters<typeof startService>[0];

export interface ServiceProcesses {
  /** The file's database (set in its `beforeAll`). */
  readonly database: TestDatabase;
  /** The file's Redis namespace (set in its `beforeAll`). */
  readonly namespace: TestRedisNamespace;
  /**
   * Starts a built service on the file's database and Redis prefix, `env` on top; it is stopped
   * after the file's tests.
   */
  start(service: ServiceName, env?: Record<string, string>): ServiceProcess;
}

/**
 * Service processes for one test file: a database and a Redis namespace of its own, created
 * before its tests, and every process it started stopped after them, then both removed.
 */
export function useServiceProcesses(name: string): ServiceProcesses {
  let database: TestDatabase | undefined;
  let namespace: TestRedisNamespace | undefined;
  const started: ServiceProcess[] = [];
  beforeAll(async () => {
    database = await createTestDatabase(name.replaceAll('-', '_'));
    namespace = createTestRedisNamespace(name);
  });
  afterAll(async () => {
    await Promise.all(started.map((service) => service.stop()));
    await namespace?.cleanup();
    await database?.drop();
  });
  const ready = <T>(value: T | undefined, what: string): T => {
    if (!value) throw new Error(`${what} is set up in beforeAll`);
    return value;
  };
  return {
    get database() {
      return ready(database, 'the database');
    },
    get namespace() {
      return ready(namespace, 'the Redis namespace');
    },
    start(service, env = {}) {
      const { url } = ready(database, 'the database');
      const { url: redisUrl, prefix } = ready(namespace, 'the Redis namespace');
      const child = startService(service, {
        DATABASE_URL: url,
        REDIS_URL: redisUrl,
        QUEUE_PREFIX: prefix,
        ...env,
      });
      started.push(child);
      return child;
    },
  };
}
