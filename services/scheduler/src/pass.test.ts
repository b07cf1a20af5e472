import { PassThrough } from 'node:stream';
import {
  createDb,
  createRun,
  getSiteById,
  insertSite,
  type DbHandle,
  type SiteRow,
} from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  waitForRedis,
  type Queues,
} from '@gleaner/queue';
import {
  createTestDatabase,
  createTestRedisNamespace,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSiteLocks } from './locks.js';
import { createSchedulePass, type SchedulePass } from './pass.js';
import { createReconciler } from './reconciler.js';

let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
let redis: Redis;
let queues: Queues;
const logger = createLogger({
  service: 'scheduler',
  level: 'silent',
  destination: new PassThrough(),
});

function replica(name: string, connection = redis, replicaQueues = queues): SchedulePass {
  return createSchedulePass({
    db: handle.db,
    queues: replicaQueues,
    logger,
    replica: name,
    batchSize: 50,
    locks: createSiteLocks({
      redis: connection,
      prefix: namespace.prefix,
      holder: name,
      ttlMs: 5_000,
    }),
    reconciler: createReconciler({
      db: handle.db,
      queues: replicaQueues,
      logger,
      runDeadlineMs: 3_600_000,
      graceMs: 30_000,
    }),
  });
}

let siteCounter = 0;
async function site(changes: Partial<SiteRow> = {}): Promise<SiteRow> {
  siteCounter += 1;
  return insertSite(handle.db, {
    siteName: `scheduled-${siteCounter}`,
    kind: 'career-site',
    config: { url: 'https://example.com', sitemapUrl: 'https://example.com/sitemap.xml' },
    intervalMinutes: 60,
    nextRunAt: new Date(Date.now() - 1_000),
    ...changes,
  });
}

interface RunRecord {
  id: string;
  run_id: string;
  trigger: string;
  status: string;
  task_id: string | null;
  scheduled_for: Date | null;
}
const runsOf = async (siteId: string) =>
  (
    await handle.db.$client.query<RunRecord>(
      `SELECT id, run_id, trigger, status, task_id, scheduled_for FROM scrape_runs
       WHERE site_schedule_id = $1 ORDER BY created_at`,
      [siteId],
    )
  ).rows;
const scheduleOf = async (siteId: string) => (await getSiteById(handle.db, siteId))!;

beforeAll(async () => {
  database = await createTestDatabase('scheduler-pass');
  namespace = createTestRedisNamespace('scheduler-pass');
  handle = createDb({ url: database.url, poolMax: 6 });
  redis = createRedisConnection(namespace.url, 'producer');
  await waitForRedis(redis);
  queues = createQueues(redis, namespace.prefix);
});

beforeEach(async () => {
  // Each test sees only its own sites as due.
  await handle.db.$client.query('UPDATE site_schedules SET enabled = false');
});

afterAll(async () => {
  await closeQueues(queues);
  redis.disconnect();
  await handle.close();
  await namespace.cleanup();
  await database.drop();
});

