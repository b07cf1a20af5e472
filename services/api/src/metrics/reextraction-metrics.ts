import { listLlmReextractions } from '@gleaner/db';
import { Gauge } from 'prom-client';
import type { CollectorFactory } from './collector.js';

/**
 * The re-extraction of stored LLM results under the newest prompt version (decision 0009,
 * "Prompt upgrades"), from its row in Postgres: how many results it covers, how many it has
 * queued again, and whether it is still running. One series per family, labelled by version.
 */
export const reextractionMetrics: CollectorFactory = (registry, { db }) => {
  const registers = [registry];
  const labelNames = ['version'] as const;
  const total = new Gauge({
    name: 'gleaner_llm_reextraction_total_extractions',
    help: 'Results of older prompt versions the newest re-extraction covered when it started.',
    labelNames,
    registers,
  });
  const queued = new Gauge({
    name: 'gleaner_llm_reextraction_queued_extractions',
    help: 'Extractions the newest re-extraction has queued again under its version.',
    labelNames,
    registers,
  });
  const running = new Gauge({
    name: 'gleaner_llm_reextraction_running',
    help: '1 while the newest re-extraction still has results to queue, 0 once completed or superseded.',
    labelNames,
    registers,
  });
  const families = [total, queued, running];

  return {
    name: 'reextraction',
    async collect(signal) {
      const [newest] = await listLlmReextractions(db, 1);
      signal.throwIfAborted();
      for (const family of families) family.reset();
      if (!newest) return;
      const labels = { version: newest.version };
      total.set(labels, newest.total);
      queued.set(labels, newest.queued);
      running.set(labels, newest.status === 'running' ? 1 : 0);
    },
    clear() {
      for (const family of families) family.reset();
    },
  };
};
