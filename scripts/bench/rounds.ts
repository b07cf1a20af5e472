/**
 * Interleaved rounds: a bench that compares Gleaner with a bare loop runs both in turn, several
 * times, and decides on the median round, because this machine's speed drifts by a third within
 * minutes and one draw of either side says little.
 */

/** The median of `values` by `key`: the lower middle one for an even count. */
export function medianBy<T>(values: readonly T[], key: (value: T) => number): T {
  if (values.length === 0) throw new RangeError('medianBy needs at least one value');
  const sorted = [...values].sort((a, b) => key(a) - key(b));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** The median of numbers: the lower middle one for an even count. */
export const median = (values: readonly number[]): number => medianBy(values, (value) => value);

/** CPU seconds that went to processes outside `benchLabels`: other work on the machine. */
export function otherCpuSeconds(
  cpuSeconds: Readonly<Record<string, number>>,
  benchLabels: ReadonlySet<string>,
): number {
  return Object.entries(cpuSeconds)
    .filter(([label]) => !benchLabels.has(label))
    .reduce((sum, [, seconds]) => sum + seconds, 0);
}

/** CPU seconds summed over the given process labels (all of them by default). */
export function cpuSecondsOf(
  cpuSeconds: Readonly<Record<string, number>>,
  labels: readonly string[] = Object.keys(cpuSeconds),
): number {
  return labels.reduce((sum, label) => sum + (cpuSeconds[label] ?? 0), 0);
}

/** Milliseconds of CPU per unit of work, summed over the given process labels. */
export function cpuMsPer(
  cpuSeconds: Readonly<Record<string, number>>,
  units: number,
  labels: readonly string[] = Object.keys(cpuSeconds),
): number {
  const seconds = cpuSecondsOf(cpuSeconds, labels);
  return units > 0 ? Math.round(((seconds * 1000) / units) * 1000) / 1000 : 0;
}

/** Adds up CPU seconds by process label across rounds. */
export function sumCpuSeconds(
  each: readonly Readonly<Record<string, number>>[],
): Record<string, number> {
  const total: Record<string, number> = {};
  for (const cpuSeconds of each)
    for (const [label, seconds] of Object.entries(cpuSeconds))
      total[label] = (total[label] ?? 0) + seconds;
  return total;
}
