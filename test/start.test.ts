import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  adminHeaders,
  createTestRedisNamespace,
  freePort,
  repoRoot,
  TEST_ADMIN_API_KEY,
  waitFor,
  WaitAbortedError,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';

/**
 * What `npm start` runs once dependencies are installed and built (scripts/start.sh →
 * `node --import tsx scripts/dev.ts`): the whole system as local processes, ingesting the demo
 * site. Here it gets its own database, Redis prefix and ports.
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
    // As scripts/start.sh runs it: in this process, not under the `tsx` command, whose signal
    // relay SIGKILLs a runner that is slow to confirm a signal (a loaded machine) and so leaves
    // the services running.
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/dev.ts'], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: database.url,
        REDIS_URL: namespace.url,
        QUEUE_PREFIX: namespace.prefix,
        API_PORT: String(apiPort),
        DEMO_SITE_PORT: String(demoPort),
        LOG_LEVEL: 'info',
        // The repo's own .gleaner/admin-key is the developer's: this run brings its key.
        ADMIN_API_KEY: TEST_ADMIN_API_KEY,
        // As a copied .env.example says: private networks stay closed, the demo's one address open.
        HTTP_ALLOW_PRIVATE_NETWORKS: 'false',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const started = Date.now();
    try {
      const statusUrl = await waitFor(
        () => {
          if (child.exitCode !== null) throw new WaitAbortedError(`npm start exited:\n${output}`);
          return /Demo run status:\s+(\S+)/.exec(output)?.[1];
        },
        { timeoutMs: 60_000, what: 'the status URL' },
      ).catch((error: Error) => {
        throw new Error(`${error.message}; npm start printed:\n${output}`);
      });
      expect(output).toContain(
        `gleaner: demo setting HTTP_ALLOWED_PEERS=127.0.0.1:${demoPort} (its site is on 127.0.0.1:${demoPort})`,
      );
      expect(output).toContain(`API:               http://127.0.0.1:${apiPort}`);
      expect(output).toContain('Admin API key:     from ADMIN_API_KEY');
      // No password in the URL: browsers refuse the page's own requests from such a URL.
      expect(output).toContain(`Bull Board:        http://127.0.0.1:${apiPort}/admin/queues  (`);
      const run = await waitFor(
        async () => {
          const body = (await (await fetch(statusUrl, { headers: adminHeaders })).json()) as {
            data: {
              status: string;
              ready_count: number;
              posting_counts: { ready: number };
              postings: unknown[];
              next_cursor: string | null;
            };
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
      expect(run.posting_counts.ready).toBe(50);
      // The status URL sends the first page of the run's postings; next_cursor pages on.
      expect(run.postings).toHaveLength(20);
      expect(run.next_cursor).not.toBeNull();
      // Only the demo's own address is exempt: a site on another loopback port is refused.
      const refused = await fetch(`http://127.0.0.1:${apiPort}/sites`, {
        method: 'POST',
        headers: { ...adminHeaders, 'content-type': 'application/json' },
        body: JSON.stringify({
          site_name: 'loopback-elsewhere',
          kind: 'career-site',
          config: { url: `http://127.0.0.1:${apiPort}/` },
        }),
      });
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain('body.config.url');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, shutdownLines(output)).toBe(0);
    // Every service exited 0 on its single SIGTERM, having logged each step of its shutdown.
    expect(output).toMatch(/gleaner: stopped\n/);
    const steps = stepsBy(output);
    // Postgres closes before the claim on the fleet's connection budget is given back in Redis.
    expect(steps.api).toEqual(['http server', 'queues', 'postgres', 'connection budget', 'redis']);
    // The worker serves every queue by default, documents included: its parser processes stop
    // once its jobs have.
    expect(steps.worker).toEqual([
      'workers',
      // The metrics' counts and the run page's log lines still buffered, sent once the jobs are done.
      'counters',
      'run log',
      'webhook fetcher',
      'document parsers',
      // The site gate's own connection (one Redis: `pipelinedConnection`), once no job asks it.
      'gate connection',
      'fetcher',
      'queues',
      'postgres',
      'connection budget',
      'redis',
    ]);
    expect(steps.scheduler).toEqual([
      'forced passes',
      'webhook dispatcher',
      'site watch',
      'search indexer',
      'body sweeper',
      'scheduler loop',
      'queues',
      'postgres',
      'connection budget',
      'redis',
    ]);
    // Nothing is left running (the services have process groups of their own).
    const pids = new Set(
      Object.values(logsBy(output))
        .flat()
        .map((line) => line.pid)
        .filter((pid): pid is number => typeof pid === 'number'),
    );
    expect(pids.size).toBeGreaterThanOrEqual(3);
    for (const pid of pids) expect(() => process.kill(pid, 0), `pid ${pid}`).toThrow();
  });
});

/** `[service] {json}` lines dev.ts relays, as parsed log records per service. */
function logsBy(output: string): Record<string, Record<string, unknown>[]> {
  const logs: Record<string, Record<string, unknown>[]> = {};
  for (const [, service, json] of output.matchAll(/^\[([a-z-]+)\] (\{.*\})$/gm)) {
    try {
      (logs[service!] ??= []).push(JSON.parse(json!) as Record<string, unknown>);
    } catch {
      // a line that is not a log record
    }
  }
  return logs;
}

/** The shutdown steps each service logged as done, each with its duration, in order. */
function stepsBy(output: string): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(logsBy(output)).map(([service, lines]) => [
      service,
      lines
        .filter((line) => line.msg === 'shutdown step done' && typeof line.durationMs === 'number')
        .map((line) => String(line.step)),
    ]),
  );
}

/** What a failed stop leaves to read: the runner's own lines and every shutdown log record. */
function shutdownLines(output: string): string {
  return output
    .split('\n')
    .filter((line) => line.startsWith('gleaner:') || /shut|stop|step/.test(line))
    .join('\n')
    .slice(-4000);
}
