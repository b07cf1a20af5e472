/**
 * The verdict of `pnpm bench api`: for one route, the highest open-loop rate at which the API keeps
 * its p99 under the route's bound, against the same for the bare server (api-bare.ts), in
 * interleaved rounds. Absolute rates depend on the machine; their ratio says what the API's
 * layers cost, and both sides suffer the machine's drift alike: within a round the two capacity
 * searches take turns step by step, and the side that goes first alternates between rounds.
 *
 * A capacity search doubles its rate from a start until a step misses (first round), or steps by
 * RETRY_GROWTH from the previous rounds' median (later rounds), then bisects the gap (in ratio)
 * until it is within RESOLUTION; a rate that misses is tried once more. A step holds when the p99 of its counted requests, each measured
 * from its scheduled time, is under the bound, a request not answered 2xx (a 503 the API sheds, a
 * timeout) counting as never answered: at most 1 % of them late or refused, on either side.
 *
 * After both searches, each server is offered half the lower of the two capacities for one step,
 * and its CPU per request is read from /proc: its own processes', and that of the Postgres
 * backends serving the bench's database (the same statements: about the same on both sides).
 * Redis is left out: its one server also serves whatever else runs on the machine.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { LoadRequest, LoadResult } from './api-load.js';
import { otherCpuSeconds } from './rounds.js';
import {
  cpuSecondsBetween,
  cpuSnapshot,
  processTree,
  round2,
  type CpuSnapshot,
  type Progress,
} from './support.js';

export type Side = 'api' | 'bare';

export interface RatioServer {
  origin: string;
  /** The server's first process; its CPU is that of every process below it as well. */
  pid: number;
}

export interface RatioSettings {
  rounds: number;
  /** Counted seconds of each step, after STEP_WARM_UP_SECONDS uncounted. */
  stepSeconds: number;
  /** Where the first round's searches start; they double from there. */
  firstRate: number;
  connections: number;
  authorization: string;
}

export interface RatioContext {
  progress: Progress;
  load: (request: LoadRequest) => Promise<LoadResult>;
  servers: Record<Side, RatioServer>;
  generatorPid: number;
  /** The bench's database: Postgres backends serving it count as the bench's. */
  databaseName: string;
  settings: RatioSettings;
}

/** CPU milliseconds per request: the server's processes, and Postgres answering it. */
export interface CpuPerRequest {
  server: number;
  postgres: number;
}

/**
 * What made the API's last missed step of a round miss (the one just above its capacity): mostly
 * its own 503s (load shedding), or answers later than the bound; `none` when no step missed.
 */
export type ApiLimit = 'shed' | 'late' | 'none';

export interface RouteRatio {
  /** Median over the rounds of api / bare capacity, each round's pair measured side by side. */
  ratio: number;
  /** Median capacities: requests/s served with p99 under the bound. */
  api: number;
  bare: number;
  byRound: { api: number; bare: number; ratio: number; apiLimit: ApiLimit }[];
  /** Medians over the rounds, both sides offered `atRps` (median of the rounds' rates). */
  cpuMsPerRequest: { atRps: number; api: CpuPerRequest; bare: CpuPerRequest };
  /** CPU seconds that processes outside the bench took on this machine during the route's rounds. */
  otherCpuSeconds: number;
  seconds: number;
}

/** Uncounted seconds of each step: a step opens its connections afresh. */
const STEP_WARM_UP_SECONDS = 1;
/** Capacity is known within this factor: the bisection stops when missed / held is below it. */
const RESOLUTION = 1.08;
/** Later rounds step by this factor from the previous rounds' median. */
const RETRY_GROWTH = 1.25;
/** The share of a step's requests that may be late or refused: p99. */
const LATE_SHARE = 0.01;
/** Below this a route counts as not served at all (capacity 0). */
const MIN_RATE = 10;
/** BENCH_API_RATE's upper bound: about what one generator process can schedule. */
const MAX_RATE = 20_000;
/** Between steps: what a missed step left in flight drains before the other server is measured. */
const SETTLE_MS = 300;
/**
 * The bench's processes in the CPU accounting, and the servers that work for everyone (Redis, and
 * Postgres's own processes: checkpoints, WAL, autovacuum), which count for neither side; the rest,
 * host steal included, is other work.
 */
