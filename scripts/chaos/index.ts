/**
 * Chaos checks, one module per name: `pnpm chaos <name> [options]` (= `tsx scripts/chaos/index.ts`).
 * Each starts its own redis-server, database, fixture sites and service processes, breaks
 * something on purpose (kills processes, flushes or stops Redis), and checks in Postgres that no
 * work was lost or done twice. Progress goes to stderr, one JSON object is the last stdout line,
 * and the exit code is non-zero when a check failed or crashed. They take minutes, so they stay
 * out of `npm test`. See scripts/chaos/README.md.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchUsageError, type BenchModule } from '../bench/bench.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface CheckEntry {
  summary: string;
  /** Built files the check loads or starts: checked before the check module is imported. */
  needs: string[];
  load(): Promise<BenchModule>;
}

/** Every check loads these (its own set-up, the fixture sites) and starts the worker. */
const common = [
  'packages/testing/dist/index.js',
  'packages/db/dist/index.js',
  'packages/queue/dist/index.js',
  'packages/config/dist/index.js',
  'services/worker/dist/main.js',
  'services/scheduler/dist/main.js',
];

const checks: Record<string, CheckEntry> = {
  kill: {
    summary: '3 runs of 2,000 postings while a random one of 4 workers is SIGKILLed every 2 s',
    needs: common,
    load: () => import('./kill.js'),
  },
  scheduler: {
    summary: '3 schedulers, one SIGKILLed every 20 s, 500 sites due every minute for 5 minutes',
    needs: common,
    load: () => import('./scheduler.js'),
  },
  flush: {
    summary: "FLUSHALL of the check's Redis in the middle of a 1,000-posting run",
    needs: common,
    load: () => import('./flush.js'),
  },
  compose: {
    summary:
      'docker-compose.yml up for real: demo run, 3 workers on a 1,000-posting run, one container killed',
    needs: ['packages/testing/dist/index.js', 'packages/testing/dist/bin/fixture-site.js'],
    load: () => import('./compose.js'),
  },
  'redis-outage': {
    summary: "the check's Redis down for 2 s, 15 s and 60 s, each in the middle of a run",
    needs: [...common, 'services/api/dist/main.js'],
    load: () => import('./redis-outage.js'),
  },
};

function usage(): string {
  const names = Object.entries(checks)
    .map(([name, entry]) => `  ${name.padEnd(13)} ${entry.summary}`)
    .join('\n');
  return `usage: pnpm chaos <name> [--help]\n\nchecks:\n${names}\n`;
}

async function main(): Promise<number> {
  const [name, ...rest] = process.argv.slice(2);
  if (name === undefined || name === '--help' || name === '-h') {
    process.stderr.write(usage());
    return name === undefined ? 2 : 0;
  }
  const entry = Object.hasOwn(checks, name) ? checks[name] : undefined;
  if (entry === undefined) {
    process.stderr.write(`chaos: unknown check "${name}"\n${usage()}`);
    return 2;
  }
  const missing = entry.needs.filter((file) => !existsSync(path.join(repoRoot, file)));
  if (missing.length > 0) {
    process.stderr.write(
      `chaos: ${name} needs built workspace packages, and these are missing:\n${missing.map((f) => `  ${f}\n`).join('')}` +
        'Run `pnpm build` (or `pnpm exec turbo run build`) first.\n',
    );
    return 2;
  }
  const check = await entry.load();
  return check.run(rest);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof BenchUsageError) {
      process.stderr.write(`chaos: ${error.message}\n${error.usage}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(
      `chaos: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
