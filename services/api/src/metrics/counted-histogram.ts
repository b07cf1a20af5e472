import { Histogram, type HistogramConfiguration } from 'prom-client';

/** One label set's observations, already counted: cumulative per bucket bound, as Prometheus shows them. */
export interface HistogramCounts<T extends string> {
  labels: Partial<Record<T, string>>;
  /** Per bound of the histogram's buckets, in order: observations at most that large. */
  buckets: readonly number[];
  count: number;
  sum: number;
}

type Exported = Awaited<ReturnType<Histogram['get']>>;

/**
 * A histogram whose buckets are counted elsewhere (a query over stored rows) and set as a whole
 * at each scrape, where prom-client's own would need one `observe()` per row. It prints as any
 * prom-client histogram: the registry formats what `get()` returns (prom-client asks
 * `getForPromString()` first when a metric has it, as its histograms do).
 */
export class CountedHistogram<T extends string> extends Histogram<T> {
  private readonly family: { name: string; help: string; bounds: readonly number[] };
  private counts: readonly HistogramCounts<T>[] = [];

  constructor(configuration: HistogramConfiguration<T> & { buckets: number[] }) {
    super(configuration);
    const { name, help, buckets } = configuration;
    this.family = { name, help, bounds: [...buckets] };
  }

  set(counts: readonly HistogramCounts<T>[]): void {
    const { name, bounds } = this.family;
    for (const entry of counts)
      if (entry.buckets.length !== bounds.length)
        throw new RangeError(
          `${name}: ${entry.buckets.length} counts for ${bounds.length} buckets`,
        );
    this.counts = counts;
  }

  override reset(): void {
    this.counts = [];
  }

  override get(): Promise<Exported> {
    const { name, help, bounds } = this.family;
    const values = this.counts.flatMap(({ labels, buckets, count, sum }) => [
      ...bounds.map((bound, index) => ({
        labels: { ...labels, le: bound },
        sharedLabels: {},
        value: buckets[index]!,
        metricName: `${name}_bucket`,
      })),
      {
        labels: { ...labels, le: '+Inf' },
        sharedLabels: {},
        value: count,
        metricName: `${name}_bucket`,
      },
      { labels, sharedLabels: {}, value: sum, metricName: `${name}_sum` },
      { labels, sharedLabels: {}, value: count, metricName: `${name}_count` },
    ]);
    return Promise.resolve({
      name,
      help,
      type: 'histogram',
      values,
      aggregator: 'sum',
    } as unknown as Exported);
  }

  getForPromString(): Promise<Exported> {
    return this.get();
  }
}