const BENCH_LABELS = new Set([
  'api',
  'bare',
  'generator',
  'bench',
  'database',
  'postgres',
  'redis-server',
]);

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
const round3 = (value: number) => Math.round(value * 1000) / 1000;

/**
 * Whether `rate` holds: a miss is tried once more. Other work on the machine makes a step miss that
 * would have held (a stolen core, a burst of shedding), never the other way round: a server past
 * its capacity misses each time.
 */
function* holds(rate: number): Generator<number, boolean, boolean> {
  return (yield rate) || (yield rate);
}

/**
 * A capacity search: yields the rate to try, is told whether it held, returns the highest rate
 * that held (0 when even MIN_RATE missed).
 */
function* capacitySearch(start: number, growth: number): Generator<number, number, boolean> {
  let held = 0;
  let missed = Infinity;
  let rate = Math.min(MAX_RATE, Math.max(MIN_RATE, Math.round(start)));
  for (;;) {
    if (yield* holds(rate)) {
      held = rate;
      if (missed !== Infinity || rate === MAX_RATE) break;
      rate = Math.min(MAX_RATE, Math.round(rate * growth));
    } else {
      missed = rate;
      if (held > 0) break;
      rate = Math.round(rate / growth);
      if (rate < MIN_RATE) return 0;
    }
  }
  while (missed !== Infinity && missed / held > RESOLUTION) {
    const middle = Math.round(Math.sqrt(held * missed));
    if (middle <= held || middle >= missed) break;
    if (yield* holds(middle)) held = middle;
    else missed = middle;
  }
  return held;
}

/**
 * The processes the CPU accounting names: `database` for the Postgres backends connected to the
 * bench's database (support.ts's `postgres` also counts the server's own processes, which work
 * for every database on the machine).
 */
function labelsOf(context: RatioContext, snapshot: CpuSnapshot): Map<number, string> {
  const labels = new Map<number, string>([
    [context.generatorPid, 'generator'],
    [process.pid, 'bench'],
  ]);
  for (const side of ['api', 'bare'] as const)
    for (const pid of processTree(context.servers[side].pid)) labels.set(pid, side);
  const backend = ` ${context.databaseName} `;
  for (const [pid, { comm, title }] of snapshot.processes)
    if (comm === 'postgres' && title?.includes(backend)) labels.set(pid, 'database');
  return labels;
}

/** One route's measurement: steps of an open-loop load against either server. */
function stepper(context: RatioContext, route: string, paths: string[], boundMs: number) {
  const { servers, settings } = context;
  return (side: Side, rate: number) =>
    context.load({
      route: `${route} ${side}`,
      origin: servers[side].origin,
      authorization: settings.authorization,
      paths,
      rate,
      seconds: settings.stepSeconds,
      warmUpSeconds: STEP_WARM_UP_SECONDS,
      connections: settings.connections,
      // Far past the bound: a request this late has missed it anyway, and the step ends sooner.
      timeoutMs: Math.max(1000, 20 * boundMs),
      boundMs,
    });
}

/** One round's two capacity searches, step by step in turn, `order[0]` first. */
async function capacities(
  context: RatioContext,
  step: ReturnType<typeof stepper>,
  label: string,
  order: readonly Side[],
  starts: Record<Side, { rate: number; growth: number }>,
): Promise<{ found: Record<Side, number>; apiLimit: ApiLimit }> {
  const searches = order.map((side) => {
    const search = capacitySearch(starts[side].rate, starts[side].growth);
    return { side, search, next: search.next() };
  });
  const found: Record<Side, number> = { api: 0, bare: 0 };
  let apiLimit: ApiLimit = 'none';
  while (searches.some((each) => !each.next.done)) {
    for (const each of searches) {
      if (each.next.done) continue;
      const rate = each.next.value;
      const result = await step(each.side, rate);
      const held = result.late <= LATE_SHARE * result.sent;
      const errors = Object.keys(result.errors).length > 0;
      context.progress(
        `${label} ${each.side} ${rate}/s: p99 ${result.p99} ms, ${result.rps} ok/s, ` +
          `${result.late} of ${result.sent} late or refused` +
          (errors ? ` (${JSON.stringify(result.errors)})` : '') +
          `, generator lag p99 ${result.sendLagP99} ms: ${held ? 'held' : 'missed'}`,
      );
      if (!held && each.side === 'api') {
        const refused = Object.entries(result.errors)
          .filter(([kind]) => kind.startsWith('status 503'))
          .reduce((sum, [, count]) => sum + count, 0);
        apiLimit = refused * 2 >= result.late ? 'shed' : 'late';
      }
      each.next = each.search.next(held);
      if (each.next.done) found[each.side] = each.next.value;
      await sleep(SETTLE_MS);
    }
  }
  return { found, apiLimit };
}

