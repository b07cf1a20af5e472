/**
 * `pnpm chaos scheduler`: scheduler replicas killed at random start every due site's run once,
 * on time, and never two runs of a site at once.
 *
 * CHAOS_SITES (500) sites of one posting each (all pointing at one fixture site), due every
 * minute (`interval_minutes = 1`), their first `next_run_at` spread over the first minute;
 * CHAOS_SCHEDULERS (3) scheduler processes, one SIGKILLed at random every CHAOS_KILL_EVERY_MS
 * (20000) and restarted at once, for CHAOS_DURATION_MS (300000); CHAOS_WORKERS (2) workers
 * execute the runs. Then the schedulers stop, the runs in flight end, and the runs are checked:
 * - no two runs of a site for one slot (`scheduled_for`);
 * - no run of a site created before the site's previous run finished;
 * - each site's first scheduled run created within poll + slack of its first `next_run_at`;
 * - consecutive scheduled runs of a site created between 0.9 × interval − slack and
 *   1.1 × interval + poll + slack apart (the scheduler's ±10 % jitter, plus one pass);
 * - no site left waiting longer than that at the end (a site the pass stopped picking).
 * Slack is CHAOS_SLACK_MS (5000): a pass's own duration, and a replica killed mid-pass whose
 * work the next pass of another replica picks up.
 *
 * Last stdout line: {"pass","runs","duplicates","overlaps","lateFirst","badGaps","stalled",
 * "worst":{…},…}. Exit code 1 when any check failed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchModule } from '../bench/bench.js';
import {
  benchRun,
  integerFrom,
  report,
  startFixtureSites,
  wantsHelp,
  type Teardown,
} from '../bench/support.js';
import {
  createChaosStack,
  progressFor,
  startKiller,
  startReplicas,
  timingFrom,
  TIMING_USAGE,
  warningSummary,
  type ServiceTiming,
} from './support.js';

const USAGE = `usage: pnpm chaos scheduler
environment: CHAOS_SITES (500), CHAOS_SCHEDULERS (3), CHAOS_WORKERS (2), CHAOS_DURATION_MS (300000),
  CHAOS_KILL_EVERY_MS (20000), CHAOS_SLACK_MS (5000), CHAOS_DRAIN_TIMEOUT_MS (120000),
${TIMING_USAGE}`;

/** `interval_minutes` of every site, and the scheduler's jitter around it (±10 %). */
const INTERVAL_MINUTES = 1;
const JITTER = 0.1;
/** How long after the start the first site is due: the services are up by then. */
const FIRST_DUE_AFTER_MS = 5_000;
const WORST_SHOWN = 5;

interface Settings {
  sites: number;
  schedulers: number;
  workers: number;
  durationMs: number;
  killEveryMs: number;
  slackMs: number;
  drainTimeoutMs: number;
  timing: ServiceTiming;
}

const progress = progressFor('scheduler');

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  return {
    sites: integerFrom('CHAOS_SITES', 500, { min: 1 }, USAGE),
    schedulers: integerFrom('CHAOS_SCHEDULERS', 3, { min: 1 }, USAGE),
    workers: integerFrom('CHAOS_WORKERS', 2, { min: 1 }, USAGE),
    durationMs: integerFrom('CHAOS_DURATION_MS', 300_000, { min: 10_000 }, USAGE),
    killEveryMs: integerFrom('CHAOS_KILL_EVERY_MS', 20_000, { min: 100 }, USAGE),
    slackMs: integerFrom('CHAOS_SLACK_MS', 5_000, { min: 0 }, USAGE),
    drainTimeoutMs: integerFrom('CHAOS_DRAIN_TIMEOUT_MS', 120_000, { min: 0 }, USAGE),
    timing: timingFrom(USAGE),
  };
}

interface RunRecord {
  siteId: string;
  runId: string;
  trigger: string;
  status: string;
  scheduledFor: Date | null;
  createdAt: Date;
  finishedAt: Date | null;
}

interface Offender {
  site: string;
  /** What was measured, in seconds (lateness, gap or wait). */
  seconds: number;
  detail: string;
}

const worst = (offenders: Offender[]): Offender[] =>
  [...offenders].sort((a, b) => b.seconds - a.seconds).slice(0, WORST_SHOWN);

