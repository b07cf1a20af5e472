/**
 * Benchmarks, one module per name: `pnpm bench <name> [options]` (= `tsx scripts/bench/index.ts`).
 * Each bench prints progress to stderr and one JSON object as its last stdout line, and sets a
 * non-zero exit code when it failed or missed its targets. See scripts/bench/README.md.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchUsageError, type BenchModule } from './bench.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface BenchEntry {
  summary: string;
  /** Built files the bench loads or starts: checked before the bench module is imported. */
  needs: string[];
  load(): Promise<BenchModule>;
}

/** What the pipeline bench and the fleet bench load or start. */
const pipelineNeeds = [
  'packages/testing/dist/index.js',
  'packages/testing/dist/bin/fixture-site.js',
  'packages/db/dist/index.js',
  'packages/queue/dist/index.js',
  'services/worker/dist/main.js',
];

const benches: Record<string, BenchEntry> = {
  api: {
    summary:
      "the read routes' throughput with p99 < 50 ms (search < 100 ms) on 2,000,000 seeded postings, vs a bare Fastify + pg server",
    needs: [
      'packages/testing/dist/index.js',
      'packages/db/dist/index.js',
      'packages/config/dist/index.js',
      'services/api/dist/main.js',
      'services/api/dist/routes/posting-fields.js',
      'services/api/dist/routes/jobs/presenters.js',
    ],
    load: () => import('./api.js'),
  },
  pipeline: {
    summary:
      'fixture site → scrape → crawl → extract → Postgres, vs a bare undici+cheerio loop and Crawlee',
    needs: pipelineNeeds,
    load: () => import('./pipeline.js'),
  },
  fleet: {
    summary:
      "the pipeline bench's site run by 1, 2 and 4 worker processes: pages/s, CPU per page, Postgres connections",
    needs: pipelineNeeds,
    load: () => import('./fleet.js'),
  },
  politeness: {
    summary:
      '20 fixture sites × 4 workers: per-site request rate vs rate_limit_rps, and utilisation',
    needs: [
      'packages/testing/dist/index.js',
      'packages/db/dist/index.js',
      'packages/queue/dist/index.js',
      'services/worker/dist/main.js',
    ],
    load: () => import('./politeness.js'),
  },
  isolation: {
    summary: 'an unthrottled site alone vs next to a 1 request/s site with a 500-posting backlog',
    needs: [
      'packages/testing/dist/index.js',
      'packages/db/dist/index.js',
      'packages/queue/dist/index.js',
      'packages/config/dist/index.js',
      'services/worker/dist/main.js',
    ],
    load: () => import('./isolation.js'),
  },
  documents: {
    summary:
      '500 PDF and DOCX files through the API and one worker, vs a bare loop of the same parsers',
    needs: [
      'packages/testing/dist/index.js',
      'packages/db/dist/index.js',
      'packages/queue/dist/index.js',
      'packages/extraction/dist/documents/index.js',
      'services/api/dist/main.js',
      'services/worker/dist/main.js',
    ],
    load: () => import('./documents.js'),
  },
  llm: {
    summary:
      '500 resumes of 3 tenants through the LLM stage against a provider enforcing 30 requests and 6,000 tokens per minute',
    needs: [
      'packages/testing/dist/index.js',
      'packages/db/dist/index.js',
      'packages/queue/dist/index.js',
      'services/api/dist/main.js',
      'services/worker/dist/main.js',
    ],
    load: () => import('./llm.js'),
  },
  cadence: {
    summary:
      'a simulated fleet of 1,000 sites over 30 days, fixed interval against adaptive cadence at the same number of runs (goal: mean delay per change ≤ 0.9)',
    needs: ['packages/db/dist/index.js', 'packages/testing/dist/index.js'],
    load: () => import('./cadence.js'),
  },
  template: {
    summary:
      "reading a page with its site's template against today's reader on the same pages (goal: ≤ 2×), and learning 50 pages of 100 KB (< 2 s)",
    needs: ['packages/extraction/dist/index.js'],
    load: () => import('./template.js'),
  },
  scheduler: {
    summary: 'one scheduling pass over 100,000 sites with 1,000 due (goal: under 200 ms)',
    needs: [
      'packages/testing/dist/index.js',
      'packages/db/dist/index.js',
      'packages/queue/dist/index.js',
      'services/scheduler/dist/index.js',
    ],
    load: () => import('./scheduler.js'),
  },
};

function usage(): string {
  const names = Object.entries(benches)
    .map(([name, entry]) => `  ${name.padEnd(12)} ${entry.summary}`)
    .join('\n');
  return `usage: pnpm bench <name> [options]\n\nbenches:\n${names}\n`;
}

async function main(): Promise<number> {
  const [name, ...rest] = process.argv.slice(2);
  if (name === undefined || name === '--help' || name === '-h') {
    process.stderr.write(usage());
    return name === undefined ? 2 : 0;
  }
  const entry = Object.hasOwn(benches, name) ? benches[name] : undefined;
  if (entry === undefined) {
    process.stderr.write(`bench: unknown bench "${name}"\n${usage()}`);
    return 2;
  }
  const missing = entry.needs.filter((file) => !existsSync(path.join(repoRoot, file)));
  if (missing.length > 0) {
    process.stderr.write(
      `bench: ${name} needs built workspace packages, and these are missing:\n${missing.map((f) => `  ${f}\n`).join('')}` +
        'Run `pnpm build` (or `pnpm exec turbo run build`) first.\n',
    );
    return 2;
  }
  const bench = await entry.load();
  return bench.run(rest);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof BenchUsageError) {
      process.stderr.write(`bench: ${error.message}\n${error.usage}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(
      `bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
