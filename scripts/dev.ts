/**
 * Runs the whole system locally as plain processes — the same entry points and environment as
 * the compose services — and ingests the demo fixture site:
 *   migrate (one-shot) → demo career site → api, worker, scheduler → register demo → scrape.
 * Ctrl-C stops everything. `npm start` calls this after installing and building.
 *
 * Run it as `node --import tsx scripts/dev.ts`, not through the `tsx` command: that one is a
 * second process relaying signals, and when the runner does not confirm a signal within 30 ms (a
 * busy machine) it SIGKILLs the runner, leaving the services (own process groups) running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { readEnvironment } from '@gleaner/config';
import { shutdownBoundMs } from '@gleaner/service';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function say(line: string): void {
  process.stdout.write(`gleaner: ${line}\n`);
}

/** Exits once what this process wrote has left it (a pipe's reader gets the last lines). */
function exitAfterOutput(code: number): never {
  process.stdout.write('', () => process.exit(code));
  // Should stdout never drain (a reader gone), still exit.
  setTimeout(() => process.exit(code), 2_000).unref();
  return undefined as never;
}

/**
 * The services' settings: the environment, then `.env` (read the way every service reads it),
 * then defaults for running on this machine. The demo site's address is added to the fetcher's
 * exemptions, which it says.
 */
function settings(): Record<string, string> {
  const { env: configured, envFile } = readEnvironment(process.env, path.join(root, '.env'));
  const forThisMachine: Record<string, string> = {
    DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/gleaner',
    REDIS_URL: 'redis://127.0.0.1:6379/0',
    API_HOST: '127.0.0.1',
    API_PORT: '8000',
    LOG_PRETTY: process.stdout.isTTY ? 'true' : 'false',
  };
  const env: Record<string, string> = { ...forThisMachine };
  for (const [key, value] of Object.entries(configured)) if (value !== undefined) env[key] = value;
  if (envFile.supplied.length > 0) {
    say(`settings from ${path.relative(root, envFile.path)}: ${envFile.supplied.join(', ')}`);
  }

  // The demo site listens on 127.0.0.1, which the fetcher refuses: exempt its one address and
  // port, and leave every other private address (a crawled page's link to 127.0.0.1:6379, the
  // cloud's metadata address) blocked.
  const demoPeer = `127.0.0.1:${env.DEMO_SITE_PORT ?? '8100'}`;
  const peers = (env.HTTP_ALLOWED_PEERS ?? '').split(',').map((peer) => peer.trim());
  if (!peers.includes(demoPeer)) {
    env.HTTP_ALLOWED_PEERS = [...peers.filter(Boolean), demoPeer].join(',');
    say(`demo setting HTTP_ALLOWED_PEERS=${env.HTTP_ALLOWED_PEERS} (its site is on ${demoPeer})`);
  }
  return env;
}

const env = settings();
const demoPort = Number(env.DEMO_SITE_PORT ?? '8100');
const demoPostings = Number(env.DEMO_SITE_POSTINGS ?? '50');
const apiUrl =
  env.API_PUBLIC_URL ??
  `http://${env.API_HOST === '0.0.0.0' ? '127.0.0.1' : env.API_HOST}:${env.API_PORT}`;
const children: { name: string; child: ChildProcess }[] = [];
let stopping = false;
// A service's shutdown is bounded (packages/config/src/shutdown.ts); past that it is stuck.
const stopTimeoutMs = shutdownBoundMs(Number(env.SHUTDOWN_GRACE_MS ?? 10_000) || 10_000) + 5_000;

/** Runs `program args…` (node itself, or a service's launcher) from the repository root. */
function run(
  name: string,
  [program, ...args]: [string, ...string[]],
  extraEnv: Record<string, string> = {},
): ChildProcess {
  // Own process group: a terminal's Ctrl-C reaches only this runner, which then sends each
  // service exactly one SIGTERM (a second signal would make a service skip its graceful stop).
  const child = spawn(program, args, {
    cwd: root,
    env: { ...env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const prefix = `[${name}] `;
  for (const stream of [child.stdout!, child.stderr!]) {
    let pending = '';
    stream.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) process.stdout.write(prefix + line + '\n');
    });
  }
  child.once('exit', (code, signal) => {
    if (!stopping) {
      say(`${name} exited (${signal ?? code}); stopping everything`);
      void shutdown(1);
    }
  });
  children.push({ name, child });
  return child;
}

let stopped: Promise<never> | undefined;

/** Stops every child (one SIGTERM each) and exits; later calls wait for the first one. */
function shutdown(code: number): Promise<never> {
  return (stopped ??= stopAll(code));
}

async function stopAll(code: number): Promise<never> {
  stopping = true;
  say('stopping…');
  const outcomes = await Promise.all(
    children.map(
      ({ name, child }) =>
        new Promise<{ name: string; ok: boolean }>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null)
            return resolve({ name, ok: child.exitCode === 0 });
          const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
          // 'close', not 'exit': the child's last lines may still be in its pipes when it exits,
          // and this process exits right after (a busy machine lost the shutdown log that way).
          child.once('close', (exit) => {
            clearTimeout(timer);
            resolve({ name, ok: exit === 0 });
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  const unclean = outcomes.filter((outcome) => !outcome.ok).map((outcome) => outcome.name);
  if (unclean.length > 0) say(`did not stop cleanly: ${unclean.join(', ')}`);
  else say('stopped');
  return exitAfterOutput(code || (unclean.length > 0 ? 1 : 0));
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

async function ensureDatabase(): Promise<void> {
  const target = new URL(env.DATABASE_URL!);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(target);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      say(`created database ${name}`);
    }
  } finally {
    await client.end();
  }
}

async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(250);
  }
  throw new Error(`${what} did not come up within ${timeoutMs / 1000} s`);
}