async function check(settings: Settings, teardown: Teardown): Promise<number> {
  progress(`settings ${JSON.stringify(settings)}`);
  const { timing } = settings;
  const intervalMs = INTERVAL_MINUTES * 60_000;
  const minGapMs = (1 - JITTER) * intervalMs - settings.slackMs;
  const maxGapMs = (1 + JITTER) * intervalMs + timing.pollIntervalMs + settings.slackMs;
  const maxLateMs = timing.pollIntervalMs + settings.slackMs;
  progress(
    `bounds: first run ≤ next_run_at + ${maxLateMs} ms; consecutive runs ${minGapMs}–${maxGapMs} ms apart (slack ${settings.slackMs} ms)`,
  );
  const stack = await createChaosStack('scheduler', timing, teardown, progress);
  const fixture = await startFixtureSites(
    [{ postings: 1, pageBytes: 2000, seed: 4000 }],
    teardown,
    progress,
  );
  const site = fixture.sites[0]!;
  const failures: string[] = [];

  const { rows: columns } = await stack.handle.pool.query(
    "SELECT 1 FROM information_schema.columns WHERE table_name = 'scrape_runs' AND column_name = 'scheduled_for'",
  );
  if (columns.length === 0)
    failures.push('scrape_runs.scheduled_for does not exist: slots cannot be checked');

  const workers = await startReplicas('worker', settings.workers, stack, teardown);
  const schedulers = await startReplicas('scheduler', settings.schedulers, stack, teardown);
  progress(`${settings.workers} workers and ${settings.schedulers} schedulers started`);

  const firstDue = Date.now() + FIRST_DUE_AFTER_MS;
  const { rows: sites } = await stack.handle.pool.query<{
    id: string;
    site_name: string;
    next_run_at: Date;
  }>(
    `INSERT INTO site_schedules
       (site_name, kind, config, interval_minutes, next_run_at, min_pause_seconds, max_pause_seconds)
     SELECT 'chaos-sched-' || i, 'career-site', $1::jsonb, $2,
            to_timestamp($3::float8 / 1000) + make_interval(secs => i * $4::float8 / 1000), 0, 0
     FROM generate_series(0, $5::int - 1) AS i
     RETURNING id, site_name, next_run_at`,
    [
      JSON.stringify({ url: site.url, sitemapUrl: site.sitemapUrl }),
      INTERVAL_MINUTES,
      firstDue,
      intervalMs / settings.sites,
      settings.sites,
    ],
  );
  progress(`${sites.length} sites registered, first due in ${FIRST_DUE_AFTER_MS} ms`);

  const killer = startKiller(schedulers, settings.killEveryMs, progress);
  const started = performance.now();
  while (performance.now() - started < settings.durationMs) {
    await sleep(Math.min(30_000, settings.durationMs - (performance.now() - started)));
    const { rows } = await stack.handle.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM scrape_runs GROUP BY status',
    );
    progress(
      `${Math.round((performance.now() - started) / 1000)} s: runs ${JSON.stringify(Object.fromEntries(rows.map((row) => [row.status, row.n])))}, ${schedulers.kills} scheduler kills`,
    );
  }
  const victims = await killer.stop();
  const observedUntil = new Date();
  await schedulers.stop();
  progress(`schedulers stopped after ${victims.length} kills; waiting for the runs in flight`);
  const drainDeadline = Date.now() + settings.drainTimeoutMs;
  let active = 0;
  for (;;) {
    const { rows } = await stack.handle.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM scrape_runs WHERE status IN ('queued', 'running')",
    );
    active = rows[0]?.n ?? 0;
    if (active === 0 || Date.now() > drainDeadline) break;
    await sleep(1_000);
  }
  if (active > 0) progress(`${active} runs still active after ${settings.drainTimeoutMs} ms`);

  const { rows: runRows } = await stack.handle.pool.query<{
    site_schedule_id: string;
    run_id: string;
    trigger: string;
    status: string;
    scheduled_for: Date | null;
    created_at: Date;
    finished_at: Date | null;
  }>(
    `SELECT site_schedule_id, run_id, trigger, status, ${columns.length > 0 ? 'scheduled_for' : 'NULL::timestamptz AS scheduled_for'},
            created_at, finished_at
     FROM scrape_runs ORDER BY site_schedule_id, created_at`,
  );
  const runsBySite = new Map<string, RunRecord[]>();
  for (const row of runRows) {
    const list = runsBySite.get(row.site_schedule_id) ?? [];
    list.push({
      siteId: row.site_schedule_id,
      runId: row.run_id,
      trigger: row.trigger,
      status: row.status,
      scheduledFor: row.scheduled_for,
      createdAt: row.created_at,
      finishedAt: row.finished_at,
    });
    runsBySite.set(row.site_schedule_id, list);
  }

  const duplicates: Offender[] = [];
  const overlaps: Offender[] = [];
  const lateFirst: Offender[] = [];
  const badGaps: Offender[] = [];
  const stalled: Offender[] = [];
  const withoutSlot: Offender[] = [];
  const statuses: Record<string, number> = {};
  let scheduledRuns = 0;
  for (const { id, site_name: name, next_run_at: firstNextRunAt } of sites) {
    const runs = runsBySite.get(id) ?? [];
    for (const run of runs) statuses[run.status] = (statuses[run.status] ?? 0) + 1;
    const scheduled = runs.filter((run) => run.trigger === 'schedule');
    scheduledRuns += scheduled.length;

    const slots = new Map<number, number>();
    for (const run of scheduled) {
      if (run.scheduledFor === null) {
        withoutSlot.push({ site: name, seconds: 0, detail: `${run.runId} has no scheduled_for` });
        continue;
      }
      slots.set(run.scheduledFor.getTime(), (slots.get(run.scheduledFor.getTime()) ?? 0) + 1);
    }
    for (const [slot, count] of slots)
      if (count > 1)
        duplicates.push({
          site: name,
          seconds: count,
          detail: `${count} runs for slot ${new Date(slot).toISOString()}`,
        });

    for (let index = 1; index < runs.length; index++) {
      const previous = runs[index - 1]!;
      const next = runs[index]!;
      if (previous.finishedAt === null || next.createdAt < previous.finishedAt)
        overlaps.push({
          site: name,
          seconds:
            previous.finishedAt === null
              ? 0
              : (previous.finishedAt.getTime() - next.createdAt.getTime()) / 1000,
          detail: `${next.runId} created ${next.createdAt.toISOString()} before ${previous.runId} finished (${previous.finishedAt?.toISOString() ?? 'never'})`,
        });
    }

    const first = scheduled[0];
    if (first === undefined) {
      if (firstNextRunAt.getTime() + maxLateMs < observedUntil.getTime())
        lateFirst.push({
          site: name,
          seconds: (observedUntil.getTime() - firstNextRunAt.getTime()) / 1000,
          detail: `due ${firstNextRunAt.toISOString()}, never started`,
        });
    } else if (first.createdAt.getTime() - firstNextRunAt.getTime() > maxLateMs) {
      lateFirst.push({
        site: name,
        seconds: (first.createdAt.getTime() - firstNextRunAt.getTime()) / 1000,
        detail: `due ${firstNextRunAt.toISOString()}, started ${first.createdAt.toISOString()}`,
      });
    }
    for (let index = 1; index < scheduled.length; index++) {
      const gapMs =
        scheduled[index]!.createdAt.getTime() - scheduled[index - 1]!.createdAt.getTime();
      if (gapMs < minGapMs || gapMs > maxGapMs)
        badGaps.push({
          site: name,
          seconds: gapMs / 1000,
          detail: `${scheduled[index - 1]!.runId} → ${scheduled[index]!.runId}`,
        });
    }
    const last = scheduled.at(-1);
    if (last !== undefined && observedUntil.getTime() - last.createdAt.getTime() > maxGapMs)
      stalled.push({
        site: name,
        seconds: (observedUntil.getTime() - last.createdAt.getTime()) / 1000,
        detail: `last run ${last.runId} created ${last.createdAt.toISOString()}`,
      });
  }

  const expectedRuns = Math.round((settings.sites * settings.durationMs) / intervalMs);
  if (scheduledRuns === 0) failures.push('no scheduled runs at all: is there a scheduling pass?');
  const categories: [string, Offender[]][] = [
    ['runs for one slot (site, scheduled_for)', duplicates],
    ['overlapping runs of a site', overlaps],
    [
      `sites whose first run started later than next_run_at + ${maxLateMs} ms (or never)`,
      lateFirst,
    ],
    [`gaps between consecutive runs outside ${minGapMs}–${maxGapMs} ms`, badGaps],
    [`sites with no run for the last ${maxGapMs} ms`, stalled],
    ['scheduled runs without scheduled_for', withoutSlot],
  ];
  for (const [what, offenders] of categories)
    if (offenders.length > 0)
      failures.push(
        `${offenders.length} ${what}; worst: ${JSON.stringify(worst(offenders).slice(0, 2))}`,
      );
  for (const exit of [...workers.unexpectedExits(), ...schedulers.unexpectedExits()])
    failures.push(`unexpected exit: ${exit}`);

  if (failures.length === 0) stack.passed();
  return report(progress, failures, {
    check: 'scheduler',
    pass: failures.length === 0,
    sites: settings.sites,
    scheduledRuns,
    expectedRunsAbout: expectedRuns,
    statuses,
    stillActive: active,
    duplicates: duplicates.length,
    overlaps: overlaps.length,
    lateFirst: lateFirst.length,
    badGaps: badGaps.length,
    stalled: stalled.length,
    withoutSlot: withoutSlot.length,
    worst: {
      duplicates: worst(duplicates),
      overlaps: worst(overlaps),
      lateFirst: worst(lateFirst),
      badGaps: worst(badGaps),
      stalled: worst(stalled),
    },
    schedulerKills: victims.length,
    bounds: { maxLateMs, minGapMs, maxGapMs, slackMs: settings.slackMs },
    settings,
    warnings: warningSummary([...workers.all, ...schedulers.all]),
    logDir: failures.length === 0 ? null : stack.logDir,
    failures,
  });
}

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, check);
