import { describe, expect, expectTypeOf, it } from 'vitest';
import { jobs, workQueueNames, type WorkQueueName } from '../catalogue.js';
import { ledgers, type LedgerMap, type StageSettings } from './index.js';

const settings: StageSettings = {
  WORKER_CONCURRENCY_SCRAPE: 2,
  WORKER_CONCURRENCY_CRAWL: 16,
  WORKER_CONCURRENCY_EXTRACT: 8,
  WORKER_CONCURRENCY_DOCUMENTS: 6,
  WORKER_CONCURRENCY_LLM_EXTRACT: 4,
  FLEET_CONCURRENCY_SCRAPE: 0,
  FLEET_CONCURRENCY_CRAWL: 0,
  FLEET_CONCURRENCY_EXTRACT: 5,
  FLEET_CONCURRENCY_DOCUMENTS: 0,
  FLEET_CONCURRENCY_LLM_EXTRACT: 12,
  JOB_TIMEOUT_SCRAPE_MS: 300_000,
  JOB_TIMEOUT_CRAWL_MS: 120_000,
  JOB_TIMEOUT_EXTRACT_MS: 600_000,
  DOCUMENT_EXTRACTION_TIMEOUT_MS: 30_000,
  EXTRACTION_REQUEST_TIMEOUT_MS: 30_000,
  EXTRACTION_RETRY_BASE_SECONDS: 10,
  EXTRACTION_RETRY_MAX_SECONDS: 300,
  WORKER_CONCURRENCY_WEBHOOKS: 8,
  FLEET_CONCURRENCY_WEBHOOKS: 0,
  WEBHOOK_TIMEOUT_MS: 15_000,
  WORKER_CONCURRENCY_LLM_SYNC: 2,
  FLEET_CONCURRENCY_LLM_SYNC: 0,
  JOB_TIMEOUT_LLM_SYNC_MS: 300_000,
  WORKER_CONCURRENCY_LLM_PAGES: 4,
  FLEET_CONCURRENCY_LLM_PAGES: 0,
  JOB_TIMEOUT_LLM_PAGES_MS: 600_000,
};

describe('ledger map', () => {
  it('has exactly one ledger per work queue of the catalogue, for that queue', () => {
    expectTypeOf<keyof LedgerMap>().toEqualTypeOf<WorkQueueName>();
    expect(Object.keys(ledgers).sort()).toEqual([...workQueueNames].sort());
    for (const queue of workQueueNames) expect(ledgers[queue].job).toBe(jobs[queue]);
  });

  it('does not compile without the ledger of a catalogued queue', () => {
    const { crawl: _crawl, ...withoutCrawl } = ledgers;
    // @ts-expect-error -- `crawl` is a work queue of the catalogue: its ledger is required.
    const incomplete: LedgerMap = withoutCrawl;
    expect(Object.keys(incomplete)).not.toContain('crawl');
  });

  it('does not compile with a ledger that neither reconciles nor says why not', () => {
    const { reconcile: _reconcile, ...withoutDecision } = ledgers.backfill;
    // @ts-expect-error -- every ledger decides how the reconciler repairs it, or says why not.
    const undecided: LedgerMap = { ...ledgers, backfill: withoutDecision };
    expect(undecided.backfill).not.toHaveProperty('reconcile');
  });

  it('says why a stage is not reconciled', () => {
    for (const queue of workQueueNames) {
      const { reconcile } = ledgers[queue];
      if ('notReconciled' in reconcile) expect(reconcile.notReconciled.length).toBeGreaterThan(40);
      else expect(typeof reconcile.rows).toBe('function');
    }
  });
});

describe('stage policies', () => {
  it('take each stage’s concurrency and deadline from the settings', () => {
    expect(ledgers.crawl.policy(settings)).toMatchObject({ concurrency: 16, timeoutMs: 120_000 });
    expect(ledgers.documents.policy(settings)).toMatchObject({ concurrency: 6, timeoutMs: 30_000 });
    // Each pass of a multi-pass reading is its own job, each with seed 004's 10 minutes.
    expect(ledgers['llm-pages'].policy(settings)).toMatchObject({
      concurrency: 4,
      timeoutMs: 600_000,
    });
    // Up to four calls to the provider, each bounded by the request timeout.
    expect(ledgers['llm-extract'].policy(settings).timeoutMs).toBe(4 * 30_000 + 60_000);
    // One batch job at a time, whatever the settings, on each replica and across them.
    expect(ledgers.backfill.policy(settings)).toMatchObject({
      concurrency: 1,
      fleetConcurrency: 1,
    });
  });

  it('take each stage’s fleet-wide cap from the settings, 0 for none', () => {
    const caps = Object.fromEntries(
      workQueueNames.map((queue) => [queue, ledgers[queue].policy(settings).fleetConcurrency]),
    );
    expect(caps).toEqual({
      scrape: 0,
      crawl: 0,
      extract: 5,
      documents: 0,
      'llm-extract': 12,
      'llm-sync': 0,
      backfill: 1,
      webhooks: 0,
      'llm-pages': 0,
    });
  });

  it('allow many more stalls than attempts, unless the operator sets one limit for all', () => {
    for (const queue of workQueueNames) {
      const attempts = jobs[queue].defaults.attempts ?? 1;
      expect(ledgers[queue].policy(settings).maxStalls).toBeGreaterThan(attempts);
      expect(ledgers[queue].policy({ ...settings, WORKER_MAX_STALLED_COUNT: 0 }).maxStalls).toBe(0);
    }
  });

  it('build the LLM stage’s backoff from its base and cap', () => {
    const backoff = ledgers['llm-extract'].policy(settings).backoff!;
    expect(backoff(1, 'llm-retry')).toBe(10_000);
    expect(backoff(3, 'llm-retry')).toBe(40_000);
    expect(backoff(12, 'llm-retry')).toBe(300_000);
  });
});
