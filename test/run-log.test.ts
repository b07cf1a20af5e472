import { PassThrough } from 'node:stream';
import { insertSite, type SiteRow } from '@gleaner/db';
import { createRedisConnection, readRunLogTail, runLogKey, waitForRedis } from '@gleaner/queue';
import { createFixtureCareerSite, waitFor, type FixtureCareerSite } from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * What workers log about a run: every job line names the run by its public id and its site by
 * name, and the run's own log in Redis holds its jobs' lines, debug ones included, badged by
 * stage, while stdout keeps to its level.
 */
const POSTINGS = 12;

let fixture: FixtureCareerSite;
let system: InProcessSystem;
let redis: Redis;
let site: SiteRow;
const stdout: Record<string, unknown>[] = [];

beforeAll(async () => {
  fixture = await createFixtureCareerSite({ postings: POSTINGS, seed: 16 });
  const destination = new PassThrough();
  destination.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
      stdout.push(JSON.parse(line) as Record<string, unknown>);
  });
  system = await startInProcessSystem('run-log', { logDestination: destination });
  redis = createRedisConnection(system.namespace.url, 'producer');
  await waitForRedis(redis);
  site = await insertSite(system.handle.db, {
    siteName: 'logged-careers',
    kind: 'career-site',
    config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    rateLimitRps: 200,
  });
});

afterAll(async () => {
  redis?.disconnect();
  await system?.close();
  await fixture?.close();
});

describe("a run's log", () => {
  it('names the run and site on every job line and keeps its lines by stage', async () => {
    const first = await system.runToEnd(site.id);
    expect(first.status).toBe('succeeded');
    const second = await system.runToEnd(site.id);
    expect(second.status).toBe('succeeded');
    // A run's last lines follow its finalization: the one that says how it ended on stdout, and
    // in its log the lines of its last jobs, which the writer sends within 100 ms.
    const finalized = () => stdout.filter((line) => line.msg === 'run finalized').length;
    await waitFor(
      async () => {
        if (finalized() < 2) return undefined;
        const tail = await readRunLogTail(
          redis,
          runLogKey(system.namespace.prefix, second.runId),
          1000,
        );
        const skipped = tail.filter((entry) => entry.line.msg.startsWith('unchanged'));
        return skipped.length >= POSTINGS ? true : undefined;
      },
      { timeoutMs: 10_000, what: "both runs' last log lines" },
    );

    const jobLines = stdout.filter((line) => line.queue !== undefined);
    expect(jobLines.length).toBeGreaterThan(0);
    for (const line of jobLines) {
      expect(line.site).toBe('logged-careers');
      expect([first.runId, second.runId]).toContain(line.run);
      // Seed 003's names for the same, and the run's scrape job.
      expect(line).toMatchObject({ site_name: line.site, run_id: line.run });
      expect(line.task_id).toEqual(expect.any(String));
    }
    // The line that says how a run ended names it too.
    const endings = stdout.filter((line) => line.msg === 'run finalized');
    expect(endings.map((line) => line.run)).toEqual([first.runId, second.runId]);
    expect(endings[0]).toMatchObject({
      run_id: first.runId,
      event: 'finished',
      status: 'succeeded',
    });
    // stdout stays at info: the per-posting debug lines went to the run's log only.
    expect(stdout.some((line) => line.msg === 'page fetched')).toBe(false);

    const log = await readRunLogTail(redis, runLogKey(system.namespace.prefix, first.runId), 1000);
    const lines = log.map((entry) => entry.line);
    expect(lines.filter((line) => line.stage === 'ING').map((line) => line.msg)).toContain(
      'listing done',
    );
    const listing = lines.find((line) => line.msg === 'listing done')!;
    expect(listing).toMatchObject({ level: 'info', fields: { listed: POSTINGS } });
    expect(lines.filter((line) => line.msg === 'page fetched')).toHaveLength(POSTINGS);
    expect(
      lines.filter((line) => line.msg === 'page fetched').every((l) => l.stage === 'CRL'),
    ).toBe(true);
    const extracted = lines.filter((line) => line.msg === 'posting extracted');
    expect(extracted).toHaveLength(POSTINGS);
    expect(extracted.every((line) => line.stage === 'EXT' && line.level === 'debug')).toBe(true);
    const titles = new Set(fixture.postings().map((posting) => posting.expected.title));
    expect(extracted.every((line) => titles.has(String(line.fields?.title)))).toBe(true);

    // The second run found nothing changed: its log says so, and the first run's is its own.
    const again = await readRunLogTail(
      redis,
      runLogKey(system.namespace.prefix, second.runId),
      1000,
    );
    expect(
      again.filter((entry) => entry.line.msg === 'unchanged since it was last extracted; skipped'),
    ).toHaveLength(POSTINGS);
    expect(lines.some((line) => line.msg.startsWith('unchanged'))).toBe(false);
    expect(await redis.ttl(runLogKey(system.namespace.prefix, first.runId))).toBeGreaterThan(0);
  });
});
