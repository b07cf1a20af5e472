import { buildApp } from '@gleaner/api';
import { insertSite, type SiteRow } from '@gleaner/db';
import { createRedisConnection, waitForRedis, type PassReport } from '@gleaner/queue';
import { type SchedulerLoop } from '@gleaner/scheduler';
import { createFixtureCareerSite, waitFor, type FixtureCareerSite } from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi } from './support/api-server.js';
import { startTestScheduler } from './support/scheduler-replica.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * The scheduler seen through the API: a replica publishes its status, `GET /scheduler/status`
 * shows it with the due and upcoming sites, `POST /scheduler/run` has it run a pass at once, and
 * a run started by the schedule shows its counters moving while it runs.
 */
let system: InProcessSystem;
let fixture: FixtureCareerSite;
let producer: Redis;
let workerConnection: Redis;
let loop: SchedulerLoop;
let forced: { close(): Promise<void> };
let app: Awaited<ReturnType<typeof buildApp>>;

beforeAll(async () => {
  // Posting pages answer slowly, so a run is still under way when the test looks at it.
  fixture = await createFixtureCareerSite({
    postings: 60,
    responseDelayMs: (target) => (target.startsWith('/jobs/') ? 150 : 0),
  });
  system = await startInProcessSystem('scheduler-api', { crawlConcurrency: 4 });
  producer = createRedisConnection(system.namespace.url, 'producer');
  workerConnection = createRedisConnection(system.namespace.url, 'worker');
  await waitForRedis(producer);
  ({ loop, forced } = startTestScheduler(system, { producer, connection: workerConnection }));
  ({ app } = await startTestApi(system, {}, producer));
  await waitFor(() => (loop.status().passes === 1 ? true : undefined), {
    what: 'the first scheduler pass',
  });
});

afterAll(async () => {
  await app?.close();
  await forced?.close();
  await loop?.stop();
  await system?.close();
  producer?.disconnect();
  workerConnection?.disconnect();
  await fixture?.close();
});

async function registerSite(name: string, nextRunAt: Date): Promise<SiteRow> {
  return insertSite(system.handle.db, {
    siteName: name,
    kind: 'career-site',
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    maxConcurrency: 4,
    intervalMinutes: 30,
    nextRunAt,
    config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
  });
}

describe('the scheduler through the API', () => {
  it('runs a forced pass that starts a due site, and shows its counters moving', async () => {
    const site = await registerSite('due-site', new Date(Date.now() - 1_000));
    await registerSite('later-site', new Date(Date.now() + 3_600_000));

    const status = await app.inject({ method: 'GET', url: '/scheduler/status' });
    expect(status.statusCode).toBe(200);
    expect(status.json().status).toBe('success');
    expect(status.json().data).toMatchObject({
      redis: 'ok',
      alive_replicas: 1,
      replicas: [{ replica: 'replica-1', alive: true, passes: 1 }],
      due: 1,
      due_sites: [{ site_name: 'due-site', lock_holder: null }],
      upcoming_sites: [{ site_name: 'later-site' }],
    });

    const forcedPass = await app.inject({ method: 'POST', url: '/scheduler/run' });
    expect(forcedPass.statusCode).toBe(200);
    expect(forcedPass.json().status).toBe('success');
    const report = forcedPass.json<{ data: Record<string, unknown> }>().data;
    expect(report).toMatchObject({
      replica: 'replica-1',
      trigger: 'request',
      started_count: 1,
      started: [{ site: 'due-site', run_id: expect.stringMatching(/^sched_/) }],
      redis: 'ok',
      postgres: 'ok',
      errors: [],
    });
    const runId = (report.started as { run_id: string }[])[0]!.run_id;

    // While it runs, its counters move (they are stored only when it ends).
    const seen = await waitFor(
      async () => {
        const response = await app.inject({ method: 'GET', url: `/jobs/scrape/${runId}?limit=0` });
        const run = response.json<{ data: Record<string, number | string> }>().data;
        return run.status === 'running' &&
          Number(run.ready_count) > 0 &&
          Number(run.pending_count) > 0
          ? run
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 20, what: 'a running run with some postings ready' },
    );
    expect(seen).toMatchObject({ trigger: 'schedule', requested_pages: 60 });
    expect(Number(seen.completed_pages)).toBe(
      Number(seen.ready_count) + Number(seen.skipped_count),
    );

    const ended = await waitFor(
      async () => {
        const response = await app.inject({ method: 'GET', url: `/sites/${site.siteName}/runs` });
        const [run] = response.json<{ data: Record<string, number | string>[] }>().data;
        return run && run.status !== 'running' && run.status !== 'queued' ? run : undefined;
      },
      { timeoutMs: 60_000, what: 'the scheduled run to end' },
    );
    expect(ended).toMatchObject({
      run_id: runId,
      status: 'succeeded',
      ready_count: 60,
      pending_count: 0,
      scheduled_for: site.nextRunAt!.toISOString(),
    });
    expect(loop.status().lastPass).toMatchObject({
      trigger: 'request',
    } satisfies Partial<PassReport>);
  });

  it('starts one named site now, and answers 404 for a site that is not registered', async () => {
    const site = await registerSite('named-site', new Date(Date.now() + 3_600_000));
    const response = await app.inject({
      method: 'POST',
      url: '/scheduler/run',
      payload: { site: site.siteName },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      status: 'success',
      data: { site: 'named-site', started_count: 1 },
    });

    const unknown = await app.inject({
      method: 'POST',
      url: '/scheduler/run',
      payload: { site: 'nowhere' },
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({
      title: 'Unknown Site',
      errors: [{ field: 'body.site' }],
    });

    const invalid = await app.inject({
      method: 'POST',
      url: '/scheduler/run',
      payload: { site: 'x', every: true },
    });
    expect(invalid.statusCode).toBe(400);
  });

  it("shows an adaptive site's interval and why", async () => {
    const site = await insertSite(system.handle.db, {
      siteName: 'adaptive-site',
      kind: 'career-site',
      intervalMinutes: 30,
      adaptive: true,
      changeRatePerHour: 8,
      adaptiveIntervalMinutes: 15,
      nextRunAt: new Date(Date.now() + 24 * 3_600_000),
      config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
    });
    const status = await app.inject({ method: 'GET', url: '/scheduler/status' });
    const listed = (
      status.json().data.upcoming_sites as { site_name: string; cadence: unknown }[]
    ).filter((entry) => entry.site_name === site.siteName || entry.site_name === 'later-site');
    expect(listed).toEqual([
      expect.objectContaining({ site_name: 'later-site', interval_minutes: 30, cadence: null }),
      expect.objectContaining({
        site_name: 'adaptive-site',
        interval_minutes: 15,
        cadence: {
          change_rate_per_hour: 8,
          base_interval_minutes: 30,
          min_interval_minutes: 8,
          max_interval_minutes: 120,
          reason:
            'about 8.0 changes an hour, 4.0 per 30-minute base interval: every 15 minutes, between 8 and 120 minutes',
        },
      }),
    ]);
  });
});
