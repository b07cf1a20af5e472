import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Cluster, Redis } from 'ioredis';
import { createRedisClock } from './redis-clock.js';
import {
  acquireScript,
  giveBackScript,
  releaseScript,
  renewScript,
  reserveScript,
  type LuaScript,
} from './scripts.js';

/**
 * A site's politeness settings, from its `site_schedules` row (seed 003's min/max pause, our
 * rate limit and concurrency) and its robots.txt `Crawl-delay`.
 */
export interface SitePolicy {
  /** Requests per second across all replicas; null or absent: the pause alone decides. */
  rateLimitRps?: number | null;
  /** Randomized human-like pause between request starts, drawn in [min, max] per request. */
  minPauseMs: number;
  maxPauseMs: number;
  /** Fetches in flight at once across all replicas. */
  maxConcurrency: number;
  /** robots.txt `Crawl-delay`: a floor on the spacing. */
  crawlDelayMs?: number | null;
}

/** What the fetch under a lease ended with. Neither field set: no verdict on the site's health. */
export interface GateOutcome {
  /** The HTTP status the site answered with. */
  status?: number;
  /** Its Retry-After, for 429 and 503. */
  retryAfterMs?: number;
  /** No answer at all: a timeout, a refused or reset connection. */
  failed?: boolean;
}

export interface GateLease {
  readonly id: string;
  readonly siteId: string;
  /**
   * The start the gate granted: epoch ms on Redis's clock. Later than the call when the caller
   * accepted a wait (`startWithinMs`); the spacing of the next grant counts from it.
   */
  readonly grantedAt: number;
  /** This request is the half-open breaker's probe: its outcome closes or reopens the breaker. */
  readonly probe: boolean;
  /**
   * Local time (a `performance.now()` value) from which the request may start: the latest local
   * moment `grantedAt` can be, so that it is never early (Redis's clock placed by the reply and
   * by the fastest recent one, `redis-clock.ts`). At or before the reply's arrival when the
   * grant was for now.
   */
  readonly startAfter: number;
  /**
   * Local deadline (a `performance.now()` value) for putting the request on the wire:
   * `startDeadlineMs` after the earliest local moment `grantedAt` can be. The spacing tolerates
   * starts that drift from their grants by up to `startSkewMs`; a request that could not start
   * by then (a slow reply, a busy event loop) must `giveBack()` instead of going out.
   * Infinity for a site with no spacing at all (no rate, Crawl-delay or pause): a late start
   * there lands too close to nothing.
   */
  readonly startBy: number;
  /** Frees the concurrency slot and reports the outcome; idempotent. Call it once the fetch settles. */
  release(outcome?: GateOutcome): Promise<void>;
  /**
   * Returns a grant whose request was never sent: frees the lease, rewinds the site's spacing
   * when no later grant was made since, and keeps the holder's turn (its next acquire is granted
   * as soon as the spacing allows). Settles the lease like `release`; only the first call counts.
   */
  giveBack(): Promise<void>;
}

export type GateDenyReason =
  /** The site answered 429/503: wait for Retry-After or our backoff. */
  | 'cooldown'
  /** Too many consecutive failures: the breaker is open. */
  | 'circuit-open'
  /** The breaker's probe is in flight; everyone else waits for its verdict. */
  | 'circuit-half-open'
  /** `maxConcurrency` fetches are in flight. */
  | 'concurrency'
  /**
   * Spacing: `retryAt` is this caller's reserved slot (or the earliest allowed start). Also a
   * caller willing to wait whose start is ahead while every concurrency slot is taken: it keeps
   * that start as its reservation.
   */
  | 'rate'
  /** The site's schedule is booked further ahead than the horizon; try again later. */
  | 'schedule-full';

export type GateDecision =
  | { granted: true; lease: GateLease }
  | {
      granted: false;
      /** Epoch ms on Redis's clock. */
      retryAt: number;
      /** `retryAt` minus Redis's now: add it to the local clock to be immune to clock skew. */
      delayMs: number;
      reason: GateDenyReason;
    };

