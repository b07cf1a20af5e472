/**
 * `pnpm chaos compose`: docker-compose.yml brought up for real, and a worker container killed in
 * the middle of a run.
 *
 * 1. The engine: compose/engine.sh installs Debian's docker.io, docker-compose (v1) and
 *    debootstrap when missing, starts dockerd, and builds the base images the compose file and
 *    the Dockerfile name when they are absent (no registry is needed).
 * 2. A copy of docker-compose.yml and of the Dockerfile, changed only where compose v1 and the
 *    engine's built-in BuildKit frontend cannot read them: the top-level `name:` (the project is
 *    given with `-p`) and the `# syntax=` line (it fetches a frontend from Docker Hub). An
 *    override file adds what the check itself needs: a fixed subnet for the compose network, so
 *    that the fixture sites can listen on its gateway, and HTTP_ALLOWED_PEERS for those two sites
 *    on the API and the workers (both refuse private addresses otherwise). ADMIN_API_KEY comes from
 *    the environment, as users give it.
 * 3. `docker-compose build`, then `up -d`: the stack as users run it (redis, postgres, migrate,
 *    api, worker ×2, scheduler), waited for until the API answers /health.
 * 4. The demo site (CHAOS_DEMO_POSTINGS, 50) registered and scraped through the API: the run must
 *    end `succeeded` with every posting ready.
 * 5. `--scale worker=3`, then a run of CHAOS_POSTINGS (1000) postings at CHAOS_RATE_RPS (50)
 *    requests a second; once a quarter of it is ready, one worker container is SIGKILLed
 *    (`docker kill`). The run must end `succeeded` with every posting ready and none pending,
 *    be finalized once (one `run finalized` line in the logs of every container), have one
 *    completed crawl job per posting, and each of the 3 workers must have completed some of them
 *    (BullMQ's `processedBy`, which starts with the container's hostname).
 * 6. The same site registered again and scraped; once a quarter of it is ready,
 *    `docker-compose stop` (every service, as users stop it), then `start`. The run must end
 *    `succeeded` with every posting ready, none pending, finalized once.
 * 7. `docker-compose down -v` (also when a step fails; CHAOS_KEEP=1 leaves the stack up).
 *
 * Last stdout line: {"pass","seconds":{…},"demo":{…},"run":{…},"workers":{…},"disk":{…}}.
 * Exit code 1 when a step failed or a check missed.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { freePort, repoRoot } from '@gleaner/testing';
import type { BenchModule } from '../bench/bench.js';
import { startFixtureSite } from '../bench/pipeline.js';
import {
  benchRun,
  integerFrom,
  report,
  round2,
  wantsHelp,
  type Teardown,
} from '../bench/support.js';
import { progressFor } from './support.js';

const USAGE = `usage: pnpm chaos compose
environment: CHAOS_POSTINGS (1000), CHAOS_DEMO_POSTINGS (50), CHAOS_WORKERS (3),
  CHAOS_RATE_RPS (50), CHAOS_RUN_TIMEOUT_MS (600000), CHAOS_KEEP=1 (leave the stack up)
`;

const PROJECT = 'gleaner-chaos';
/** The compose network's subnet in the override; its gateway is the host, where the sites listen. */
const SUBNET = '172.31.250.0/24';
const GATEWAY = '172.31.250.1';
const API_URL = 'http://127.0.0.1:8000';

const progress = progressFor('compose');
const execFileAsync = promisify(execFile);

interface Settings {
  postings: number;
  demoPostings: number;
  workers: number;
  rateRps: number;
  runTimeoutMs: number;
  keep: boolean;
}

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  return {
    postings: integerFrom('CHAOS_POSTINGS', 1000, { min: 100 }, USAGE),
    demoPostings: integerFrom('CHAOS_DEMO_POSTINGS', 50, { min: 1 }, USAGE),
    workers: integerFrom('CHAOS_WORKERS', 3, { min: 2, max: 10 }, USAGE),
    rateRps: integerFrom('CHAOS_RATE_RPS', 50, { min: 1, max: 1000 }, USAGE),
    runTimeoutMs: integerFrom('CHAOS_RUN_TIMEOUT_MS', 600_000, { min: 10_000 }, USAGE),
    keep: ['1', 'true'].includes(process.env.CHAOS_KEEP ?? ''),
  };
}

