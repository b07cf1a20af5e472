import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './processes.js';

export interface RedisServerOptions {
  /** Its data directory (AOF files) and log file `redis-server.log`: a temp dir of the caller's. */
  dir: string;
  /** A free port by default; restarts keep the same one. */
  port?: number;
  /** REDIS_SERVER_BIN, else `/usr/bin/redis-server` (Debian's package), else `redis-server` on PATH. */
  binary?: string;
  /** How long a start may take before it fails. Default 15 s. */
  startTimeoutMs?: number;
  /** Its own process group, out of reach of a Ctrl-C meant for the parent (see startService). */
  detached?: boolean;
  /** More `redis-server` arguments, after its own: a cluster node's `--cluster-enabled yes`, for one. */
  args?: string[];
}

export interface RedisServer {
  port: number;
  url: string;
  dir: string;
  /** The running server's pid, or undefined while it is stopped. */
  pid(): number | undefined;
  /** Starts it again on the same port and directory (replaying its AOF); no-op when running. */
  start(): Promise<void>;
  /**
   * SIGTERM: Redis writes out its AOF and exits, and connections are refused until `start()`.
   * Resolves once the process has exited (SIGKILL after 10 s).
   */
  stop(): Promise<void>;
}

const DEFAULT_BINARY = '/usr/bin/redis-server';

/**
 * A `redis-server` child of its own, for checks that stop, restart or flush Redis: never the
 * shared server the tests use. AOF is on (`appendonly yes`, no RDB snapshots) so that a stop and
 * start keeps what was written, as a production Redis with persistence does; `noeviction` as
 * BullMQ requires. Stop it (`stop()`) before removing `dir`.
 */
export async function startRedisServer(options: RedisServerOptions): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const binary =
    options.binary ??
    process.env.REDIS_SERVER_BIN ??
    (existsSync(DEFAULT_BINARY) ? DEFAULT_BINARY : 'redis-server');
  const startTimeoutMs = options.startTimeoutMs ?? 15_000;
  const url = `redis://127.0.0.1:${port}/0`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  async function start(): Promise<void> {
    if (child !== undefined) return;
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      options.dir,
      '--save',
      '',
      '--appendonly',
      'yes',
      '--maxmemory-policy',
      'noeviction',
      '--daemonize',
      'no',
      ...(options.args ?? []),
    ];
    const started = spawn(binary, args, {
      cwd: options.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: options.detached ?? false,
    });
    const log = createWriteStream(path.join(options.dir, 'redis-server.log'), { flags: 'a' });
    started.stdout.pipe(log, { end: false });
    started.stderr.pipe(log, { end: false });
    let spawnError: Error | undefined;
    started.once('error', (error) => {
      spawnError = error;
    });
    exited = new Promise((resolve) =>
      started.once('exit', () => {
        if (child === started) child = undefined;
        resolve();
      }),
    );
    child = started;
    const probe = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => undefined);
    const deadline = Date.now() + startTimeoutMs;
    try {
      for (;;) {
        if (spawnError) {
          child = undefined;
          throw new Error(`cannot start ${binary}: ${spawnError.message}`);
        }
        if (child !== started)
          throw new Error(
            `${binary} exited at start: see ${path.join(options.dir, 'redis-server.log')}`,
          );
        try {
          if (probe.status !== 'ready') await probe.connect();
          // Replaying a large AOF answers LOADING until done: only PONG means ready.
          if ((await probe.ping()) === 'PONG') return;
        } catch {
          probe.disconnect();
        }
        if (Date.now() > deadline)
          throw new Error(`redis-server on port ${port} not ready within ${startTimeoutMs} ms`);
        await sleep(50);
      }
    } finally {
      probe.disconnect();
    }
  }

  async function stop(): Promise<void> {
    const running = child;
    if (running === undefined) return;
    running.kill('SIGTERM');
    const timer = setTimeout(() => running.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  await start();
  return { port, url, dir: options.dir, pid: () => child?.pid, start, stop };
}