/** CPU per request of each server offered `rate`, one step each in `order`. */
async function cpuPerRequest(
  context: RatioContext,
  step: ReturnType<typeof stepper>,
  order: readonly Side[],
  rate: number,
): Promise<Record<Side, CpuPerRequest>> {
  const out = {} as Record<Side, CpuPerRequest>;
  for (const side of order) {
    const before = cpuSnapshot();
    const result = await step(side, rate);
    const after = cpuSnapshot();
    const spent = cpuSecondsBetween(before, after, labelsOf(context, after), context.databaseName);
    const requests = result.sent + Math.round(STEP_WARM_UP_SECONDS * rate);
    const ms = (label: string) => round3(((spent[label] ?? 0) * 1000) / requests);
    out[side] = { server: ms(side), postgres: ms('database') };
    await sleep(SETTLE_MS);
  }
  return out;
}

/** api / bare capacity of one route in interleaved rounds, and CPU per request of each. */
export async function measureRouteRatio(
  context: RatioContext,
  route: string,
  paths: string[],
  boundMs: number,
): Promise<RouteRatio> {
  const { progress, settings } = context;
  const started = performance.now();
  const before = cpuSnapshot();
  const step = stepper(context, route, paths, boundMs);
  const byRound: RouteRatio['byRound'] = [];
  const cpu: { atRps: number; api: CpuPerRequest; bare: CpuPerRequest }[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const order: Side[] = round % 2 === 1 ? ['api', 'bare'] : ['bare', 'api'];
    const startOf = (side: Side) =>
      byRound.length === 0
        ? { rate: settings.firstRate, growth: 2 }
        : { rate: median(byRound.map((each) => each[side])), growth: RETRY_GROWTH };
    const { found, apiLimit } = await capacities(context, step, `${route} round ${round}`, order, {
      api: startOf('api'),
      bare: startOf('bare'),
    });
    const ratio = found.bare > 0 ? round3(found.api / found.bare) : 0;
    byRound.push({ api: found.api, bare: found.bare, ratio, apiLimit });

    const atRps = Math.max(MIN_RATE, Math.round(Math.min(found.api, found.bare) / 2));
    const perRequest = await cpuPerRequest(context, step, order, atRps);
    cpu.push({ atRps, ...perRequest });
    progress(
      `${route} round ${round}: api ${found.api}/s (limited by ${apiLimit}), bare ${found.bare}/s, ratio ${ratio}; ` +
        `CPU ms per request at ${atRps}/s: api ${perRequest.api.server} (Postgres ${perRequest.api.postgres}), ` +
        `bare ${perRequest.bare.server} (Postgres ${perRequest.bare.postgres})`,
    );
  }

  const after = cpuSnapshot();
  const spent = cpuSecondsBetween(before, after, labelsOf(context, after), context.databaseName);
  const otherCpu = otherCpuSeconds(spent, BENCH_LABELS);
  const medianOf = (pick: (each: (typeof cpu)[number]) => number) => round3(median(cpu.map(pick)));
  return {
    ratio: round3(median(byRound.map((each) => each.ratio))),
    api: median(byRound.map((each) => each.api)),
    bare: median(byRound.map((each) => each.bare)),
    byRound,
    cpuMsPerRequest: {
      atRps: medianOf((each) => each.atRps),
      api: {
        server: medianOf((each) => each.api.server),
        postgres: medianOf((each) => each.api.postgres),
      },
      bare: {
        server: medianOf((each) => each.bare.server),
        postgres: medianOf((each) => each.bare.postgres),
      },
    },
    otherCpuSeconds: round2(otherCpu),
    seconds: Math.round((performance.now() - started) / 1000),
  };
}