export interface AcquireOptions {
  /**
   * A stable id of the waiting unit of work — the BullMQ job id. With it, a refused caller gets
   * its own reserved slot and is granted when it comes back; without it, every caller competes
   * afresh each time.
   */
  holder?: string;
  /**
   * Accept a start up to this far ahead (ms): instead of a refusal until its slot, the caller
   * gets a lease for the slot itself and waits until `lease.startAfter` before sending. One
   * round trip instead of two, and the start is the slot rather than the slot plus a timer's
   * and a round trip's lateness. The lease holds a concurrency slot while the caller waits.
   * Default 0: grants are for now only.
   */
  startWithinMs?: number;
}

export interface SiteGateOptions {
  redis: Redis | Cluster;
  /** Key prefix (e.g. the queue prefix); keys are `<prefix>:gate:{site:<id>}:<part>`. */
  prefix: string;
  /**
   * A lease not renewed within this expires, so a worker that died frees its slot. Its holder
   * renews it every third of this while it is held (`renewScript`), however long its fetch.
   */
  leaseTtlMs?: number;
  /** State of a site untouched for this long is dropped. */
  idleTtlMs?: number;
  /** How far ahead slots are reserved. */
  horizonMs?: number;
  /** A reservation whose holder has not come back this long after its slot is given up. */
  reservationGraceMs?: number;
  /** Base of the wait suggested when all concurrency slots are taken (jittered ×1–2). */
  concurrencyRetryMs?: number;
  /** Base of the wait suggested while the breaker's probe is in flight (jittered ×1–2). */
  halfOpenRetryMs?: number;
  /** First cooldown after a 429/503 without a longer Retry-After; doubles per repeat. */
  cooldownBaseMs?: number;
  cooldownMaxMs?: number;
  /** Retry-After values above this are capped (a site asking for a week gets an hour). */
  maxRetryAfterMs?: number;
  /** Consecutive 5xx/network failures (of distinct holders, see `failureMemoryMs`) that open the breaker. */
  failureThreshold?: number;
  /**
   * How long a holder's failure is remembered: its repeat failures within this time (the crawl
   * job's retries) do not count towards the breaker again. Well above a crawl job's backoff
   * (2 + 4 + 8 s), with room for the job being parked between attempts.
   */
  failureMemoryMs?: number;
  /** How long the breaker stays open; doubles per failed probe up to `openMaxMs`. */
  openMs?: number;
  openMaxMs?: number;
  /** Largest spacing multiplier after repeated cooldowns. */
  maxSlowdown?: number;
  /** Successes needed to halve the slowdown again. */
  recoverAfter?: number;
  /**
   * How far the actual start of two requests may drift from their grants (event-loop delay
   * between the grant and the socket write, the server's own receive delay). The rate interval
   * is widened by it, so that any 1-second window at the site holds at most `rateLimitRps`
   * starts; Crawl-delay is widened by it too. Keep it above `startDeadlineMs` plus the delay of
   * sending a request once it is started.
   */
  startSkewMs?: number;
  /**
   * A lease's `startBy`: how long after its granted start its request may still go out, on the
   * local clock counted from the acquire call (so a slow reply uses it up).
   */
  startDeadlineMs?: number;
  /** Source of the pause draws and jitter; injectable for tests. */
  random?: () => number;
}

export interface GateState {
  /** Start time of the latest scheduled request (epoch ms, Redis clock). */
  tail: number;
  /** Start time of the latest granted request. */
  last: number;
  slowdown: number;
  cooldownUntil: number;
  breaker: 'closed' | 'open' | 'half-open';
  openUntil: number;
  consecutiveFailures: number;
  leases: number;
  reservations: number;
}

/** What `reserve` booked: Redis's clock at the time, and each holder's slot. */
export interface GateReservations {
  /** Epoch ms on Redis's clock when the slots were booked: `slot - now` is the wait. */
  now: number;
  /**
   * Per holder, in order: its reserved start (epoch ms on Redis's clock; an existing reservation
   * is kept), or null where none was made (beyond the horizon, or the site is cooling down or
   * its breaker is not closed) and the holder's first acquire decides.
   */
  slots: (number | null)[];
}

