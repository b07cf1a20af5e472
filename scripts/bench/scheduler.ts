/**
 * `pnpm bench scheduler`: one scheduling pass over 100,000 registered sites of which 1,000 are
 * due must take under 200 ms: the pass costs what is due, not what is registered. Each round
 * makes another 1,000 sites due and times one pass of a replica (due query, Redis locks, one
 * statement that creates the runs and moves the schedules on, the bulk add of their scrape jobs,
 * the reconciler's look at the active runs). Last stdout line:
 * `{"sites":100000,"due":1000,"passMs":…}` (the median round).
 */
import { PassThrough } from 'node:stream';
import { createLogger } from '@gleaner/logger';
import { createRedisConnection, waitForRedis } from '@gleaner/queue';
import { createReconciler, createSchedulePass, createSiteLocks } from '@gleaner/scheduler';
import type { BenchModule } from './bench.js';
import {
  benchRun,
  createBenchStack,
  integerFrom,
  progressFor,
  report,
  wantsHelp,
} from './support.js';

const TARGET_PASS_MS = 200;

const usage = `usage: pnpm bench scheduler

Environment:
  BENCH_SITES    registered sites (default 100000)
  BENCH_DUE      sites due per pass (default 1000)
  BENCH_ROUNDS   timed passes, each over another set of due sites (default 5)
Target: the median pass under ${TARGET_PASS_MS} ms with every due site started.
`;

const progress = progressFor('scheduler');

interface Settings {
  sites: number;
  due: number;
  rounds: number;
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export const run: BenchModule['run'] = benchRun<Settings>(
  progress,
  usage,
  (args) =>
    wantsHelp(args, usage)
      ? 'help'
      : {
          sites: integerFrom('BENCH_SITES', 100_000, { min: 1_000, max: 2_000_000 }, usage),
          due: integerFrom('BENCH_DUE', 1_000, { min: 1, max: 10_000 }, usage),
          rounds: integerFrom('BENCH_ROUNDS', 5, { min: 1, max: 50 }, usage),
        },
  async ({ sites, due, rounds }, teardown) => {
    if (due * rounds > sites) throw new Error('BENCH_DUE × BENCH_ROUNDS exceeds BENCH_SITES');
    const stack = await createBenchStack('scheduler', teardown, { poolMax: 4 });
    const { db } = stack.handle;
    const redis = createRedisConnection(stack.workerEnv.REDIS_URL!, 'producer');
    teardown.add('disconnect lock connection', async () => redis.disconnect());
    await waitForRedis(redis);

    progress(`registering ${sites} sites, none due`);
    const started = performance.now();
    await db.$client.query(
      `INSERT INTO site_schedules (site_name, kind, config, interval_minutes, next_run_at)
       SELECT 'site-' || i, 'career-site',
              jsonb_build_object('url', 'https://site-' || i || '.example', 'sitemapUrl',
                                 'https://site-' || i || '.example/sitemap.xml'),
              60, now() + make_interval(mins => 60 + (i % 1440))
       FROM generate_series(1, $1::int) AS i`,
      [sites],
    );
    await db.$client.query('ANALYZE site_schedules');
    progress(`registered in ${Math.round(performance.now() - started)} ms`);

    const logger = createLogger({
      service: 'scheduler',
      level: 'silent',
      destination: new PassThrough(),
    });
    const prefix = stack.workerEnv.QUEUE_PREFIX!;
    const pass = createSchedulePass({
      db,
      queues: stack.queues,
      logger,
      replica: 'bench',
      batchSize: 1_000,
      locks: createSiteLocks({ redis, prefix, holder: 'bench', ttlMs: 10_000 }),
      reconciler: createReconciler({
        db,
        queues: stack.queues,
        logger,
        runDeadlineMs: 24 * 3_600_000,
        graceMs: 30_000,
      }),
    });

    const passes: number[] = [];
    const failures: string[] = [];
    for (let round = 0; round < rounds; round += 1) {
      // Another `due` sites fall due (spread over the last minute), as time would make them.
      await db.$client.query(
        `UPDATE site_schedules SET next_run_at = now() - make_interval(secs => random() * 60)
         WHERE site_name = ANY(SELECT 'site-' || i FROM generate_series($1::int, $2::int) AS i)`,
        [round * due + 1, (round + 1) * due],
      );
      const result = await pass('interval');
      passes.push(result.durationMs);
      progress(
        `round ${round + 1}: ${result.startedCount} of ${result.due} due started in ${result.durationMs} ms` +
          (result.errors.length > 0 ? ` (errors: ${result.errors.join('; ')})` : ''),
      );
      if (result.startedCount !== due)
        failures.push(`round ${round + 1} started ${result.startedCount} of ${due} due sites`);
      if (result.errors.length > 0)
        failures.push(`round ${round + 1}: ${result.errors.join('; ')}`);
    }
    const passMs = median(passes);
    if (passMs >= TARGET_PASS_MS)
      failures.push(`median pass took ${passMs} ms (target < ${TARGET_PASS_MS} ms)`);
    return report(progress, failures, { sites, due, passMs, passesMs: passes });
  },
);
