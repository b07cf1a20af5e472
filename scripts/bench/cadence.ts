/**
 * `pnpm bench cadence`: a simulated fleet run on a fixed interval and on the adaptive cadence
 * (decision 0022), at the same fetch budget: which finds the fleet's changes sooner.
 *
 * BENCH_SITES (1000) sites, each with its own change rate drawn log-uniformly between
 * BENCH_MIN_RATE (0.02) and BENCH_MAX_RATE (20) changes an hour, changes arriving as a Poisson
 * process over BENCH_DAYS (30) simulated days. A change is found by the site's first run after it;
 * its delay is the time between. Fixed: every site runs every BENCH_INTERVAL_MINUTES (60), from a
 * random phase. Adaptive: every site runs as `@gleaner/db`'s cadence functions choose after each
 * run (its first run measures nothing, as a site's first real run finds every posting new), with
 * the default floor and ceiling (a quarter and four times the base interval); the base interval
 * is searched for so that the adaptive fleet makes no more runs than the fixed one. Runs after the
 * last simulated day only find the last changes and are not counted.
 *
 * Last stdout line: {"sites","days","changes","fixed":{…},"adaptive":{…},"delayRatio"}. Exit
 * code 1 when the adaptive fleet runs more than the fixed one or its mean delay per change is
 * not below BENCH_TARGET_RATIO (0.9) of the fixed one's.
 */
import { adaptiveInterval, cadenceBounds, nextChangeRate } from '@gleaner/db';
import { seededRandom } from '@gleaner/testing';
import { BenchUsageError, type BenchModule } from './bench.js';
import { benchRun, integerFrom, progressFor, report, wantsHelp } from './support.js';

const USAGE = `usage: pnpm bench cadence
environment: BENCH_SITES (1000), BENCH_DAYS (30), BENCH_INTERVAL_MINUTES (60),
  BENCH_MIN_RATE (0.02), BENCH_MAX_RATE (20) changes an hour, BENCH_SEED (1), BENCH_TARGET_RATIO (0.9)
`;

interface Settings {
  sites: number;
  days: number;
  intervalMinutes: number;
  minRate: number;
  maxRate: number;
  seed: number;
  targetRatio: number;
}

const progress = progressFor('cadence');

function numberFrom(variable: string, fallback: number, min: number, max: number): number {
  const raw = process.env[variable];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max)
    throw new BenchUsageError(`${variable} must be a number from ${min} to ${max}`, USAGE);
  return value;
}

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  const settings = {
    sites: integerFrom('BENCH_SITES', 1000, { min: 1, max: 100_000 }, USAGE),
    days: integerFrom('BENCH_DAYS', 30, { min: 1, max: 365 }, USAGE),
    intervalMinutes: integerFrom('BENCH_INTERVAL_MINUTES', 60, { min: 4, max: 7 * 24 * 60 }, USAGE),
    minRate: numberFrom('BENCH_MIN_RATE', 0.02, 1e-4, 1000),
    maxRate: numberFrom('BENCH_MAX_RATE', 20, 1e-4, 1000),
    seed: integerFrom('BENCH_SEED', 1, { min: 0 }, USAGE),
    targetRatio: numberFrom('BENCH_TARGET_RATIO', 0.9, 0.01, 10),
  };
  if (settings.maxRate < settings.minRate)
    throw new BenchUsageError('BENCH_MAX_RATE must be at least BENCH_MIN_RATE', USAGE);
  return settings;
}

interface SimulatedSite {
  ratePerHour: number;
  /** Its changes' times, in minutes from the start, ascending. */
  changes: Float64Array;
  /** Its first run, in minutes from the start. */
  phase: number;
}

function simulateFleet(settings: Settings): SimulatedSite[] {
  const random = seededRandom(settings.seed);
  const horizon = settings.days * 24 * 60;
  const logMin = Math.log(settings.minRate);
  const logMax = Math.log(settings.maxRate);
  return Array.from({ length: settings.sites }, () => {
    const ratePerHour = Math.exp(logMin + (logMax - logMin) * random());
    const times: number[] = [];
    for (let t = 0; ;) {
      t += (-Math.log(1 - random()) / ratePerHour) * 60;
      if (t >= horizon) break;
      times.push(t);
    }
    return { ratePerHour, changes: Float64Array.from(times), phase: random() };
  });
}