export interface SiteGate {
  acquire(siteId: string, policy: SitePolicy, options?: AcquireOptions): Promise<GateDecision>;
  /**
   * Books the next slots of the site's schedule for holders that will ask for them later (the
   * crawl jobs a scrape is about to queue), as their first acquires would, without those
   * visits: each holder is then queued to come back at its slot. Takes no lease.
   */
  reserve(
    siteId: string,
    policy: SitePolicy,
    holders: readonly string[],
  ): Promise<GateReservations>;
  /** The site's current state, for admin views and tests. */
  inspect(siteId: string): Promise<GateState>;
  /** Forgets everything about a site: schedule, reservations, leases, cooldown and breaker. */
  reset(siteId: string): Promise<void>;
  /**
   * Resolves when this process next releases or gives back a lease of the site, or after
   * `timeoutMs`, whichever comes first (never rejects; an aborted `signal` resolves it too). For
   * a caller refused with `concurrency`: a slot frees when any fetch of the site ends, usually
   * within one fetch's time, far sooner than the refusal's suggested retry. Leases freed by other
   * processes are looked for every `timeoutMs`, by one of the process's waiters at a time (the
   * first): the others wait for a release here or for their turn.
   */
  nextRelease(siteId: string, timeoutMs: number, signal?: AbortSignal): Promise<void>;
}

export interface SiteGateKeys {
  state: string;
  leases: string;
  reservations: string;
  failed: string;
}

/**
 * The keys of one site. All share the hash tag `{site:<id>}`, so in Redis Cluster they live in
 * one slot and a script may touch them together. (A prefix must not contain `{`: the first
 * hash tag of a key wins.)
 */
export function siteGateKeys(prefix: string, siteId: string): SiteGateKeys {
  if (/[{}]/.test(siteId) || siteId.length === 0)
    throw new RangeError(`invalid site id "${siteId}" for the gate`);
  if (prefix.includes('{'))
    throw new RangeError(`gate prefix "${prefix}" must not contain a hash tag`);
  const base = `${prefix}:gate:{site:${siteId}}`;
  return {
    state: `${base}:state`,
    leases: `${base}:leases`,
    reservations: `${base}:reservations`,
    failed: `${base}:failed`,
  };
}

interface NormalisedPolicy {
  rpsIntervalMs: number;
  crawlDelayMs: number;
  minPauseMs: number;
  maxPauseMs: number;
  maxConcurrency: number;
}

function normalisePolicy(policy: SitePolicy, startSkewMs: number): NormalisedPolicy {
  const finite = (value: number | null | undefined, name: string): number => {
    if (value === null || value === undefined) return 0;
    if (!Number.isFinite(value) || value < 0)
      throw new RangeError(`gate policy ${name} must be a finite number >= 0, got ${value}`);
    return value;
  };
  const rps = finite(policy.rateLimitRps, 'rateLimitRps');
  const minPauseMs = finite(policy.minPauseMs, 'minPauseMs');
  const maxPauseMs = finite(policy.maxPauseMs, 'maxPauseMs');
  if (maxPauseMs < minPauseMs)
    throw new RangeError(
      `gate policy maxPauseMs (${maxPauseMs}) is below minPauseMs (${minPauseMs})`,
    );
  if (!Number.isInteger(policy.maxConcurrency) || policy.maxConcurrency < 1) {
    throw new RangeError(
      `gate policy maxConcurrency must be an integer >= 1, got ${policy.maxConcurrency}`,
    );
  }
  const crawlDelayMs = finite(policy.crawlDelayMs, 'crawlDelayMs');
  return {
    // R starts per second: R intervals must span a second plus the start skew, so that starts
    // drifting by up to the skew still leave every 1-second window with at most R of them
    // (a rate below 1 has one start per window: the skew widens its single interval).
    rpsIntervalMs: rps > 0 ? Math.ceil(1000 / rps + startSkewMs / Math.max(1, rps)) : 0,
    crawlDelayMs: crawlDelayMs > 0 ? Math.ceil(crawlDelayMs + startSkewMs) : 0,
    minPauseMs: Math.floor(minPauseMs),
    maxPauseMs: Math.floor(maxPauseMs),
    maxConcurrency: policy.maxConcurrency,
  };
}

/** Whether two grants on the site must be apart at all (see `GateLease.startBy`). */
function isSpaced(policy: NormalisedPolicy): boolean {
  return (
    policy.rpsIntervalMs > 0 ||
    policy.crawlDelayMs > 0 ||
    policy.minPauseMs > 0 ||
    policy.maxPauseMs > 0
  );
}

