import {
  activeRunStatuses,
  countByStatus,
  documentStatuses,
  llmExtractionStatuses,
  postingStatuses,
  runDurationHistogram,
  runStatuses,
  siteAlertKinds,
} from '@gleaner/db';
import { Counter, Gauge } from 'prom-client';
import type { CollectorFactory } from './collector.js';
import { CountedHistogram } from './counted-histogram.js';

/** Runs last from seconds (a small site, nothing changed) to hours (a large board, a slow site). */
export const RUN_DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21_600];

const finishedRunStatuses = runStatuses.filter(
  (status) => !(activeRunStatuses as readonly string[]).includes(status),
);

/**
 * The work as Postgres, the truth, holds it: postings, documents and LLM extractions by status,
 * runs under way, and every finished run's outcome and duration. Derived from the rows at each
 * scrape, so they are right whichever replica did the work and survive anything but the rows'
 * deletion (a deleted site takes its runs with it: the finished counts drop, which Prometheus
 * reads as a counter reset).
 */
export const workMetrics: CollectorFactory = (registry, { db }) => {
  const registers = [registry];
  const postings = new Gauge({
    name: 'gleaner_postings',
    help: 'Job postings by status.',
    labelNames: ['status'] as const,
    registers,
  });
  const documents = new Gauge({
    name: 'gleaner_documents',
    help: 'Documents by extraction status.',
    labelNames: ['status'] as const,
    registers,
  });
  const llmExtractions = new Gauge({
    name: 'gleaner_llm_extractions',
    help: 'LLM extractions of documents and postings by status.',
    labelNames: ['status'] as const,
    registers,
  });
  const activeRuns = new Gauge({
    name: 'gleaner_runs_active',
    help: 'Runs queued or running.',
    labelNames: ['status'] as const,
    registers,
  });
  const finishedRuns = new Counter({
    name: 'gleaner_runs_finished_total',
    help: 'Runs finished, by outcome.',
    labelNames: ['status'] as const,
    registers,
  });
  const durations = new CountedHistogram({
    name: 'gleaner_run_duration_seconds',
    help: 'How long finished runs took, from their start to their end, by outcome.',
    labelNames: ['status'] as const,
    buckets: RUN_DURATION_BUCKETS,
    registers,
  });
  const openAlerts = new Gauge({
    name: 'gleaner_site_alerts_open',
    help: "Sites' open drift alerts, by kind (GET /admin/alerts).",
    labelNames: ['kind'] as const,
    registers,
  });
  const families = [
    postings,
    documents,
    llmExtractions,
    activeRuns,
    finishedRuns,
    durations,
    openAlerts,
  ];

  return {
    name: 'work',
    async collect(signal) {
      const [counts, runs] = await Promise.all([
        countByStatus(db),
        runDurationHistogram(db, RUN_DURATION_BUCKETS),
      ]);
      signal.throwIfAborted();
      for (const family of families) family.reset();
      // Every status shows, at 0 when no row has it, so that a series never appears from nowhere.
      for (const status of postingStatuses) postings.set({ status }, counts.postings[status] ?? 0);
      for (const status of documentStatuses)
        documents.set({ status }, counts.documents[status] ?? 0);
      for (const status of llmExtractionStatuses)
        llmExtractions.set({ status }, counts.llmExtractions[status] ?? 0);
      for (const status of activeRunStatuses)
        activeRuns.set({ status }, counts.activeRuns[status] ?? 0);
      for (const kind of siteAlertKinds) openAlerts.set({ kind }, counts.openAlerts[kind] ?? 0);
      const byStatus = new Map(runs.map((run) => [run.status, run]));
      for (const status of finishedRunStatuses)
        finishedRuns.inc({ status }, byStatus.get(status)?.count ?? 0);
      durations.set(
        runs.map((run) => ({
          labels: { status: run.status },
          buckets: run.buckets,
          count: run.count,
          sum: run.sumSeconds,
        })),
      );
    },
    clear() {
      for (const family of families) family.reset();
    },
  };
};
