import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  createTestRedisNamespace,
  freePort,
  repoRoot,
  waitFor,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';

/**
 * What `npm start` runs once dependencies are installed and built (scripts/start.sh →
 * scripts/dev.ts): the whole system as local processes, ingesting the demo site. Here it gets
 * its own database, Redis prefix and ports.
 */
let database: TestDatabase;
let namespace: TestRedisNamespace;

beforeAll(async () => {
  database = await createTestDatabase('start');
  namespace = createTestRedisNamespace('start');
});

afterAll(async () => {
  await namespace?.cleanup();
  await database?.drop();
});

describe('npm start', () => {
  it('brings the system up and the printed demo run succeeds within a minute, then stops cleanly', async () => {
    const [apiPort, demoPort] = [await freePort(), await freePort()];
    const child = spawn(
      process.execPath,
      [path.join(repoRoot, 'node_modules/tsx/dist/cli.mjs'), 'scripts/dev.ts'],
      {
        cwd: repoRoot,
        env: {
          PATH: process.env.PATH ?? '',
          DATABASE_URL: database.url,
          REDIS_URL: namespace.url,
          QUEUE_PREFIX: namespace.prefix,
          API_PORT: String(apiPort),
          DEMO_SITE_PORT: String(demoPort),
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const started = Date.now();
    try {
      const statusUrl = await waitFor(() => /Demo run status:\s+(\S+)/.exec(output)?.[1], {
        timeoutMs: 60_000,
        what: `the status URL in:\n${output}`,
      });
      expect(output).toContain(`API:               http://127.0.0.1:${apiPort}`);
      expect(output).toMatch(
        new RegExp(`Bull Board: +http://admin:[^@]+@127\\.0\\.0\\.1:${apiPort}/admin/queues`),
      );
      const run = await waitFor(
        async () => {
          const body = (await (await fetch(statusUrl)).json()) as {
            data: { status: string; ready_count: number; postings: unknown[] };
          };
          return body.data.status === 'succeeded' ? body.data : undefined;
        },
        {
          timeoutMs: 60_000 - (Date.now() - started),
          intervalMs: 250,
          what: 'the demo run to succeed',
        },
      );
      expect(run.ready_count).toBe(50);
      expect(run.postings).toHaveLength(50);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, output.slice(-3000)).toBe(0);
    // Every service exited 0 on its single SIGTERM.
    expect(output).toMatch(/gleaner: stopped\n/);
  });
});
