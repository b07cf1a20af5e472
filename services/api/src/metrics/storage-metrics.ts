import { readStorageReport } from '@gleaner/db';
import { Gauge } from 'prom-client';
import type { CollectorFactory } from './collector.js';

/**
 * What Gleaner keeps on disk (decision 0014), from Postgres's catalogue at each scrape: bytes by
 * table and part, estimated rows, and bytes per posting. No table is read, so the collector costs
 * the same at millions of postings.
 */
export const storageMetrics: CollectorFactory = (registry, { db }) => {
  const registers = [registry];
  const bytes = new Gauge({
    name: 'gleaner_storage_bytes',
    help: 'Bytes on disk by table and part (heap, toast, index).',
    labelNames: ['table', 'part'] as const,
    registers,
  });
  const rows = new Gauge({
    name: 'gleaner_storage_rows_estimated',
    help: "Rows by table, as Postgres's statistics estimate them (tables never analysed are left out).",
    labelNames: ['table'] as const,
    registers,
  });
  const perPosting = new Gauge({
    name: 'gleaner_storage_bytes_per_posting',
    help: 'postings + posting_versions + posting_changes + page_bodies bytes per estimated posting (0 without postings).',
    registers,
  });
  const families = [bytes, rows, perPosting];

  return {
    name: 'storage',
    async collect(signal) {
      const report = await readStorageReport(db);
      signal.throwIfAborted();
      for (const family of families) family.reset();
      for (const table of report.tables) {
        bytes.set({ table: table.table, part: 'heap' }, table.heapBytes);
        bytes.set({ table: table.table, part: 'toast' }, table.toastBytes);
        bytes.set({ table: table.table, part: 'index' }, table.indexBytes);
        if (table.estimatedRows !== null) rows.set({ table: table.table }, table.estimatedRows);
      }
      if (report.bytesPerPosting !== null) perPosting.set(report.bytesPerPosting);
    },
    clear() {
      for (const family of families) family.reset();
    },
  };
};