/** Where the first admin key is kept for the CLI (`gleaner` reads it from here). */
const keyFile = path.join(root, '.gleaner', 'admin-key');

/**
 * The admin key of this machine's system: ADMIN_API_KEY when given; else the one an earlier
 * start created; else a new one, written to .gleaner/admin-key (readable by this user only)
 * and printed once. The API makes sure it exists (ADMIN_API_KEY).
 */
function adminKey(): { key: string; isNew: boolean; from: string } {
  if (env.ADMIN_API_KEY) return { key: env.ADMIN_API_KEY, isNew: false, from: 'ADMIN_API_KEY' };
  if (existsSync(keyFile)) {
    const saved = readFileSync(keyFile, 'utf8').trim();
    if (saved.length >= 32) return { key: saved, isNew: false, from: path.relative(root, keyFile) };
  }
  const key = `glk_${randomBytes(4).toString('hex')}_${randomBytes(32).toString('base64url')}`;
  mkdirSync(path.dirname(keyFile), { recursive: true, mode: 0o700 });
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  return { key, isNew: true, from: path.relative(root, keyFile) };
}

const admin = adminKey();
env.ADMIN_API_KEY = admin.key;
const authorization = `Bearer ${admin.key}`;

/** How often a request the API refused as busy (`429`, `503` with `Retry-After`) is sent again. */
const BUSY_RETRIES = 10;

/**
 * One request to the API, as the admin. A request refused as busy — the API sheds load while it
 * is still warming up on a loaded machine — is sent again after its `Retry-After`.
 */
async function api(
  method: string,
  pathname: string,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(`${apiUrl}${pathname}`, {
      method,
      headers:
        body === undefined
          ? { authorization }
          : { authorization, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const retryAfter = Number(response.headers.get('retry-after'));
    const busy =
      (response.status === 429 || response.status === 503) &&
      Number.isFinite(retryAfter) &&
      retryAfter >= 0 &&
      retryAfter <= 10;
    if (busy && attempt < BUSY_RETRIES) {
      await response.body?.cancel();
      await sleep(retryAfter * 1000);
      continue;
    }
    return { status: response.status, json: await response.json().catch(() => ({})) };
  }
}

async function main(): Promise<void> {
  await ensureDatabase();
  const migrate = spawn(process.execPath, ['services/api/dist/migrate.js'], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  const migrated = await new Promise<number | null>((resolve) => migrate.once('exit', resolve));
  if (migrated !== 0) throw new Error('migrations failed');

  const demo = run('demo-site', [
    process.execPath,
    'packages/testing/dist/bin/fixture-site.js',
    '--port',
    String(demoPort),
    '--postings',
    String(demoPostings),
  ]);
  void demo;
  const demoUrl = `http://127.0.0.1:${demoPort}`;
  await waitUntil(
    'the demo career site',
    async () => (await fetch(`${demoUrl}/robots.txt`)).ok,
    15_000,
  );

  run('api', [process.execPath, 'services/api/dist/main.js']);
  // Through its launcher, as compose runs it: node with the worker's V8 flags.
  run('worker', [path.join(root, 'services/worker/bin/worker')]);
  run('scheduler', [process.execPath, 'services/scheduler/dist/main.js']);
  await waitUntil('the API', async () => (await fetch(`${apiUrl}/health`)).ok);

  const registered = await api('POST', '/sites', {
    site_name: 'demo-careers',
    kind: 'career-site',
    config: { url: demoUrl, sitemapUrl: `${demoUrl}/sitemap.xml` },
    min_pause_seconds: 0,
    max_pause_seconds: 0,
  });
  if (registered.status !== 201 && registered.status !== 409) {
    throw new Error(`registering the demo site failed: ${JSON.stringify(registered.json)}`);
  }
  const scrape = await api('POST', '/jobs/scrape', { site_name: 'demo-careers' });
  let runId: string;
  if (scrape.status === 202) runId = scrape.json.data.run_id;
  else if (scrape.status === 409) runId = scrape.json.run_id;
  else throw new Error(`starting the demo scrape failed: ${JSON.stringify(scrape.json)}`);
  const statusUrl = `${apiUrl}/jobs/scrape/${runId}`;

  process.stdout.write(
    [
      '',
      'Gleaner is up.',
      `  API:               ${apiUrl}  (OpenAPI docs at ${apiUrl}/docs)`,
      admin.isNew
        ? `  Admin API key:     ${admin.key}  (shown once; kept in ${admin.from} for the CLI)`
        : `  Admin API key:     from ${admin.from}`,
      `  Bull Board:        ${apiUrl}/admin/queues  (any user name, the API key as password)`,
      `  Demo run:          ${apiUrl}/runs/${runId}`,
      `  Demo run status:   ${statusUrl}`,
      `  Demo career site:  ${demoUrl}`,
      '  CLI:               pnpm gleaner --help',
      'Press Ctrl-C to stop.',
      '',
    ].join('\n') + '\n',
  );

  // Report when the demo run finishes (counters only: `limit=0` leaves the postings out).
  for (let i = 0; i < 240 && !stopping; i += 1) {
    await sleep(500);
    const { json } = await api('GET', `/jobs/scrape/${runId}?limit=0`);
    const status = json?.data?.status;
    if (status && status !== 'queued' && status !== 'running') {
      say(
        `demo run ${json.data.run_id} ${status}: ${json.data.ready_count} ready, ${json.data.skipped_count} skipped, ${json.data.errors_count} errors`,
      );
      break;
    }
  }
}

main().catch(async (error: unknown) => {
  // Once stopping, a failed request to a service that is going away is expected.
  if (stopping) return;
  process.stderr.write(`gleaner: ${(error as Error).message}\n`);
  await shutdown(1);
});
