/**
 * The migration command as compose and Kubernetes run it (`services/api/dist/migrate.js`): it
 * applies what is pending, and with `--wait` (a Kubernetes pod's init container) applies nothing
 * and waits until someone else has applied every migration this build carries.
 */
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, pendingMigrations } from '@gleaner/db';
import { createTestDatabase, repoRoot, type TestDatabase } from '@gleaner/testing';

const run = promisify(execFile);
const entry = path.join(repoRoot, 'services', 'api', 'dist', 'migrate.js');
let database: TestDatabase;

function migrate(args: string[]) {
  return run(process.execPath, [entry, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, DATABASE_URL: database.url, LOG_PRETTY: 'false' },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

beforeAll(async () => {
  database = await createTestDatabase('migrate', { migrated: false });
});

afterAll(async () => {
  await database?.drop();
});

describe('the migration command', () => {
  it('with --wait gives up on an empty database, naming what is pending', async () => {
    const handle = createDb({ url: database.url, poolMax: 1 });
    try {
      const pending = await pendingMigrations(handle.pool);
      expect(pending[0]).toBe('0000_initial');
      const result = await migrate(['--wait', '--timeout-seconds', '1']);
      expect(result.code).toBe(1);
      expect(result.stdout).toContain(
        `gave up waiting for ${pending.length} migration(s): 0000_initial`,
      );
    } finally {
      await handle.close();
    }
  });

  it('with --wait returns once another process has applied them, and applies nothing itself', async () => {
    const waiter = spawn(process.execPath, [entry, '--wait', '--timeout-seconds', '120'], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, DATABASE_URL: database.url, LOG_PRETTY: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let waiterOut = '';
    waiter.stdout.on('data', (chunk: Buffer) => (waiterOut += chunk.toString()));
    const waited = new Promise<number | null>((resolve) => waiter.once('exit', resolve));
    // Still waiting after a few checks: it did not apply them itself.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(waiter.exitCode).toBeNull();
    const handle = createDb({ url: database.url, poolMax: 1 });
    try {
      expect((await pendingMigrations(handle.pool)).length).toBeGreaterThan(0);

      const applied = await migrate([]);
      expect(applied.code).toBe(0);
      expect(applied.stdout).toContain('migrations applied');
      expect(await pendingMigrations(handle.pool)).toEqual([]);
    } finally {
      await handle.close();
    }
    expect(await waited).toBe(0);
    expect(waiterOut).toContain('migrations are current');
  });

  it('refuses an unknown option and a bad timeout with its usage', async () => {
    for (const args of [['--wiat'], ['--wait', '--timeout-seconds', 'soon']]) {
      const result = await migrate(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toContain('usage: migrate [--wait');
    }
  });
});
