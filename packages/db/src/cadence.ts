/**
 * Cadence that follows change (decision 0022): a site with `adaptive: true` is run more often
 * when its runs find many changed postings and less often when they find few, between a floor
 * and a ceiling. Pure functions: the run finalization applies them to a site after each run, the
 * API explains a site's interval with them, and `pnpm bench cadence` simulates a fleet with them.
 *
 * The rule. A site's changes (postings new, changed or closed) are taken to arrive at a rate λ
 * per hour, estimated from each run's count over the time since the site's previous run and
 * smoothed across runs. A change waits on average half an interval I to be found, so a fleet's
 * delay is Σ λᵢ·Iᵢ/2 for a fetch budget Σ 1/Iᵢ; for a given budget that sum is smallest with
 * Iᵢ ∝ 1/√λᵢ. The site's own `interval_minutes` anchors it: a site that changes about once per
 * base interval keeps it, one that changes four times as often runs twice as often, one that
 * changes a quarter as often runs half as often.
 */

/** Weight of the newest run's rate in the smoothed one. */
export const CADENCE_SMOOTHING = 0.3;

/** Changes per base interval at which a site keeps its base interval. */
export const CADENCE_REFERENCE_CHANGES = 1;

/** The floor and ceiling when a site sets none: a quarter and four times its base interval. */
export const CADENCE_DEFAULT_SPREAD = 4;

/** The longest interval a site may have (as for `interval_minutes`): 7 days. */
export const CADENCE_MAX_MINUTES = 7 * 24 * 60;

export interface CadenceBounds {
  baseMinutes: number;
  minMinutes: number;
  maxMinutes: number;
}

/** A site's bounds: its own floor and ceiling, or a quarter and four times its base interval. */
export function cadenceBounds(site: {
  intervalMinutes: number;
  minIntervalMinutes: number | null;
  maxIntervalMinutes: number | null;
}): CadenceBounds {
  const base = site.intervalMinutes;
  const minMinutes =
    site.minIntervalMinutes ?? Math.max(1, Math.round(base / CADENCE_DEFAULT_SPREAD));
  const maxMinutes = Math.max(
    minMinutes,
    site.maxIntervalMinutes ?? Math.min(CADENCE_MAX_MINUTES, base * CADENCE_DEFAULT_SPREAD),
  );
  return { baseMinutes: base, minMinutes, maxMinutes };
}

/**
 * The smoothed change rate (per hour) after a run that found `changes` over `hours` since the
 * site's previous run; the first observation is taken as it is.
 */
export function nextChangeRate(previous: number | null, changes: number, hours: number): number {
  const observed = changes / Math.max(hours, 1 / 60);
  return previous === null
    ? observed
    : CADENCE_SMOOTHING * observed + (1 - CADENCE_SMOOTHING) * previous;
}

export interface CadenceChoice {
  minutes: number;
  /** Why, in words an operator reads on `GET /scheduler/status`. */
  reason: string;
}

const perHour = (rate: number) => (rate >= 10 ? rate.toFixed(0) : rate.toPrecision(2));

/** The interval for a site whose changes arrive at `ratePerHour` (null: not known yet). */
export function adaptiveInterval(ratePerHour: number | null, bounds: CadenceBounds): CadenceChoice {
  const { baseMinutes, minMinutes, maxMinutes } = bounds;
  const range = `between ${minMinutes} and ${maxMinutes} minutes`;
  if (ratePerHour === null)
    return {
      minutes: Math.min(maxMinutes, Math.max(minMinutes, baseMinutes)),
      reason: `no change rate measured yet (a first run finds every posting new): the base interval, ${range}`,
    };
  const perBase = (ratePerHour * baseMinutes) / 60;
  const ideal = baseMinutes / Math.sqrt(Math.max(perBase, 1e-6) / CADENCE_REFERENCE_CHANGES);
  const minutes = Math.min(maxMinutes, Math.max(minMinutes, Math.round(ideal)));
  const bound =
    minutes === minMinutes && ideal < minMinutes
      ? ', held at the floor'
      : minutes === maxMinutes && ideal > maxMinutes
        ? ', held at the ceiling'
        : '';
  return {
    minutes,
    reason: `about ${perHour(ratePerHour)} changes an hour, ${perHour(perBase)} per ${baseMinutes}-minute base interval: every ${minutes} minutes${bound}, ${range}`,
  };
}

/** A site as its cadence reads it: its base interval, bounds and measured change rate. */
export interface CadenceSite {
  intervalMinutes: number;
  minIntervalMinutes: number | null;
  maxIntervalMinutes: number | null;
  changeRatePerHour: number | null;
}

/** A site's interval from its rate within its bounds, with the bounds it was chosen within. */
export function siteCadence(site: CadenceSite): CadenceChoice & { bounds: CadenceBounds } {
  const bounds = cadenceBounds(site);
  return { ...adaptiveInterval(site.changeRatePerHour, bounds), bounds };
}
