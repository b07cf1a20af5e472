import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestRedisNamespace, type TestRedisNamespace } from '@gleaner/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpStatusError, HttpTimeoutError, HttpAddressBlockedError } from '../errors.js';
import { outcomeOfError, outcomeOfResult } from './outcome.js';
import {
  createSiteGate,
  siteGateKeys,
  type GateDecision,
  type GateLease,
  type GateOutcome,
  type SiteGate,
  type SitePolicy,
} from './site-gate.js';

let namespace: TestRedisNamespace;
const clients: Redis[] = [];
let gates: SiteGate[] = [];
let siteCounter = 0;
/** A fresh site id per test, so tests never share state. */
const newSite = () => `site-${++siteCounter}-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  namespace = createTestRedisNamespace('http-gate');
  // Eight connections stand in for eight worker replicas; the last four send the calls of a
  // turn together, as a worker's gate connection does on one Redis (`pipelinedConnection`).
  for (let i = 0; i < 8; i += 1)
    clients.push(
      new Redis(namespace.url, { maxRetriesPerRequest: null, enableAutoPipelining: i >= 4 }),
    );
  gates = clients.map((redis) =>
    createSiteGate({ redis, prefix: namespace.prefix, leaseTtlMs: 1_000 }),
  );
});

afterAll(async () => {
  // Closed at once, as the worker closes its gate connection: leases some tests leave unsettled
  // still renew, and a QUIT followed by a renewal's script can lose QUIT's reply to the reset
  // Redis answers a closed connection's unread bytes with, failing the hook.
  for (const client of clients) client.disconnect();
  await namespace.cleanup();
});

async function redisNow(): Promise<number> {
  const [seconds, micros] = await clients[0]!.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * A connection whose scripts fail while it is `down`, as one does while Redis is away; one that
 * `die()`s stays down, as a worker killed mid-fetch no longer renews its leases.
 */
function mortalRedis(client: Redis): { redis: Redis; setDown(down: boolean): void; die(): void } {
  let down = false;
  const redis = new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if ((property === 'evalsha' || property === 'eval') && typeof value === 'function')
        return (...args: unknown[]) =>
          down
            ? Promise.reject(new Error("Stream isn't writeable"))
            : (value as (...a: unknown[]) => unknown).apply(target, args);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    redis,
    setDown: (value) => {
      down = value;
    },
    die: () => {
      down = true;
    },
  };
}

/** Acquires like a worker would: wait for `delayMs` whenever refused, keep the job id as holder. */
async function acquireUntilGranted(
  gate: SiteGate,
  siteId: string,
  policy: SitePolicy,
  holder: string,
): Promise<GateLease> {
  for (;;) {
    const decision = await gate.acquire(siteId, policy, { holder });
    if (decision.granted) return decision.lease;
    await sleep(decision.delayMs);
  }
}

/**
 * `count` jobs spread over the replicas, all arriving at once, each acquiring until granted (with
 * `policyOf(index)`) and releasing at once. Resolves with the granted starts, sorted.
 */
async function grantAll(
  siteId: string,
  count: number,
  policyOf: (index: number) => SitePolicy,
): Promise<number[]> {
  const grants: number[] = [];
  await Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const lease = await acquireUntilGranted(
        gates[index % gates.length]!,
        siteId,
        policyOf(index),
        `job-${index}`,
      );
      grants.push(lease.grantedAt);
      await lease.release({ status: 200 });
    }),
  );
  return grants.sort((a, b) => a - b);
}

/** Three replicas' gates with no start skew, so that intervals are round (4 requests/s: 250 ms). */
function replicasWithoutSkew(): SiteGate[] {
  return clients
    .slice(0, 3)
    .map((redis) => createSiteGate({ redis, prefix: namespace.prefix, startSkewMs: 0 }));
}

function refused(decision: GateDecision): Extract<GateDecision, { granted: false }> {
  if (decision.granted) throw new Error('expected a refusal, got a lease');
  return decision;
}

describe('spacing', () => {
  it('keeps request starts at least the minimum pause apart across many concurrent clients', async () => {
    const siteId = newSite();
    const policy: SitePolicy = { minPauseMs: 80, maxPauseMs: 160, maxConcurrency: 10 };
    // 24 jobs spread over 8 clients, all arriving at once.
    const starts = await grantAll(siteId, 24, () => policy);
    const state = await gates[0]!.inspect(siteId);
    expect(state.reservations).toBe(0);
    const gaps = starts.slice(1).map((start, index) => start - starts[index]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(80);
    // Randomized: not every gap is the minimum, and the average sits inside [min, max].
    const mean = (starts.at(-1)! - starts[0]!) / gaps.length;
    expect(mean).toBeGreaterThan(80);
    expect(mean).toBeLessThan(160 + 60);
  });

  it('takes the largest of rate limit, Crawl-delay and pause as the spacing', async () => {
    const siteId = newSite();
    // rps 10 → 100 ms, above the 50 ms pause: the rate limit is the spacing, then Crawl-delay is.
    const policy: SitePolicy = {
      minPauseMs: 50,
      maxPauseMs: 50,
      maxConcurrency: 50,
      rateLimitRps: 10,
    };
    const grants = await grantAll(siteId, 12, (index) =>
      index >= 6 ? { ...policy, crawlDelayMs: 150 } : policy,
    );
    for (let i = 1; i < grants.length; i += 1)
      expect(grants[i]! - grants[i - 1]!).toBeGreaterThanOrEqual(100);
  });

  it('gives each waiting holder its own slot instead of waking everyone together', async () => {
    const siteId = newSite();
    const policy: SitePolicy = { minPauseMs: 1000, maxPauseMs: 1000, maxConcurrency: 10 };
    const first = await gates[0]!.acquire(siteId, policy, { holder: 'a' });
    expect(first.granted).toBe(true);
    const b = refused(await gates[1]!.acquire(siteId, policy, { holder: 'b' }));
    const c = refused(await gates[2]!.acquire(siteId, policy, { holder: 'c' }));
    expect(b.reason).toBe('rate');
    expect(c.retryAt - b.retryAt).toBe(1000);
    // Asking again does not move the slot.
    expect(refused(await gates[3]!.acquire(siteId, policy, { holder: 'b' })).retryAt).toBe(
      b.retryAt,
    );
    // Crawl-delay raises the floor above the pause (widened by the default 40 ms start skew).
    const d = refused(
      await gates[0]!.acquire(siteId, { ...policy, crawlDelayMs: 3000 }, { holder: 'd' }),
    );
    expect(d.retryAt - c.retryAt).toBe(3040);
    expect((await gates[0]!.inspect(siteId)).reservations).toBe(3);
  });

  it('widens the rate interval and Crawl-delay by the start skew', async () => {
    const gate = createSiteGate({ redis: clients[0]!, prefix: namespace.prefix, startSkewMs: 20 });
    const nextSlotAfter = async (policy: SitePolicy): Promise<number> => {
      const siteId = newSite();
      const first = await gate.acquire(siteId, policy, { holder: 'first' });
      if (!first.granted) throw new Error('expected a lease');
      return (
        refused(await gate.acquire(siteId, policy, { holder: 'second' })).retryAt -
        first.lease.grantedAt
      );
    };
    const base: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 10 };
    // 4 requests/s: four intervals of 255 ms span 1020 ms, so starts that drift by up to 20 ms
    // still put at most 4 into any 1-second window.
    expect(await nextSlotAfter({ ...base, rateLimitRps: 4 })).toBe(255);
    // Below one request per second each interval holds one start: it gets the whole skew.
    expect(await nextSlotAfter({ ...base, rateLimitRps: 0.5 })).toBe(2020);
    expect(await nextSlotAfter({ ...base, crawlDelayMs: 300 })).toBe(320);
    // The pause is our own choice of pace, not a limit the site set: it is not widened.
    expect(await nextSlotAfter({ ...base, minPauseMs: 300, maxPauseMs: 300 })).toBe(300);
  });

  it('spaces every ten grants at 10 requests/s over a second plus the skew', async () => {
    const siteId = newSite();
    const policy: SitePolicy = {
      minPauseMs: 0,
      maxPauseMs: 0,
      maxConcurrency: 10,
      rateLimitRps: 10,
    };
    const grants = await grantAll(siteId, 24, () => policy);
    // Ten consecutive grants span at least a second plus the default 40 ms skew.
    for (let i = 10; i < grants.length; i += 1)
      expect(grants[i]! - grants[i - 10]!).toBeGreaterThanOrEqual(1040);
  });

  it('does not reserve beyond the horizon', async () => {
    const siteId = newSite();
    const gate = createSiteGate({ redis: clients[0]!, prefix: namespace.prefix, horizonMs: 2_500 });
    const policy: SitePolicy = { minPauseMs: 1000, maxPauseMs: 1000, maxConcurrency: 10 };
    expect((await gate.acquire(siteId, policy, { holder: 'h0' })).granted).toBe(true);
    const reasons: string[] = [];
    for (let i = 1; i <= 4; i += 1)
      reasons.push(refused(await gate.acquire(siteId, policy, { holder: `h${i}` })).reason);
    expect(reasons).toEqual(['rate', 'rate', 'schedule-full', 'schedule-full']);
  });

  it('validates the policy', async () => {
    await expect(
      gates[0]!.acquire(newSite(), { minPauseMs: 5, maxPauseMs: 1, maxConcurrency: 1 }),
    ).rejects.toThrow(RangeError);
    await expect(
      gates[0]!.acquire(newSite(), { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 0 }),
    ).rejects.toThrow(RangeError);
    expect(() => siteGateKeys('p', 'a}b')).toThrow(RangeError);
  });
});

describe('concurrency leases', () => {
  it('caps fetches in flight and frees a slot on release', async () => {
    const siteId = newSite();
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 2 };
    const one = await gates[0]!.acquire(siteId, policy);
    const two = await gates[1]!.acquire(siteId, policy);
    expect(one.granted && two.granted).toBe(true);
    const third = refused(await gates[2]!.acquire(siteId, policy));
    expect(third.reason).toBe('concurrency');
    expect(third.delayMs).toBeGreaterThanOrEqual(1000);
    if (one.granted) await one.lease.release({ status: 200 });
    expect((await gates[2]!.acquire(siteId, policy)).granted).toBe(true);
  });

  it('wakes a caller waiting in this process when a lease of the site is freed', async () => {
    const siteId = newSite();
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 1 };
    const gate = gates[0]!;
    const held = await gate.acquire(siteId, policy);
    if (!held.granted) throw new Error('expected a lease');
    expect(refused(await gate.acquire(siteId, policy)).reason).toBe('concurrency');

    // Another site's lease, or one freed by another replica, wakes nobody here before the timeout.
    const other = await gate.acquire(newSite(), policy);
    if (!other.granted) throw new Error('expected a lease');
    let woken = false;
    const waiting = gate.nextRelease(siteId, 5_000).then(() => (woken = true));
    await other.lease.release({ status: 200 });
    await sleep(50);
    expect(woken).toBe(false);

    const started = performance.now();
    await held.lease.release({ status: 200 });
    await waiting;
    expect(performance.now() - started).toBeLessThan(1_000);
    expect((await gate.acquire(siteId, policy)).granted).toBe(true);

    // Without a release: the timeout, or the caller's signal, ends the wait.
    const timedOut = performance.now();
    await gate.nextRelease(siteId, 30);
    expect(performance.now() - timedOut).toBeGreaterThanOrEqual(25);
    await gate.nextRelease(siteId, 60_000, AbortSignal.abort());
  });

  it('lets one waiter at a time look for leases other processes freed, first come first', async () => {
    const siteId = newSite();
    const gate = gates[0]!;
    const woken: { index: number; at: number }[] = [];
    const started = performance.now();
    await Promise.all(
      [0, 1, 2].map((index) =>
        gate
          .nextRelease(siteId, 100)
          .then(() => woken.push({ index, at: performance.now() - started })),
      ),
    );
    // One timer for the three: each period wakes the next of them, not all three at once.
    expect(woken.map(({ index }) => index)).toEqual([0, 1, 2]);
    expect(woken[1]!.at - woken[0]!.at).toBeGreaterThanOrEqual(60);
    expect(woken[2]!.at - woken[1]!.at).toBeGreaterThanOrEqual(60);
  });

  it('keeps the lease of a live holder past its TTL for as long as its fetch runs', async () => {
    const siteId = newSite();
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 1 };
    const gate = createSiteGate({ redis: clients[0]!, prefix: namespace.prefix, leaseTtlMs: 300 });
    const decision = await gate.acquire(siteId, policy);
    if (!decision.granted) throw new Error('expected a lease');
    // Three TTLs: renewed every 100 ms, it is still held.
    await sleep(900);
    expect(refused(await gates[1]!.acquire(siteId, policy)).reason).toBe('concurrency');
    expect((await gates[1]!.inspect(siteId)).leases).toBe(1);
    await decision.lease.release({ status: 200 });
    expect((await gates[1]!.acquire(siteId, policy)).granted).toBe(true);
  });

  it('expires the lease of a worker that died, so its slot comes back', async () => {
    const siteId = newSite();
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 1 };
    const worker = mortalRedis(clients[0]!);
    const dying = createSiteGate({
      redis: worker.redis,
      prefix: namespace.prefix,
      leaseTtlMs: 1_000,
    });
    const before = await redisNow();
    expect((await dying.acquire(siteId, policy)).granted).toBe(true); // never released
    worker.die();
    expect(refused(await gates[1]!.acquire(siteId, policy)).reason).toBe('concurrency');
    expect((await gates[1]!.inspect(siteId)).leases).toBe(1);
    // leaseTtlMs is 1 s in these tests: the lease goes once it is up, not before.
    await expect
      .poll(async () => (await gates[1]!.inspect(siteId)).leases, { timeout: 5_000, interval: 50 })
      .toBe(0);
    expect((await redisNow()) - before).toBeGreaterThanOrEqual(1_000);
    expect((await gates[1]!.acquire(siteId, policy)).granted).toBe(true);
  });

  it('releases a lease whose release met a Redis outage once Redis is back', async () => {
    const siteId = newSite();
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 1 };
    const flaky = mortalRedis(clients[0]!);
    // Leases outlive the test: only the retried release can free the slot.
    const gate = createSiteGate({
      redis: flaky.redis,
      prefix: namespace.prefix,
      leaseTtlMs: 60_000,
    });
    const decision = await gate.acquire(siteId, policy);
    if (!decision.granted) throw new Error('expected a lease');
    flaky.setDown(true);
    await expect(decision.lease.release({ status: 200 })).rejects.toThrow(/writeable/);
    flaky.setDown(false);
    expect((await gates[1]!.inspect(siteId)).leases).toBe(1);
    await expect
      .poll(async () => (await gates[1]!.inspect(siteId)).leases, { timeout: 5_000 })
      .toBe(0);
    expect((await gates[1]!.acquire(siteId, policy)).granted).toBe(true);
  });

  it('lets every key expire once the site is idle', async () => {
    const siteId = newSite();
    // Its only worker dies holding a lease.
    const worker = mortalRedis(clients[0]!);
    const gate = createSiteGate({
      redis: worker.redis,
      prefix: namespace.prefix,
      leaseTtlMs: 500,
      idleTtlMs: 500,
    });
    const decision = await gate.acquire(siteId, {
      minPauseMs: 0,
      maxPauseMs: 0,
      maxConcurrency: 1,
    });
    expect(decision.granted).toBe(true);
    worker.die();
    const keys = siteGateKeys(namespace.prefix, siteId);
    expect(await clients[0]!.pttl(keys.state)).toBeGreaterThan(0);
    expect(await clients[0]!.pttl(keys.leases)).toBeGreaterThan(0);
    await expect
      .poll(() => clients[0]!.exists(keys.state, keys.leases, keys.reservations), {
        timeout: 5_000,
        interval: 50,
      })
      .toBe(0);
  });

  it('releases once however often release is called', async () => {
    const siteId = newSite();
    const decision = await gates[0]!.acquire(siteId, {
      minPauseMs: 0,
      maxPauseMs: 0,
      maxConcurrency: 1,
    });
    if (!decision.granted) throw new Error('expected a lease');
    await Promise.all([
      decision.lease.release({ status: 500 }),
      decision.lease.release({ status: 500 }),
    ]);
    expect((await gates[0]!.inspect(siteId)).consecutiveFailures).toBe(1);
  });
});

describe('timed grants', () => {
  // No start skew here, so that intervals are round: 10 requests/s is 100 ms.
  let replicas: SiteGate[];
  beforeAll(() => {
    replicas = replicasWithoutSkew();
  });
  const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 4, rateLimitRps: 10 };

  it('grants a start just ahead instead of refusing until it', async () => {
    const siteId = newSite();
    const first = await replicas[0]!.acquire(siteId, policy, { holder: 'a' });
    if (!first.granted) throw new Error('expected a lease');
    const asked = performance.now();
    const second = await replicas[1]!.acquire(siteId, policy, { holder: 'b', startWithinMs: 250 });
    if (!second.granted) throw new Error('expected a timed grant');
    expect(second.lease.grantedAt - first.lease.grantedAt).toBe(100);
    // Waiting until startAfter on the local clock never starts before the granted time.
    expect(second.lease.startAfter - asked).toBeGreaterThanOrEqual(
      second.lease.grantedAt - (await redisNow()) - 5,
    );
    expect(second.lease.startBy - second.lease.startAfter).toBeLessThanOrEqual(20);
    const third = await replicas[2]!.acquire(siteId, policy, { holder: 'c', startWithinMs: 250 });
    if (!third.granted) throw new Error('expected a timed grant');
    expect(third.lease.grantedAt - second.lease.grantedAt).toBe(100);
    // Beyond the accepted wait: a reservation, as before.
    const fourth = refused(
      await replicas[0]!.acquire(siteId, policy, { holder: 'd', startWithinMs: 250 }),
    );
    expect(fourth.reason).toBe('rate');
    expect(fourth.retryAt - third.lease.grantedAt).toBe(100);
    expect((await replicas[0]!.inspect(siteId)).reservations).toBe(1);
    // The spacing counts from the granted start, not from when it was asked for.
    const untimed = refused(await replicas[1]!.acquire(siteId, policy));
    expect(untimed.retryAt).toBeGreaterThanOrEqual(third.lease.grantedAt + 100);
  });

  it('keeps the turn of a caller whose start is ahead while every concurrency slot is taken', async () => {
    const siteId = newSite();
    const narrow: SitePolicy = { ...policy, maxConcurrency: 2 };
    const first = await replicas[0]!.acquire(siteId, narrow, { holder: 'a' });
    const second = await replicas[1]!.acquire(siteId, narrow, { holder: 'b', startWithinMs: 250 });
    if (!first.granted || !second.granted) throw new Error('expected two leases');
    const third = refused(
      await replicas[2]!.acquire(siteId, narrow, { holder: 'c', startWithinMs: 250 }),
    );
    expect(third.reason).toBe('rate');
    expect(third.retryAt - second.lease.grantedAt).toBe(100);
    expect((await replicas[2]!.inspect(siteId)).reservations).toBe(1);
    await first.lease.release({ status: 200 });
    const again = await replicas[2]!.acquire(siteId, narrow, { holder: 'c', startWithinMs: 250 });
    if (!again.granted) throw new Error('expected the reserved start');
    expect(again.lease.grantedAt).toBe(third.retryAt);
  });

  it('validates the accepted wait', async () => {
    await expect(
      replicas[0]!.acquire(newSite(), policy, { startWithinMs: Number.NaN }),
    ).rejects.toThrow(RangeError);
  });
});

describe('holders that come back late', () => {
  it('gives each of them its own slot after the floor instead of one shared start', async () => {
    const gate = createSiteGate({ redis: clients[0]!, prefix: namespace.prefix, startSkewMs: 0 });
    const siteId = newSite();
    const policy: SitePolicy = {
      minPauseMs: 0,
      maxPauseMs: 0,
      maxConcurrency: 4,
      rateLimitRps: 10,
    };
    const first = await gate.acquire(siteId, policy, { holder: 'a' });
    if (!first.granted) throw new Error('expected a lease');
    const booked = await gate.reserve(siteId, policy, ['x', 'y', 'z']);
    expect(booked.slots).toEqual([0, 1, 2].map((i) => first.lease.grantedAt + 100 * (i + 1)));
    // All three come back after every one of their slots has passed.
    await sleep(Math.max(0, booked.slots[2]! - (await redisNow())) + 50);
    const x = await gate.acquire(siteId, policy, { holder: 'x' });
    if (!x.granted) throw new Error('expected the late holder to be granted at once');
    const y = refused(await gate.acquire(siteId, policy, { holder: 'y' }));
    const z = refused(await gate.acquire(siteId, policy, { holder: 'z' }));
    expect([y.reason, z.reason]).toEqual(['rate', 'rate']);
    expect(y.retryAt).toBe(x.lease.grantedAt + 100);
    expect(z.retryAt).toBe(y.retryAt + 100);
    expect((await gate.inspect(siteId)).reservations).toBe(2);
    // Each is granted at the slot it was given. A timer counts from the event loop's cached clock
    // and may fire a little before its time by Redis's: a few ms of margin, well inside z's slot.
    await sleep(Math.max(0, y.retryAt - (await redisNow())) + 5);
    const again = await gate.acquire(siteId, policy, { holder: 'y' });
    if (!again.granted) throw new Error('expected the new slot to be granted');
    expect(again.lease.grantedAt).toBeGreaterThanOrEqual(y.retryAt);
    expect(again.lease.grantedAt).toBeLessThan(z.retryAt);
  });
});

describe('booking ahead', () => {
  const policy: SitePolicy = { minPauseMs: 1000, maxPauseMs: 1000, maxConcurrency: 10 };

  it('books the slots that first acquires would get, and grants each holder at its slot', async () => {
    const siteId = newSite();
    const { now, slots } = await gates[0]!.reserve(siteId, policy, ['a', 'b', 'c']);
    expect(slots).toEqual([now, now + 1000, now + 2000]);
    expect((await gates[0]!.inspect(siteId)).reservations).toBe(3);
    // Booking again keeps an existing slot and appends a new holder after the tail.
    const again = await gates[1]!.reserve(siteId, policy, ['b', 'd']);
    expect(again.slots).toEqual([now + 1000, now + 3000]);
    // A holder is granted at its slot, and one that asks early is told its slot, not a new one.
    const a = await gates[2]!.acquire(siteId, policy, { holder: 'a' });
    expect(a.granted).toBe(true);
    expect(refused(await gates[3]!.acquire(siteId, policy, { holder: 'b' })).retryAt).toBe(
      now + 1000,
    );
    // A newcomer queues after every booked slot.
    expect(refused(await gates[3]!.acquire(siteId, policy, { holder: 'e' })).retryAt).toBe(
      now + 4000,
    );
  });

  it('books nothing beyond the horizon, nor while the site cools down', async () => {
    const gate = createSiteGate({ redis: clients[0]!, prefix: namespace.prefix, horizonMs: 2_500 });
    const siteId = newSite();
    const { now, slots } = await gate.reserve(siteId, policy, ['a', 'b', 'c', 'd']);
    expect(slots).toEqual([now, now + 1000, now + 2000, null]);

    const cooling = newSite();
    const open: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 4 };
    const lease = await acquireUntilGranted(gate, cooling, open, 'first');
    await lease.release({ status: 429, retryAfterMs: 5_000 });
    expect((await gate.reserve(cooling, open, ['x', 'y'])).slots).toEqual([null, null]);
    expect((await gate.inspect(cooling)).reservations).toBe(0);
  });

  it('validates holders', async () => {
    await expect(gates[0]!.reserve(newSite(), policy, ['a', ''])).rejects.toThrow(RangeError);
    expect((await gates[0]!.reserve(newSite(), policy, [])).slots).toEqual([]);
  });
});

describe('grants given back unused', () => {
  let replicas: SiteGate[];
  beforeAll(() => {
    replicas = replicasWithoutSkew();
  });
  const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 4, rateLimitRps: 4 };

  it('sets a start deadline on the local clock', async () => {
    const gate = createSiteGate({
      redis: clients[0]!,
      prefix: namespace.prefix,
      startDeadlineMs: 40,
    });
    const before = performance.now();
    const decision = await gate.acquire(newSite(), policy);
    if (!decision.granted) throw new Error('expected a lease');
    expect(decision.lease.startAfter).toBeGreaterThanOrEqual(before);
    expect(decision.lease.startAfter).toBeLessThanOrEqual(performance.now());
    // Counted from the earliest the grant can be: the ask, less the 1 ms Redis's TIME is truncated by.
    expect(decision.lease.startBy).toBeGreaterThanOrEqual(before + 40 - 1);
    expect(decision.lease.startBy).toBeLessThanOrEqual(performance.now() + 40);
  });

  it('sets no deadline where the site has no spacing at all', async () => {
    const unspaced = await replicas[0]!.acquire(newSite(), {
      minPauseMs: 0,
      maxPauseMs: 0,
      maxConcurrency: 4,
    });
    if (!unspaced.granted) throw new Error('expected a lease');
    expect(unspaced.lease.startBy).toBe(Number.POSITIVE_INFINITY);
    // Any spacing, a random pause included, brings the deadline back.
    const paused = await replicas[0]!.acquire(newSite(), {
      minPauseMs: 0,
      maxPauseMs: 5,
      maxConcurrency: 4,
    });
    if (!paused.granted) throw new Error('expected a lease');
    expect(Number.isFinite(paused.lease.startBy)).toBe(true);
  });

  it('rewinds the spacing and keeps the holder first in line', async () => {
    const siteId = newSite();
    const first = await replicas[0]!.acquire(siteId, policy, { holder: 'late' });
    if (!first.granted) throw new Error('expected a lease');
    // Another job books the next slot while the grant is out.
    const other = refused(await replicas[1]!.acquire(siteId, policy, { holder: 'other' }));
    expect(other.retryAt - first.lease.grantedAt).toBe(250);
    await first.lease.giveBack();
    expect((await replicas[0]!.inspect(siteId)).leases).toBe(0);
    // The request never went out: the holder is granted again at once, not after `other`.
    const again = await replicas[2]!.acquire(siteId, policy, { holder: 'late' });
    if (!again.granted) throw new Error('expected the holder to keep its turn');
    // `other` keeps its slot, and the floor now counts from the grant that is used.
    const otherLease = await acquireUntilGranted(replicas[1]!, siteId, policy, 'other');
    expect(otherLease.grantedAt - again.lease.grantedAt).toBeGreaterThanOrEqual(250);
    expect((await replicas[0]!.inspect(siteId)).reservations).toBe(0);
  });

  it('does not rewind past a grant made since, and settles the lease only once', async () => {
    const siteId = newSite();
    // 2 requests/s: 500 ms between grants, so that the refusal below still comes before the
    // next grant is due on a machine busy enough to take a while between two calls.
    const fast: SitePolicy = { ...policy, rateLimitRps: 2 };
    const first = await replicas[0]!.acquire(siteId, fast, { holder: 'late' });
    if (!first.granted) throw new Error('expected a lease');
    const second = await acquireUntilGranted(replicas[1]!, siteId, fast, 'next');
    await first.lease.giveBack();
    await first.lease.release({ status: 500 }); // already settled: no failure is counted
    expect((await replicas[0]!.inspect(siteId)).consecutiveFailures).toBe(0);
    const again = refused(await replicas[0]!.acquire(siteId, fast, { holder: 'late' }));
    expect(again.reason).toBe('rate');
    expect(again.retryAt).toBe(second.grantedAt + 500);
    const lease = await acquireUntilGranted(replicas[0]!, siteId, fast, 'late');
    expect(lease.grantedAt - second.grantedAt).toBeGreaterThanOrEqual(500);
    await Promise.all([second.release({ status: 200 }), lease.release({ status: 200 })]);
  });

  it('frees the half-open breaker for another probe', async () => {
    const siteId = newSite();
    const gate = createSiteGate({
      redis: clients[0]!,
      prefix: namespace.prefix,
      failureThreshold: 1,
      openMs: 200,
    });
    const open: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 10 };
    await (await acquireUntilGranted(gate, siteId, open, 'w')).release({ failed: true });
    await sleep(refused(await gate.acquire(siteId, open)).delayMs + 10);
    const probe = await gate.acquire(siteId, open, { holder: 'p1' });
    if (!probe.granted || !probe.lease.probe) throw new Error('expected the probe');
    expect(refused(await gate.acquire(siteId, open)).reason).toBe('circuit-half-open');
    await probe.lease.giveBack();
    const next = await gate.acquire(siteId, open, { holder: 'p2' });
    expect(next.granted && next.lease.probe).toBe(true);
  });
});

describe('cooldown', () => {
  it('refuses every acquire for the 5 s of Retry-After after a 429, then lets requests through again', async () => {
    const siteId = newSite();
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 4 };
    const first = await gates[0]!.acquire(siteId, policy, { holder: 'x' });
    if (!first.granted) throw new Error('expected a lease');
    const before = await redisNow();
    await first.lease.release({ status: 429, retryAfterMs: 5_000 });

    const checks = await Promise.all(
      gates.map((gate, index) => gate.acquire(siteId, policy, { holder: `during-${index}` })),
    );
    for (const check of checks) {
      const refusal = refused(check);
      expect(refusal.reason).toBe('cooldown');
      expect(refusal.retryAt - before).toBeGreaterThanOrEqual(5_000 - 50);
      expect(refusal.retryAt - before).toBeLessThanOrEqual(5_000 + 1_000);
    }
    await sleep(2_500);
    expect(refused(await gates[1]!.acquire(siteId, policy)).reason).toBe('cooldown');
    const cooldownEnd = refused(checks[0]!).retryAt;
    await sleep(Math.max(0, cooldownEnd - (await redisNow())) + 20);
    // The spacing is doubled right after a cooldown; with a zero pause that still lets one through.
    expect((await gates[2]!.acquire(siteId, policy)).granted).toBe(true);
    expect((await gates[2]!.inspect(siteId)).slowdown).toBe(2);
  });

  it('backs off without Retry-After, drops reservations, and recovers the rate step by step', async () => {
    const siteId = newSite();
    const gate = createSiteGate({
      redis: clients[0]!,
      prefix: namespace.prefix,
      cooldownBaseMs: 300,
      recoverAfter: 2,
    });
    const policy: SitePolicy = { minPauseMs: 100, maxPauseMs: 100, maxConcurrency: 4 };
    const lease = await acquireUntilGranted(gate, siteId, policy, 'first');
    expect(refused(await gate.acquire(siteId, policy, { holder: 'waiting' })).reason).toBe('rate');
    expect((await gate.inspect(siteId)).reservations).toBe(1);
    const released = await redisNow();
    await lease.release({ status: 503 });
    let state = await gate.inspect(siteId);
    expect(state.reservations).toBe(0);
    expect(state.slowdown).toBe(2);
    expect(state.cooldownUntil - released).toBeGreaterThanOrEqual(300);

    // Second 429 in a row: the backoff doubles (600 ms) and the slowdown too.
    await sleep(Math.max(0, state.cooldownUntil - (await redisNow())) + 10);
    const second = await acquireUntilGranted(gate, siteId, policy, 'second');
    const t0 = await redisNow();
    await second.release({ status: 429 });
    state = await gate.inspect(siteId);
    expect(state.cooldownUntil - t0).toBeGreaterThanOrEqual(550);
    expect(state.slowdown).toBe(4);

    // After the cooldown the pause is 100 ms × 4; two successes halve it, two more halve it again.
    await sleep(Math.max(0, state.cooldownUntil - (await redisNow())) + 10);
    const slowdowns: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const next = await acquireUntilGranted(gate, siteId, policy, `ok-${i}`);
      await next.release({ status: 200 });
      slowdowns.push((await gate.inspect(siteId)).slowdown);
    }
    expect(slowdowns).toEqual([4, 2, 2, 1]);
  });
});

describe('circuit breaker', () => {
  it('opens after consecutive failures, lets one probe through half-open, and closes on its success', async () => {
    const siteId = newSite();
    const gate = createSiteGate({
      redis: clients[0]!,
      prefix: namespace.prefix,
      failureThreshold: 3,
      openMs: 600,
    });
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 10 };
    // A 404 in between resets the count: the site is answering. Each outcome is another page's.
    const outcomes = [{ status: 500 }, { status: 404 }, { failed: true }, { status: 502 }];
    for (const [index, outcome] of outcomes.entries()) {
      const lease = await acquireUntilGranted(gate, siteId, policy, `w${index}`);
      await lease.release(outcome);
    }
    expect((await gate.inspect(siteId)).breaker).toBe('closed');
    const lease = await acquireUntilGranted(gate, siteId, policy, 'w4');
    await lease.release({ failed: true });
    expect((await gate.inspect(siteId)).breaker).toBe('open');

    const whileOpen = refused(await gate.acquire(siteId, policy));
    expect(whileOpen.reason).toBe('circuit-open');
    await sleep(whileOpen.delayMs + 10);

    const probe = await gate.acquire(siteId, policy);
    if (!probe.granted) throw new Error('expected the probe');
    expect(probe.lease.probe).toBe(true);
    expect(refused(await gates[1]!.acquire(siteId, policy)).reason).toBe('circuit-half-open');
    await probe.lease.release({ status: 200 });
    expect((await gate.inspect(siteId)).breaker).toBe('closed');
    const after = await gate.acquire(siteId, policy);
    expect(after.granted && !after.lease.probe).toBe(true);
  });

  it('counts a page’s failure once: its retries neither open the breaker nor reset the count', async () => {
    const siteId = newSite();
    const gate = createSiteGate({
      redis: clients[0]!,
      prefix: namespace.prefix,
      failureThreshold: 3,
    });
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 10 };
    const fail = async (holder: string, outcome: GateOutcome = { failed: true }) =>
      (await acquireUntilGranted(gate, siteId, policy, holder)).release(outcome);
    // Two bad pages retried again and again, as a crawl job's attempts are, with nothing else.
    for (let attempt = 0; attempt < 4; attempt += 1) {
      await fail('bad-1');
      await fail('bad-2', { status: 500 });
    }
    expect(await gate.inspect(siteId)).toMatchObject({ breaker: 'closed', consecutiveFailures: 2 });
    // A third page failing makes three distinct failures in a row: the site is down.
    await fail('bad-3');
    expect(await gate.inspect(siteId)).toMatchObject({
      breaker: 'open',
      openUntil: expect.any(Number),
    });
  });

  it('forgets a page’s failure once it succeeds, and after failureMemoryMs', async () => {
    const siteId = newSite();
    const gate = createSiteGate({
      redis: clients[0]!,
      prefix: namespace.prefix,
      failureThreshold: 10,
      failureMemoryMs: 300,
    });
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 10 };
    const settle = async (holder: string, outcome: GateOutcome) =>
      (await acquireUntilGranted(gate, siteId, policy, holder)).release(outcome);
    await settle('flaky', { failed: true });
    await settle('flaky', { status: 200 });
    await settle('flaky', { failed: true });
    expect((await gate.inspect(siteId)).consecutiveFailures).toBe(1);
    await settle('flaky', { failed: true }); // a repeat: not counted
    expect((await gate.inspect(siteId)).consecutiveFailures).toBe(1);
    await sleep(400);
    await settle('flaky', { failed: true }); // remembered no longer: counted again
    expect((await gate.inspect(siteId)).consecutiveFailures).toBe(2);
    // Leases without a holder have nothing to tell apart: each failure counts.
    const bare = async () => {
      const decision = await gate.acquire(siteId, policy);
      if (!decision.granted) throw new Error('expected a lease');
      await decision.lease.release({ failed: true });
    };
    await bare();
    await bare();
    expect((await gate.inspect(siteId)).consecutiveFailures).toBe(4);
  });

  it('reopens for twice as long when the probe fails', async () => {
    const siteId = newSite();
    const gate = createSiteGate({
      redis: clients[0]!,
      prefix: namespace.prefix,
      failureThreshold: 1,
      openMs: 400,
    });
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 10 };
    await (await acquireUntilGranted(gate, siteId, policy, 'w')).release({ status: 500 });
    await sleep(refused(await gate.acquire(siteId, policy)).delayMs + 10);
    const probe = await gate.acquire(siteId, policy);
    if (!probe.granted) throw new Error('expected the probe');
    const t0 = await redisNow();
    await probe.lease.release({ failed: true });
    const reopened = refused(await gate.acquire(siteId, policy));
    expect(reopened.reason).toBe('circuit-open');
    expect(reopened.retryAt - t0).toBeGreaterThanOrEqual(750);
  });

  it('lets another probe go when the first one dies with its worker', async () => {
    const siteId = newSite();
    const settings = {
      prefix: namespace.prefix,
      failureThreshold: 1,
      openMs: 200,
      leaseTtlMs: 300,
    };
    const gate = createSiteGate({ redis: clients[0]!, ...settings });
    const worker = mortalRedis(clients[1]!);
    const dying = createSiteGate({ redis: worker.redis, ...settings });
    const policy: SitePolicy = { minPauseMs: 0, maxPauseMs: 0, maxConcurrency: 10 };
    await (await acquireUntilGranted(gate, siteId, policy, 'w')).release({ failed: true });
    await sleep(refused(await gate.acquire(siteId, policy)).delayMs + 10);
    const lost = await dying.acquire(siteId, policy);
    expect(lost.granted && lost.lease.probe).toBe(true); // never released
    worker.die();
    expect(refused(await gate.acquire(siteId, policy)).reason).toBe('circuit-half-open');
    await sleep(350);
    const next = await gate.acquire(siteId, policy);
    expect(next.granted && next.lease.probe).toBe(true);
  });
});

describe('outcomes of fetches', () => {
  it('maps results and errors to what the gate needs', () => {
    expect(outcomeOfResult({ status: 200 })).toEqual({ status: 200 });
    expect(outcomeOfError(new HttpStatusError('http://x/', 429, 5000))).toEqual({
      status: 429,
      retryAfterMs: 5000,
    });
    expect(outcomeOfError(new HttpStatusError('http://x/', 503, undefined))).toEqual({
      status: 503,
    });
    expect(outcomeOfError(new HttpTimeoutError('http://x/', 10))).toEqual({ failed: true });
    expect(outcomeOfError(new HttpAddressBlockedError('http://x/', '127.0.0.1'))).toEqual({});
  });
});
