import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/** The repository root (packages/testing/{src,dist}/ → ../../..). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export type ServiceName = 'api' | 'worker' | 'scheduler';

export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  /** Every JSON log line the process wrote so far. */
  logs: Record<string, unknown>[];
  /** Raw stderr, for failure messages. */
  stderr(): string;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves with the exit code. */
  stop(timeoutMs?: number): Promise<number | null>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface StartServiceOptions {
  /**
   * Working directory (the repository root by default). A service reads `.env` from it for what
   * its environment leaves unset: a directory of its own keeps a developer's `.env` out.
   */
  cwd?: string;
  /** Also appends the process's raw stdout to this file, and its stderr to `<logFile>.stderr`. */
  logFile?: string;
  /**
   * Its own process group: a Ctrl-C in the terminal then reaches only the parent, which stops
   * its children in its own order (services before the Redis they need to shut down cleanly).
   */
  detached?: boolean;
}

/** Starts a built service (`services/<name>/dist/main.js`) as its own OS process. */
/**
 * The admin key every API process started here has (its ADMIN_API_KEY, unless the caller's env
 * names another): tests and benches send `adminHeaders`.
 */
export const TEST_ADMIN_API_KEY = 'gleaner-test-admin-key-0123456789abcdef';
export const adminHeaders: Readonly<{ authorization: string }> = {
  authorization: `Bearer ${TEST_ADMIN_API_KEY}`,
};

/**
 * Load shedding off, for an API process a test starts: tests share a loaded machine, where a fresh
 * process's event loop lags behind its compiling and a test's request would be answered 503. The
 * load-shedding tests and the benches keep the defaults.
 */
export const UNSHED_API_ENV: Readonly<Record<string, string>> = {
  API_MAX_IN_FLIGHT: '0',
  API_SHED_EVENT_LOOP_DELAY_MS: '0',
  API_SHED_POOL_WAITING: '0',
  API_SEARCH_CONCURRENCY: '0',
  API_RUN_STATUS_CONCURRENCY: '0',
};

export function startService(
  name: ServiceName,
  env: Record<string, string>,
  label: string = name,
  options: StartServiceOptions = {},
): ServiceProcess {
  const entry = path.join(repoRoot, 'services', name, 'dist', 'main.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`pnpm build\` first`);
  // A service with a launcher (the worker's gives node its V8 flags) starts through it, as compose
  // starts it; its `node` is then the one running this process, first in PATH.
  const launcher = path.join(repoRoot, 'services', name, 'bin', name);
  const [program, args] = existsSync(launcher) ? [launcher, []] : [process.execPath, [entry]];
  const child = spawn(program, args, {
    cwd: options.cwd ?? repoRoot,
    env: {
      PATH: [path.dirname(process.execPath), process.env.PATH].filter(Boolean).join(path.delimiter),
      LOG_PRETTY: 'false',
      LOG_LEVEL: 'info',
      ...(name === 'api' ? { ADMIN_API_KEY: TEST_ADMIN_API_KEY } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  if (options.logFile !== undefined) {
    child.stdout.pipe(createWriteStream(options.logFile, { flags: 'a' }));
    child.stderr.pipe(createWriteStream(`${options.logFile}.stderr`, { flags: 'a' }));
  }
  const logs: Record<string, unknown>[] = [];
  let pending = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line, unparsed: true });
      }
      newline = pending.indexOf('\n');
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-20_000);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return {
    name: label,
    child,
    logs,
    stderr: () => stderr,
    async stop(timeoutMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Thrown from a `waitFor` check to stop waiting at once (e.g. the process died). */
export class WaitAbortedError extends Error {}

/** Polls until `check` returns a value (not undefined), or throws after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T | undefined> | T | undefined,
  { timeoutMs = 30_000, intervalMs = 100, what = 'condition' } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      if (error instanceof WaitAbortedError) throw error;
      lastError = error;
    }
    await sleep(intervalMs);
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${lastError instanceof Error ? `: ${lastError.message}` : ''}`,
  );
}

/** Waits until a service wrote a log line with the given message. */
export async function waitForLog(
  service: ServiceProcess,
  msg: string,
  timeoutMs = 30_000,
): Promise<void> {
  await waitFor(
    () => {
      if (service.child.exitCode !== null) {
        throw new WaitAbortedError(
          `${service.name} exited with ${service.child.exitCode}: ${service.stderr()}`,
        );
      }
      return service.logs.some((line) => line.msg === msg) ? true : undefined;
    },
    { timeoutMs, what: `${service.name} to log "${msg}"` },
  );
}