describe('a scheduling pass', () => {
  it('starts a run for each due site, records the slot, and moves the schedule on with jitter', async () => {
    const due = await Promise.all([site(), site(), site()]);
    const later = await site({ nextRunAt: new Date(Date.now() + 3_600_000) });
    const disabled = await site({ enabled: false });
    const before = Date.now();

    const report = await replica('a')('interval');

    expect(report).toMatchObject({ startedCount: 3, redis: 'ok', postgres: 'ok', errors: [] });
    for (const row of due) {
      const [run] = await runsOf(row.id);
      expect(run).toMatchObject({
        trigger: 'schedule',
        status: 'queued',
        scheduled_for: row.nextRunAt,
      });
      expect(run!.run_id).toMatch(/^sched_/);
      // Its scrape job is queued under the id the run records.
      expect(await queues.scrape.getJobState(run!.task_id!)).not.toBe('unknown');
      const schedule = await scheduleOf(row.id);
      expect(schedule.lastRunAt!.getTime()).toBeGreaterThanOrEqual(before - 1_000);
      const nextInMinutes = (schedule.nextRunAt!.getTime() - before) / 60_000;
      expect(nextInMinutes).toBeGreaterThanOrEqual(54 - 0.1);
      expect(nextInMinutes).toBeLessThanOrEqual(66 + 0.1);
    }
    expect(await runsOf(later.id)).toHaveLength(0);
    expect(await runsOf(disabled.id)).toHaveLength(0);

    // Nothing is due any more: the next pass starts nothing.
    expect((await replica('a')('interval')).startedCount).toBe(0);
  });

  it('starts a site whose next run time Postgres wrote, at microsecond precision', async () => {
    const row = await site();
    await handle.db.$client.query(
      `UPDATE site_schedules SET next_run_at = now() - interval '1.234567 seconds' WHERE id = $1`,
      [row.id],
    );
    expect((await replica('a')('interval')).startedCount).toBe(1);
    expect(await runsOf(row.id)).toHaveLength(1);
  });

  it('skips the slot of a site whose run is still active', async () => {
    const busy = await site();
    await createRun(handle.db, { siteId: busy.id, trigger: 'manual' });
    const report = await replica('a')('interval');
    expect(report.startedCount).toBe(0);
    expect(report.skipped).toEqual({ 'active-run': 1 });
    expect((await runsOf(busy.id)).map((run) => run.trigger)).toEqual(['manual']);
    expect((await scheduleOf(busy.id)).nextRunAt!.getTime()).toBeGreaterThan(Date.now());
  });

  it('starts each due site once when replicas pass at the same time', async () => {
    const sites = await Promise.all(Array.from({ length: 120 }, () => site()));
    const connections = [0, 1, 2].map(() => createRedisConnection(namespace.url, 'producer'));
    await Promise.all(connections.map((connection) => waitForRedis(connection)));
    const replicaQueues = connections.map((connection) =>
      createQueues(connection, namespace.prefix),
    );
    const passes = connections.map((connection, index) =>
      replica(`r${index}`, connection, replicaQueues[index]),
    );
    const reports = await Promise.all(passes.map((pass) => pass('interval')));
    expect(reports.flatMap((report) => report.errors)).toEqual([]);
    await Promise.all(replicaQueues.map((q) => closeQueues(q)));
    for (const connection of connections) connection.disconnect();

    expect(reports.reduce((sum, report) => sum + report.startedCount, 0)).toBe(120);
    const { rows } = await handle.db.$client.query<{ site: string; runs: number }>(
      `SELECT site_schedule_id AS site, count(*)::int AS runs FROM scrape_runs
       WHERE site_schedule_id = ANY($1::uuid[]) GROUP BY 1`,
      [sites.map((s) => s.id)],
    );
    expect(rows).toHaveLength(120);
    expect(rows.every((row) => row.runs === 1)).toBe(true);
  });

  it('makes a second run for the same site and slot impossible in the database', async () => {
    const row = await site();
    await replica('a')('interval');
    const [run] = await runsOf(row.id);
    await handle.db.$client.query(`UPDATE scrape_runs SET status = 'succeeded' WHERE id = $1`, [
      run!.id,
    ]);
    await expect(
      handle.db.$client.query(
        `INSERT INTO scrape_runs (run_id, site_schedule_id, trigger, scheduled_for)
         VALUES ('sched_again', $1, 'schedule', $2)`,
        [row.id, run!.scheduled_for],
      ),
    ).rejects.toThrow(/scrape_runs_site_slot/);
  });

  it('starts one named site now, due or not, and reports an unknown one', async () => {
    const notDue = await site({ nextRunAt: new Date(Date.now() + 3_600_000) });
    const report = await replica('a')('request', notDue.siteName);
    expect(report).toMatchObject({ trigger: 'request', site: notDue.siteName, startedCount: 1 });
    expect(await runsOf(notDue.id)).toHaveLength(1);

    const unknown = await replica('a')('request', 'no-such-site');
    expect(unknown.startedCount).toBe(0);
    expect(unknown.errors).toEqual(['site "no-such-site" is not registered']);
  });

  it('says Redis is unavailable and leaves the sites due for the next pass', async () => {
    const waiting = await site();
    // Nothing listens on port 1: every command fails at once (producers do not queue commands).
    const down = createRedisConnection('redis://127.0.0.1:1/0', 'producer');
    down.on('error', () => {});
    const downQueues = createQueues(down, namespace.prefix);
    for (const queue of Object.values(downQueues)) queue.on('error', () => {});
    const report = await replica('down', down, downQueues)('interval');
    await closeQueues(downQueues).catch(() => undefined);
    down.disconnect();

    expect(report).toMatchObject({ redis: 'unavailable', postgres: 'ok', startedCount: 0 });
    expect(report.errors[0]).toMatch(/^redis: /);
    expect(await runsOf(waiting.id)).toHaveLength(0);
    // Redis is back: the next pass starts it.
    expect((await replica('a')('interval')).startedCount).toBe(1);
  });

  it('says Postgres is unavailable, and the next pass with Postgres back starts the site', async () => {
    const waiting = await site();
    // Nothing listens on port 1: every query fails at once.
    const downDb = createDb({ url: 'postgres://postgres@127.0.0.1:1/none', poolMax: 1 });
    const pass = createSchedulePass({
      db: downDb.db,
      queues,
      logger,
      replica: 'no-postgres',
      batchSize: 50,
      locks: createSiteLocks({
        redis,
        prefix: namespace.prefix,
        holder: 'no-postgres',
        ttlMs: 5_000,
      }),
      reconciler: createReconciler({
        db: downDb.db,
        queues,
        logger,
        runDeadlineMs: 3_600_000,
        graceMs: 30_000,
      }),
    });
    const report = await pass('interval');
    await downDb.close();
    expect(report).toMatchObject({ postgres: 'unavailable', redis: 'ok', startedCount: 0 });
    expect(report.errors[0]).toMatch(/^postgres: /);
    expect((await replica('a')('interval')).startedCount).toBe(1);
    expect(await runsOf(waiting.id)).toHaveLength(1);
  });
});