const denyReasons = new Set<string>([
  'cooldown',
  'circuit-open',
  'circuit-half-open',
  'concurrency',
  'rate',
  'schedule-full',
]);

/** How long a lease is renewed at most: longer than any fetch and its wait for its start. */
const LEASE_MAX_MS = 15 * 60_000;

/**
 * The per-site politeness gate, shared by every replica through Redis (DESIGN.md, "Per-site
 * politeness is ours to build"). Each operation is one Lua script, so concurrent callers on any
 * number of processes see one consistent schedule; see `scripts.ts` for the algorithm.
 */
export function createSiteGate(options: SiteGateOptions): SiteGate {
  const { redis, prefix } = options;
  const random = options.random ?? Math.random;
  const clock = createRedisClock();
  const settings = {
    leaseTtlMs: options.leaseTtlMs ?? 60_000,
    idleTtlMs: options.idleTtlMs ?? 3_600_000,
    horizonMs: options.horizonMs ?? 600_000,
    reservationGraceMs: options.reservationGraceMs ?? 300_000,
    concurrencyRetryMs: options.concurrencyRetryMs ?? 1_000,
    halfOpenRetryMs: options.halfOpenRetryMs ?? 5_000,
    // 2 s: short enough that a lone 429 with `Retry-After: 5` waits exactly 5 s, long enough
    // that a 429 without Retry-After is not hammered again at once.
    cooldownBaseMs: options.cooldownBaseMs ?? 2_000,
    cooldownMaxMs: options.cooldownMaxMs ?? 600_000,
    maxRetryAfterMs: options.maxRetryAfterMs ?? 3_600_000,
    failureThreshold: options.failureThreshold ?? 5,
    failureMemoryMs: options.failureMemoryMs ?? 600_000,
    openMs: options.openMs ?? 30_000,
    openMaxMs: options.openMaxMs ?? 600_000,
    maxSlowdown: options.maxSlowdown ?? 8,
    recoverAfter: options.recoverAfter ?? 5,
    // Grant-to-arrival delay measured at the politeness bench's fixture servers (four workers,
    // Postgres and 20 sites on 2 busy cores, 2000 requests): p50 2.5 ms, p99 11 ms, max 17.6 ms,
    // with a 10 ms deadline, which is the worker's share; the rest is sending and the server's
    // own receive delay. At 10 ms, a quarter of the bench's grants came too late on its busy
    // event loops and were given back, each costing its site an interval; at 20 ms their sites
    // kept about 0.04 more of their budget. The skew keeps 20 ms beyond the deadline for
    // sending, for 4 % of each site's budget.
    startSkewMs: options.startSkewMs ?? 40,
    startDeadlineMs: options.startDeadlineMs ?? 20,
  };
  if (!(settings.startSkewMs >= 0) || !(settings.startDeadlineMs >= 0))
    throw new RangeError('gate startSkewMs and startDeadlineMs must be numbers >= 0');

  async function run(
    script: LuaScript,
    keys: SiteGateKeys,
    args: (string | number)[],
  ): Promise<unknown> {
    const keyList = [keys.state, keys.leases, keys.reservations, keys.failed];
    try {
      return await redis.evalsha(script.sha, keyList.length, ...keyList, ...args);
    } catch (error) {
      // First use on this server (or after SCRIPT FLUSH / a failover): send the body once.
      if (error instanceof Error && error.message.startsWith('NOSCRIPT')) {
        return redis.eval(script.source, keyList.length, ...keyList, ...args);
      }
      throw error;
    }
  }

  /** How often a lease whose release could not reach Redis is released again. */
  const LEASE_SETTLE_RETRY_MS = 1_000;

  /** Per site, the callers of `nextRelease` waiting in this process, woken one per freed lease. */
  const releaseWaiters = new Map<string, Set<() => void>>();
  function wakeOne(siteId: string): void {
    const waiters = releaseWaiters.get(siteId);
    const first = waiters?.values().next();
    if (first && !first.done) first.value();
  }

  /**
   * Per site, the one timer of this process's `nextRelease` waiters: every `timeoutMs` without a
   * lease freed here it wakes the first of them to ask the gate again, for a lease another
   * process freed. One asks at a time, not each: with more jobs waiting than a site's slots
   * (a fleet whose crawl slots outnumber the site's), every waiter asking on its own made about
   * two refused asks per page.
   */
  const releaseTickers = new Map<string, NodeJS.Timeout>();
  function tickReleases(siteId: string, timeoutMs: number): void {
    if (releaseTickers.has(siteId)) return;
    releaseTickers.set(
      siteId,
      setTimeout(() => {
        releaseTickers.delete(siteId);
        wakeOne(siteId);
        if (releaseWaiters.has(siteId)) tickReleases(siteId, timeoutMs);
      }, timeoutMs),
    );
  }

  function createLease(
    siteId: string,
    keys: SiteGateKeys,
    grant: {
      id: string;
      holder: string;
      grantedAt: number;
      probe: boolean;
      startAfter: number;
      startBy: number;
    },
  ): GateLease {
    let settled: Promise<void> | undefined;
    // Kept while this process lives, up to LEASE_MAX_MS (a lease its caller never settled does
    // not hold a slot for ever); a failed renewal is left to the next one.
    const renewUntil = Date.now() + LEASE_MAX_MS;
    const renewal = setInterval(() => {
      if (Date.now() > renewUntil) clearInterval(renewal);
      else run(renewScript, keys, [grant.id, settings.leaseTtlMs]).catch(() => undefined);
    }, settings.leaseTtlMs / 3).unref();
    /**
     * Runs a lease's settling script. When Redis cannot be reached (an outage mid-fetch) the
     * caller still sees the error, and the script is tried again every second in the
     * background until it runs or the lease would have expired anyway: otherwise every lease in
     * flight at the outage would hold its site's concurrency slot for the whole lease TTL.
     */
    const settle = (call: () => Promise<unknown>): Promise<void> => {
      clearInterval(renewal);
      const first = call().then(() => wakeOne(siteId));
      first.catch(() => {
        const until = Date.now() + settings.leaseTtlMs;
        const retry = () => {
          if (Date.now() > until) return;
          call().then(
            () => wakeOne(siteId),
            () => setTimeout(retry, LEASE_SETTLE_RETRY_MS).unref(),
          );
        };
        setTimeout(retry, LEASE_SETTLE_RETRY_MS).unref();
      });
      return first;
    };
    return {
      id: grant.id,
      siteId,
      grantedAt: grant.grantedAt,
      probe: grant.probe,
      startAfter: grant.startAfter,
      startBy: grant.startBy,
      release(outcome = {}) {
        settled ??= settle(() =>
          run(releaseScript, keys, [
            grant.id,
            outcome.status ?? 0,
            outcome.retryAfterMs ?? -1,
            outcome.failed ? 1 : 0,
            settings.cooldownBaseMs,
            settings.cooldownMaxMs,
            settings.maxRetryAfterMs,
            settings.failureThreshold,
            settings.openMs,
            settings.openMaxMs,
            settings.maxSlowdown,
            settings.recoverAfter,
            settings.idleTtlMs,
            settings.reservationGraceMs,
            grant.holder,
            settings.failureMemoryMs,
          ]),
        );
        return settled;
      },
      giveBack() {
        settled ??= settle(() =>
          run(giveBackScript, keys, [
            grant.id,
            grant.holder,
            grant.grantedAt,
            settings.idleTtlMs,
            settings.reservationGraceMs,
          ]),
        );
        return settled;
      },
    };
  }

  return {
    async acquire(siteId, policy, acquireOptions = {}) {
      const keys = siteGateKeys(prefix, siteId);
      const normalised = normalisePolicy(policy, settings.startSkewMs);
      const leaseId = randomUUID();
      const holder = acquireOptions.holder ?? '';
      const startWithinMs = acquireOptions.startWithinMs ?? 0;
      if (!(startWithinMs >= 0) || !Number.isFinite(startWithinMs))
        throw new RangeError(
          `gate startWithinMs must be a finite number >= 0, got ${startWithinMs}`,
        );
      // Measured before the call: the grant happens somewhere during it, so the deadline errs early.
      const askedAt = performance.now();
      const reply = (await run(acquireScript, keys, [
        leaseId,
        holder,
        normalised.rpsIntervalMs,
        normalised.crawlDelayMs,
        normalised.minPauseMs,
        normalised.maxPauseMs,
        normalised.maxConcurrency,
        settings.leaseTtlMs,
        random(),
        settings.horizonMs,
        settings.reservationGraceMs,
        settings.idleTtlMs,
        settings.concurrencyRetryMs,
        settings.halfOpenRetryMs,
        Math.floor(startWithinMs),
      ])) as [number, number, string, number, number];
      const repliedAt = performance.now();
      const [granted, retryAt, reason, now, probe] = reply;
      const reading = { askedAt, repliedAt, redisNow: now };
      clock.observe(reading);
      if (granted === 1) {
        // The granted start on the local clock: starting at its latest is never early, and the
        // deadline counts from its earliest.
        const start = clock.localBounds(Math.max(retryAt, now), reading);
        return {
          granted: true,
          lease: createLease(siteId, keys, {
            id: leaseId,
            holder,
            grantedAt: retryAt,
            probe: probe === 1,
            startAfter: start.latest,
            startBy: isSpaced(normalised)
              ? start.earliest + settings.startDeadlineMs
              : Number.POSITIVE_INFINITY,
          }),
        };
      }
      if (!denyReasons.has(reason))
        throw new Error(`gate script answered an unknown reason "${reason}"`);
      return {
        granted: false,
        retryAt,
        delayMs: Math.max(0, retryAt - now),
        reason: reason as GateDenyReason,
      };
    },

    async inspect(siteId) {
      const keys = siteGateKeys(prefix, siteId);
      // Count only live leases, on Redis's clock like the scripts.
      const [seconds, micros] = await redis.time();
      const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      const [state, leases, reservations] = await Promise.all([
        redis.hgetall(keys.state),
        redis.zcount(keys.leases, `(${now}`, '+inf'),
        redis.zcard(keys.reservations),
      ]);
      const number = (value: string | undefined, fallback: number) =>
        value === undefined || value === '' ? fallback : Number(value);
      return {
        tail: number(state.tail, 0),
        last: number(state.last, 0),
        slowdown: number(state.slow, 1),
        cooldownUntil: number(state.cooldown, 0),
        breaker: (state.breaker as GateState['breaker'] | undefined) ?? 'closed',
        openUntil: number(state.openUntil, 0),
        consecutiveFailures: number(state.fails, 0),
        leases,
        reservations,
      };
    },

    async reserve(siteId, policy, holders) {
      if (holders.length === 0) return { now: Date.now(), slots: [] };
      if (holders.some((holder) => holder === ''))
        throw new RangeError('gate reserve needs non-empty holder ids');
      const keys = siteGateKeys(prefix, siteId);
      const normalised = normalisePolicy(policy, settings.startSkewMs);
      const reply = (await run(reserveScript, keys, [
        normalised.rpsIntervalMs,
        normalised.crawlDelayMs,
        normalised.minPauseMs,
        normalised.maxPauseMs,
        settings.horizonMs,
        settings.reservationGraceMs,
        settings.idleTtlMs,
        holders.length,
        ...holders.map(() => random()),
        ...holders,
      ])) as number[];
      const [now, ...slots] = reply;
      return { now: now!, slots: slots.map((slot) => (slot < 0 ? null : slot)) };
    },

    nextRelease(siteId, timeoutMs, signal) {
      return new Promise<void>((resolve) => {
        let waiters = releaseWaiters.get(siteId);
        if (!waiters) releaseWaiters.set(siteId, (waiters = new Set()));
        const done = () => {
          signal?.removeEventListener('abort', done);
          waiters.delete(done);
          if (waiters.size === 0 && releaseWaiters.get(siteId) === waiters) {
            releaseWaiters.delete(siteId);
            clearTimeout(releaseTickers.get(siteId));
            releaseTickers.delete(siteId);
          }
          resolve();
        };
        waiters.add(done);
        if (signal?.aborted) done();
        else {
          signal?.addEventListener('abort', done, { once: true });
          tickReleases(siteId, timeoutMs);
        }
      });
    },

    async reset(siteId) {
      const keys = siteGateKeys(prefix, siteId);
      // One DEL per key: in a cluster they share a slot, so a multi-key DEL is fine too.
      await redis.del(keys.state, keys.leases, keys.reservations, keys.failed);
    },
  };
}