interface Outcome {
  runs: number;
  changes: number;
  meanDelayMinutes: number;
}

/**
 * Runs every site from its phase, `next(site, state)` choosing each interval; counts the runs
 * within the horizon and every change's delay to the run that finds it.
 */
function runFleet(
  fleet: SimulatedSite[],
  horizon: number,
  firstInterval: number,
  next: (minutesSince: number, changes: number, rate: { value: number | null }) => number,
): Outcome {
  let runs = 0;
  let changes = 0;
  let delay = 0;
  for (const site of fleet) {
    const rate = { value: null as number | null };
    let previous: number | null = null;
    let at = site.phase * firstInterval;
    let seen = 0;
    while (seen < site.changes.length || at < horizon) {
      if (at < horizon) runs += 1;
      let found = 0;
      while (seen < site.changes.length && site.changes[seen]! <= at) {
        delay += at - site.changes[seen]!;
        seen += 1;
        found += 1;
      }
      changes += found;
      const interval = previous === null ? firstInterval : next(at - previous, found, rate);
      previous = at;
      at += interval;
    }
  }
  return { runs, changes, meanDelayMinutes: delay / Math.max(changes, 1) };
}

function fixed(fleet: SimulatedSite[], horizon: number, interval: number): Outcome {
  return runFleet(fleet, horizon, interval, () => interval);
}

function adaptive(fleet: SimulatedSite[], horizon: number, baseMinutes: number): Outcome {
  const bounds = cadenceBounds({
    intervalMinutes: baseMinutes,
    minIntervalMinutes: null,
    maxIntervalMinutes: null,
  });
  return runFleet(fleet, horizon, baseMinutes, (minutesSince, found, rate) => {
    rate.value = nextChangeRate(rate.value, found, minutesSince / 60);
    return adaptiveInterval(rate.value, bounds).minutes;
  });
}

const round2 = (value: number) => Math.round(value * 100) / 100;

export const run: BenchModule['run'] = benchRun(progress, USAGE, readSettings, async (settings) => {
  const horizon = settings.days * 24 * 60;
  const fleet = simulateFleet(settings);
  const baseline = fixed(fleet, horizon, settings.intervalMinutes);
  progress(
    `fixed every ${settings.intervalMinutes} min: ${baseline.runs} runs, ${baseline.changes} changes, mean delay ${baseline.meanDelayMinutes.toFixed(1)} min`,
  );
  // The largest adaptive base interval whose fleet runs no more than the fixed one, by bisection
  // on whole minutes (more base, fewer runs).
  let low = 1;
  let high = settings.intervalMinutes * 16;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (adaptive(fleet, horizon, middle).runs <= baseline.runs) high = middle;
    else low = middle + 1;
  }
  const chosen = adaptive(fleet, horizon, low);
  const delayRatio = chosen.meanDelayMinutes / baseline.meanDelayMinutes;
  progress(
    `adaptive from a base of ${low} min: ${chosen.runs} runs, mean delay ${chosen.meanDelayMinutes.toFixed(1)} min (${delayRatio.toFixed(2)} of fixed)`,
  );
  const failures: string[] = [];
  if (chosen.runs > baseline.runs)
    failures.push(`the adaptive fleet ran ${chosen.runs} times, more than ${baseline.runs}`);
  if (delayRatio > settings.targetRatio)
    failures.push(
      `target missed: mean delay ${delayRatio.toFixed(2)} of the fixed interval's > ${settings.targetRatio}`,
    );
  return report(progress, failures, {
    sites: settings.sites,
    days: settings.days,
    changes: baseline.changes,
    fixed: {
      intervalMinutes: settings.intervalMinutes,
      runs: baseline.runs,
      meanDelayMinutes: round2(baseline.meanDelayMinutes),
    },
    adaptive: {
      baseIntervalMinutes: low,
      runs: chosen.runs,
      meanDelayMinutes: round2(chosen.meanDelayMinutes),
    },
    delayRatio: round2(delayRatio),
    targets: { delayRatio: settings.targetRatio },
  });
});
