import { listMetricSites } from '@gleaner/db';
import { siteGateKeys } from '@gleaner/http';
import {
  assertAllSent,
  readSiteCounts,
  sendTogether,
  type RedisClient,
  type RedisCommand,
} from '@gleaner/queue';
import { Counter, Gauge } from 'prom-client';
import { MAX_LABELLED_SITES, type CollectorFactory } from './collector.js';

interface GateView {
  /** Jobs holding a reserved slot in the site's schedule, parked in delayed until it. */
  parked: number;
  circuitOpen: boolean;
  cooldownSeconds: number;
}

/**
 * Each site's politeness gate as its Lua scripts left it (`@gleaner/http`'s gate README): the
 * breaker and cooldown in the state hash, parked jobs as reservations. Two commands per site,
 * sent together (`sendTogether`), timed on Redis's clock like the scripts.
 */
async function readGates(
  redis: RedisClient,
  prefix: string,
  siteIds: string[],
): Promise<GateView[]> {
  const commands: RedisCommand[] = [['time']];
  for (const siteId of siteIds) {
    const keys = siteGateKeys(prefix, siteId);
    commands.push(['hmget', keys.state, 'breaker', 'cooldown'], ['zcard', keys.reservations]);
  }
  const results = await sendTogether(redis, commands);
  assertAllSent(results);
  const [seconds, micros] = results[0]![1] as [string, string];
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  return siteIds.map((_, index) => {
    const [breaker, cooldown] = results[1 + 2 * index]![1] as (string | null)[];
    const parked = results[2 + 2 * index]![1] as number;
    const cooldownUntil = Number(cooldown ?? 0);
    return {
      parked,
      // Open, or half-open with its probe let through: either way the site gets no other request.
      circuitOpen: breaker === 'open' || breaker === 'half-open',
      cooldownSeconds: cooldownUntil > now ? (cooldownUntil - now) / 1000 : 0,
    };
  });
}

/**
 * Per site (the first `MAX_LABELLED_SITES` by name, labelled by name): requests and 429s as the
 * workers counted them in Redis, and its gate's parked jobs, breaker and cooldown now.
 */
export const siteMetrics: CollectorFactory = (registry, { db, redis, prefix }) => {
  const registers = [registry];
  const sites = new Gauge({
    name: 'gleaner_sites',
    help: 'Registered sites, enabled or not.',
    labelNames: ['state'] as const,
    registers,
  });
  const omitted = new Gauge({
    name: 'gleaner_sites_unlisted',
    help: `Sites beyond the first ${MAX_LABELLED_SITES} by name, which get no per-site series.`,
    registers,
  });
  const requests = new Counter({
    name: 'gleaner_site_requests_total',
    help: "Requests a site's server answered or failed (timeouts, refused connections): listings and postings.",
    labelNames: ['site'] as const,
    registers,
  });
  const rateLimited = new Counter({
    name: 'gleaner_site_rate_limited_total',
    help: 'Requests a site answered with 429 Too Many Requests.',
    labelNames: ['site'] as const,
    registers,
  });
  const requestErrors = new Counter({
    name: 'gleaner_site_request_errors_total',
    help: "Requests a site answered 4xx other than 429 (class 4xx), 5xx (5xx), or not at all (unanswered), retried ones included: what a run's http_errors alert judges, with 429s.",
    labelNames: ['site', 'class'] as const,
    registers,
  });
  const parked = new Gauge({
    name: 'gleaner_site_parked_jobs',
    help: "Crawl jobs parked until their reserved slot in the site's schedule.",
    labelNames: ['site'] as const,
    registers,
  });
  const circuitOpen = new Gauge({
    name: 'gleaner_site_circuit_open',
    help: "1 while the site's breaker is open or half-open (after repeated failures), else 0.",
    labelNames: ['site'] as const,
    registers,
  });
  const cooldown = new Gauge({
    name: 'gleaner_site_cooldown_remaining_seconds',
    help: 'Time left of the pause a 429 or 503 from the site imposed (0: none).',
    labelNames: ['site'] as const,
    registers,
  });
  const families = [
    sites,
    omitted,
    requests,
    rateLimited,
    requestErrors,
    parked,
    circuitOpen,
    cooldown,
  ];

  return {
    name: 'sites',
    async collect(signal) {
      const listing = await listMetricSites(db, MAX_LABELLED_SITES);
      const ids = listing.listed.map((site) => site.id);
      const [counts, gates] = await Promise.all([
        readSiteCounts(redis, prefix),
        readGates(redis, prefix, ids),
      ]);
      signal.throwIfAborted();
      for (const family of families) family.reset();
      sites.set({ state: 'enabled' }, listing.enabled);
      sites.set({ state: 'disabled' }, listing.total - listing.enabled);
      omitted.set(listing.total - listing.listed.length);
      listing.listed.forEach((entry, index) => {
        const site = entry.name;
        const count = counts.get(entry.id);
        const gate = gates[index]!;
        requests.inc({ site }, count?.requests ?? 0);
        rateLimited.inc({ site }, count?.rateLimited ?? 0);
        for (const answerClass of ['4xx', '5xx', 'unanswered'] as const)
          requestErrors.inc({ site, class: answerClass }, count?.errors[answerClass] ?? 0);
        parked.set({ site }, gate.parked);
        circuitOpen.set({ site }, gate.circuitOpen ? 1 : 0);
        cooldown.set({ site }, gate.cooldownSeconds);
      });
    },
    clear() {
      for (const family of families) family.reset();
    },
  };
};
