import { performance } from 'node:perf_hooks';
import type { Logger } from '@gleaner/logger';
import { Gauge, Registry } from 'prom-client';
import { apiMetrics } from './api-metrics.js';
import type { Collector, MetricSources } from './collector.js';
import { llmMetrics } from './llm-metrics.js';
import { queueMetrics } from './queue-metrics.js';
import { reextractionMetrics } from './reextraction-metrics.js';
import { schedulerMetrics } from './scheduler-metrics.js';
import { siteMetrics } from './site-metrics.js';
import { storageMetrics } from './storage-metrics.js';
import { workMetrics } from './work-metrics.js';
import { webhookMetrics } from './webhook-metrics.js';
import { workerMetrics } from './worker-metrics.js';

/** A collector that has not answered by then is reported failed (Prometheus gives up at 10 s). */
const COLLECT_TIMEOUT_MS = 5_000;

export interface SystemMetrics {
  /** The registry's content type: the Prometheus text format, version 0.0.4. */
  readonly contentType: string;
  /** Reads every collector's sources and returns the exposition. */
  scrape(): Promise<string>;
}

/**
 * The whole system's metrics, read at scrape time from what every replica writes to (Redis and
 * Postgres), so every API replica reports the same numbers: scrape one of them. A collector whose
 * source fails or is slow is reported by `gleaner_metrics_collector_success` 0 and its families
 * are left out; the others still answer. Scrapes that arrive together share one collection.
 */
export function createSystemMetrics(sources: MetricSources, logger: Logger): SystemMetrics {
  const registry = new Registry();
  const collectors: Collector[] = [
    queueMetrics(registry, sources),
    siteMetrics(registry, sources),
    workMetrics(registry, sources),
    workerMetrics(registry, sources),
    webhookMetrics(registry, sources),
    llmMetrics(registry, sources),
    reextractionMetrics(registry, sources),
    schedulerMetrics(registry, sources),
    storageMetrics(registry, sources),
    apiMetrics(registry, sources),
  ];
  const success = new Gauge({
    name: 'gleaner_metrics_collector_success',
    help: '1 when the collector read its sources in this scrape; 0 when it failed (its families are left out).',
    labelNames: ['collector'] as const,
    registers: [registry],
  });
  const duration = new Gauge({
    name: 'gleaner_metrics_collector_duration_seconds',
    help: 'How long each collector took in this scrape.',
    labelNames: ['collector'] as const,
    registers: [registry],
  });

  async function run(collector: Collector): Promise<void> {
    const started = performance.now();
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error(`no answer within ${COLLECT_TIMEOUT_MS} ms`)),
      COLLECT_TIMEOUT_MS,
    );
    try {
      await Promise.race([
        collector.collect(controller.signal),
        new Promise<never>((_, reject) =>
          controller.signal.addEventListener(
            'abort',
            () => reject(controller.signal.reason as Error),
            {
              once: true,
            },
          ),
        ),
      ]);
      success.set({ collector: collector.name }, 1);
    } catch (error) {
      controller.abort(error);
      collector.clear();
      success.set({ collector: collector.name }, 0);
      logger.warn({ err: error, collector: collector.name }, 'metrics collector failed');
    } finally {
      clearTimeout(timer);
      duration.set({ collector: collector.name }, (performance.now() - started) / 1000);
    }
  }

  let scraping: Promise<string> | undefined;
  return {
    contentType: registry.contentType,
    scrape() {
      scraping ??= Promise.all(collectors.map(run))
        .then(() => registry.metrics())
        .finally(() => {
          scraping = undefined;
        });
      return scraping;
    },
  };
}