/** Runs a command; its output, and an error naming the command and its stderr when it fails. */
async function sh(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, { env, maxBuffer: 256 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(
      `${command} ${args.join(' ')} failed: ${(stderr || message).trim().slice(-2000)}`,
    );
  }
}

/** Runs compose/engine.sh, its progress passed on; resolves with the docker binary to use. */
function prepareEngine(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(repoRoot, 'scripts/chaos/compose/engine.sh')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.once('error', reject);
    child.once('exit', (code) => {
      const docker = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && docker) resolve(docker);
      else reject(new Error(`compose/engine.sh exited with ${code}`));
    });
  });
}

/** The copies compose v1 can read, and the check's override; the compose arguments that use them. */
async function writeComposeFiles(work: string, peers: string): Promise<string[]> {
  const dockerfile = await readFile(path.join(repoRoot, 'Dockerfile'), 'utf8');
  await writeFile(path.join(work, 'Dockerfile'), dockerfile.replace(/^# syntax=.*\n/m, ''));
  const compose = parse(await readFile(path.join(repoRoot, 'docker-compose.yml'), 'utf8')) as {
    name?: string;
    services: Record<string, { build?: unknown }>;
  };
  delete compose.name;
  for (const service of Object.values(compose.services))
    if (service.build !== undefined)
      service.build = { context: repoRoot, dockerfile: path.join(work, 'Dockerfile') };
  // YAML 1.1, as compose v1 reads it: `'no'` and `'yes'` stay quoted strings, not booleans.
  await writeFile(path.join(work, 'docker-compose.yml'), stringify(compose, { version: '1.1' }));
  const override = {
    networks: { default: { ipam: { config: [{ subnet: SUBNET }] } } },
    services: {
      // The API checks a site's URL when it is registered; the workers fetch it.
      api: { environment: { HTTP_ALLOWED_PEERS: peers } },
      worker: { environment: { HTTP_ALLOWED_PEERS: peers } },
    },
  };
  await writeFile(path.join(work, 'chaos.override.yml'), stringify(override, { version: '1.1' }));
  return [
    '-p',
    PROJECT,
    '-f',
    path.join(work, 'docker-compose.yml'),
    '-f',
    path.join(work, 'chaos.override.yml'),
  ];
}

interface RunStatus {
  run_id: string;
  status: string;
  ready_count: number;
  skipped_count: number;
  errors_count: number;
}

async function api<T>(adminKey: string, method: string, route: string, body?: unknown) {
  const response = await fetch(`${API_URL}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${adminKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json().catch(() => null)) as T;
  return { status: response.status, json };
}

async function waitUntil<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError instanceof Error ? `: ${lastError.message}` : ''}`,
      );
    await sleep(500);
  }
}

/** Registers a fixture site and starts its run; resolves with the run id. */
async function startRun(
  adminKey: string,
  siteName: string,
  url: string,
  sitemapUrl: string,
  rateRps: number | null,
): Promise<string> {
  const registered = await api(adminKey, 'POST', '/sites', {
    site_name: siteName,
    kind: 'career-site',
    config: { url, sitemapUrl },
    min_pause_seconds: 0,
    max_pause_seconds: 0,
    rate_limit_rps: rateRps,
    max_concurrency: 16,
  });
  if (registered.status !== 201)
    throw new Error(
      `registering ${siteName}: ${registered.status} ${JSON.stringify(registered.json)}`,
    );
  const scrape = await api<{ data: { run_id: string } }>(adminKey, 'POST', '/jobs/scrape', {
    site_name: siteName,
  });
  if (scrape.status !== 202)
    throw new Error(`starting ${siteName}'s run: ${scrape.status} ${JSON.stringify(scrape.json)}`);
  return scrape.json.data.run_id;
}

async function runStatus(adminKey: string, runId: string): Promise<RunStatus> {
  const { status, json } = await api<{ data: RunStatus }>(
    adminKey,
    'GET',
    `/jobs/scrape/${runId}?limit=0`,
  );
  if (status !== 200) throw new Error(`run ${runId}: ${status} ${JSON.stringify(json)}`);
  return json.data;
}

async function bench(settings: Settings, teardown: Teardown): Promise<number> {
  const started = performance.now();
  const seconds: Record<string, number> = {};
  const lap = (name: string, from: number) =>
    (seconds[name] = round2((performance.now() - from) / 1000));
  const failures: string[] = [];

  let step = performance.now();
  const docker = await prepareEngine();
  lap('engine', step);
  // compose v1 builds through the docker CLI it finds first in PATH: Debian's, with BuildKit.
  const env = {
    ...process.env,
    PATH: `${path.dirname(docker)}:${process.env.PATH ?? ''}`,
    DOCKER_BUILDKIT: '1',
    COMPOSE_DOCKER_CLI_BUILD: '1',
  };
  const probe = await fetch(`${API_URL}/health`).then(
    () => true,
    () => false,
  );
  if (probe) throw new Error(`${API_URL} already answers: stop what listens on port 8000 first`);

  const work = await mkdtemp(path.join(tmpdir(), 'gleaner-compose-'));
  teardown.add('remove the compose copies', () => rm(work, { recursive: true, force: true }));
  const demoPort = await freePort();
  const runPort = await freePort();
  const adminKey = randomBytes(24).toString('base64url');
  const composeArgs = await writeComposeFiles(work, `${GATEWAY}:${demoPort},${GATEWAY}:${runPort}`);
  // The admin key as users give it: compose refuses to start without one.
  const composeEnv = { ...env, ADMIN_API_KEY: adminKey };
  const compose = (args: string[]) => sh('docker-compose', [...composeArgs, ...args], composeEnv);
  if (!settings.keep)
    teardown.add('docker-compose down -v', () => compose(['down', '-v', '--remove-orphans']));

  step = performance.now();
  progress('docker-compose build (the app image)');
  await compose(['build']);
  lap('build', step);

  step = performance.now();
  progress('docker-compose up -d');
  await compose(['up', '-d', '--no-build']);
  await waitUntil('the API to answer /health', 180_000, async () =>
    (await fetch(`${API_URL}/health`)).ok ? true : undefined,
  );
  lap('up', step);
  progress(`stack up in ${seconds.up} s`);

  // The compose network exists now, and with it its gateway address on this host.
  const demoSite = await startFixtureSite({
    postings: settings.demoPostings,
    pageBytes: 8000,
    host: GATEWAY,
    port: demoPort,
    seed: 11,
  });
  teardown.add('stop the demo site', () => demoSite.stop());
  const runSite = await startFixtureSite({
    postings: settings.postings,
    pageBytes: 8000,
    host: GATEWAY,
    port: runPort,
    seed: 12,
  });
  teardown.add('stop the run site', () => runSite.stop());

  step = performance.now();
  const demoRunId = await startRun(adminKey, 'chaos-demo', demoSite.url, demoSite.sitemapUrl, null);
  const demo = await waitUntil('the demo run to end', settings.runTimeoutMs, async () => {
    const status = await runStatus(adminKey, demoRunId);
    return status.status === 'queued' || status.status === 'running' ? undefined : status;
  });
  lap('demo', step);
  progress(
    `demo run ${demo.status}: ${demo.ready_count} ready, ${demo.errors_count} errors in ${seconds.demo} s`,
  );
  if (demo.status !== 'succeeded' || demo.ready_count !== settings.demoPostings)
    failures.push(
      `demo run ended ${demo.status} with ${demo.ready_count}/${settings.demoPostings} ready`,
    );

  step = performance.now();
  progress(`scaling to ${settings.workers} workers`);
  await compose([
    'up',
    '-d',
    '--no-build',
    '--no-recreate',
    '--scale',
    `worker=${settings.workers}`,
    'worker',
  ]);
  const workerIds = await waitUntil(`${settings.workers} healthy workers`, 180_000, async () => {
    const ids = (await compose(['ps', '-q', 'worker'])).trim().split('\n').filter(Boolean);
    if (ids.length !== settings.workers) return undefined;
    const health = await sh(docker, ['inspect', '--format', '{{.State.Health.Status}}', ...ids]);
    return health
      .trim()
      .split('\n')
      .every((state) => state === 'healthy')
      ? ids
      : undefined;
  });
  lap('scale', step);
  const hostnames = new Map<string, string>();
  for (const id of workerIds)
    hostnames.set(
      (await sh(docker, ['inspect', '--format', '{{.Config.Hostname}}', id])).trim(),
      id,
    );

  step = performance.now();
  const runId = await startRun(
    adminKey,
    'chaos-fleet',
    runSite.url,
    runSite.sitemapUrl,
    settings.rateRps,
  );
  progress(`run ${runId}: ${settings.postings} postings at ${settings.rateRps} requests/s`);
  let killed: string | undefined;
  const final = await waitUntil('the run to end', settings.runTimeoutMs, async () => {
    const status = await runStatus(adminKey, runId);
    if (killed === undefined && status.ready_count >= settings.postings / 4) {
      killed = workerIds[Math.floor(Math.random() * workerIds.length)]!;
      await sh(docker, ['kill', killed]);
      progress(`killed worker container ${killed.slice(0, 12)} at ${status.ready_count} ready`);
    }
    return status.status === 'queued' || status.status === 'running' ? undefined : status;
  });
  lap('run', step);
  progress(
    `run ${final.status}: ${final.ready_count} ready, ${final.errors_count} errors in ${seconds.run} s`,
  );
  if (killed === undefined) failures.push('the run ended before a worker could be killed mid-run');
  if (final.status !== 'succeeded' || final.ready_count !== settings.postings)
    failures.push(
      `run ended ${final.status} with ${final.ready_count}/${settings.postings} ready, ${final.errors_count} errors`,
    );

  // Postgres, read inside its container (it is not published).
  const psql = async (sql: string) =>
    (
      await compose([
        'exec',
        '-T',
        'postgres',
        'psql',
        '-U',
        'gleaner',
        '-d',
        'gleaner',
        '-At',
        '-c',
        sql,
      ])
    ).trim();
  /** A run's row id, its postings still pending, and its finalizations in every container's log. */
  const settled = async (publicId: string) => {
    const rowId = await psql(
      `SELECT id FROM scrape_runs WHERE run_id = '${publicId.replace(/'/g, "''")}'`,
    );
    const pendingCount = Number(
      await psql(`SELECT count(*) FROM postings WHERE run_id = '${rowId}' AND status = 'pending'`),
    );
    const logs = await compose([
      'logs',
      '--no-color',
      '--no-log-prefix',
      'worker',
      'scheduler',
      'api',
    ]).catch(() => compose(['logs', '--no-color', 'worker', 'scheduler', 'api']));
    // A worker's "run finalized", or the reconciler's "run finalized by the reconciler".
    const finalizations = logs
      .split('\n')
      .filter((line) => line.includes('run finalized'))
      .map((line) => {
        try {
          return JSON.parse(line.slice(line.indexOf('{'))) as {
            msg?: string;
            run?: string;
            runId?: string;
          };
        } catch {
          return {};
        }
      })
      .filter(
        (line) =>
          (line.msg === 'run finalized' || line.msg?.startsWith('run finalized ')) &&
          (line.run === publicId || line.runId === publicId || line.runId === rowId),
      ).length;
    return { rowId, pending: pendingCount, finalized: finalizations };
  };
  const { rowId: runRowId, pending, finalized } = await settled(runId);
  if (pending !== 0) failures.push(`${pending} postings of the run are still pending`);
  if (finalized !== 1) failures.push(`the run was finalized ${finalized} times in the logs`);

  // Who completed the run's crawl jobs: BullMQ stamps each with its worker's name (hostname-pid).
  const script = `local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local job = redis.call('HMGET', ARGV[1] .. id, 'pb', 'data')
  if job[2] and string.find(job[2], ARGV[2], 1, true) then table.insert(out, job[1] or '') end
end
return out`;
  const processedBy = (
    await compose([
      'exec',
      '-T',
      'redis',
      'redis-cli',
      '--raw',
      'EVAL',
      script,
      '1',
      'gleaner:crawl:completed',
      'gleaner:crawl:',
      runRowId,
    ])
  )
    .trim()
    .split('\n')
    .filter(Boolean);
  const perWorker: Record<string, number> = {};
  for (const [hostname, id] of hostnames) {
    perWorker[id.slice(0, 12)] = processedBy.filter((name) =>
      name.startsWith(`${hostname}-`),
    ).length;
  }
  for (const [id, count] of Object.entries(perWorker))
    if (count === 0) failures.push(`worker container ${id} completed none of the run's crawl jobs`);
  progress(`completed crawl jobs per worker container: ${JSON.stringify(perWorker)}`);
  // A job id per posting: a job the killed worker held is completed once, by another worker.
  if (processedBy.length !== settings.postings)
    failures.push(`${processedBy.length} completed crawl jobs for ${settings.postings} postings`);

  // `docker-compose stop` in the middle of a run, then `start`: every service finishes or
  // releases its work within its grace period, Redis keeps its jobs (AOF) and Postgres its rows,
  // and the run ends as if nothing happened.
  step = performance.now();
  const stopRunId = await startRun(
    adminKey,
    'chaos-stop',
    runSite.url,
    runSite.sitemapUrl,
    settings.rateRps,
  );
  const stoppedAt = await waitUntil(
    'a quarter of the run to be ready',
    settings.runTimeoutMs,
    async () => {
      const status = await runStatus(adminKey, stopRunId);
      return status.ready_count >= settings.postings / 4 ? status.ready_count : undefined;
    },
  );
  const stopping = performance.now();
  await compose(['stop']);
  const stopSeconds = round2((performance.now() - stopping) / 1000);
  progress(`docker-compose stop at ${stoppedAt} ready took ${stopSeconds} s; starting again`);
  await compose(['start']);
  await waitUntil('the API to answer /health again', 180_000, async () =>
    (await fetch(`${API_URL}/health`)).ok ? true : undefined,
  );
  const afterStop = await waitUntil('the stopped run to end', settings.runTimeoutMs, async () => {
    const status = await runStatus(adminKey, stopRunId);
    return status.status === 'queued' || status.status === 'running' ? undefined : status;
  });
  lap('stopRun', step);
  const stopChecks = await settled(stopRunId);
  progress(
    `stopped run ${afterStop.status}: ${afterStop.ready_count} ready, ${afterStop.errors_count} errors, ${stopChecks.pending} pending, finalized ${stopChecks.finalized}×`,
  );
  if (afterStop.status !== 'succeeded' || afterStop.ready_count !== settings.postings)
    failures.push(
      `the run stopped with compose ended ${afterStop.status} with ${afterStop.ready_count}/${settings.postings} ready, ${afterStop.errors_count} errors`,
    );
  if (stopChecks.pending !== 0)
    failures.push(`${stopChecks.pending} postings of the stopped run are still pending`);
  if (stopChecks.finalized !== 1)
    failures.push(`the stopped run was finalized ${stopChecks.finalized} times in the logs`);

  const disk = await sh('du', ['-sb', '/var/lib/docker']).then(
    (out) => round2(Number(out.split('\t')[0]) / 1e9),
    () => null,
  );
  seconds.total = round2((performance.now() - started) / 1000);
  return report(progress, failures, {
    pass: failures.length === 0,
    seconds,
    demo: {
      runId: demoRunId,
      status: demo.status,
      ready: demo.ready_count,
      postings: settings.demoPostings,
    },
    run: {
      runId,
      status: final.status,
      ready: final.ready_count,
      errors: final.errors_count,
      pending,
      finalizedLogLines: finalized,
      postings: settings.postings,
      killed: killed?.slice(0, 12) ?? null,
    },
    workers: perWorker,
    completedCrawlJobs: processedBy.length,
    stop: {
      runId: stopRunId,
      stoppedAtReady: stoppedAt,
      stopSeconds,
      status: afterStop.status,
      ready: afterStop.ready_count,
      errors: afterStop.errors_count,
      pending: stopChecks.pending,
      finalizedLogLines: stopChecks.finalized,
    },
    disk: { dockerGB: disk },
  });
}

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, bench);
