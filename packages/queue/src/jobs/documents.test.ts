import { describe, expect, it } from 'vitest';
import { prepareJob } from '../queues.js';
import { bullmqDocumentPriority, documentBackoff, documentRetryDelayMs } from './documents.js';

const documentId = '6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b';

describe('the documents job', () => {
  it("waits seed 001's retry table: 0.5 s, 2 s, 10 s, 30 s, then 60 s", () => {
    expect([1, 2, 3, 4, 5, 6, 20].map((attempt) => documentRetryDelayMs(attempt))).toEqual([
      500, 2_000, 10_000, 30_000, 60_000, 60_000, 60_000,
    ]);
    expect(documentRetryDelayMs(1, 'timeout')).toBe(500);
    expect(documentRetryDelayMs(1, 'unknown')).toBe(500);
  });

  it('never retries extractor_missing sooner than 30 s', () => {
    expect(
      [1, 2, 3, 4, 5].map((attempt) => documentRetryDelayMs(attempt, 'extractor_missing')),
    ).toEqual([30_000, 30_000, 30_000, 30_000, 60_000]);
  });

  it('reads the error type from the error BullMQ hands its custom backoff', () => {
    const missing = Object.assign(new Error('no pdf parser'), { errorType: 'extractor_missing' });
    expect(documentBackoff(1, 'document-retry-table', missing)).toBe(30_000);
    expect(documentBackoff(2, undefined, new Error('plain'))).toBe(2_000);
    expect(documentBackoff(3)).toBe(10_000);
  });

  it('maps higher-first priorities onto BullMQ priorities from 1, lower first', () => {
    expect(bullmqDocumentPriority(1000)).toBe(1);
    expect(bullmqDocumentPriority(10)).toBeLessThan(bullmqDocumentPriority(0));
    expect(bullmqDocumentPriority(0)).toBeLessThan(bullmqDocumentPriority(-5));
    expect(bullmqDocumentPriority(-1000)).toBe(2001);
    // Out of range values are clamped rather than wrapped into BullMQ's 0 ("no priority").
    expect(bullmqDocumentPriority(5000)).toBe(1);
    expect(bullmqDocumentPriority(-5000)).toBe(2001);
  });

  it('gives each generation of a document its own job id', () => {
    const first = prepareJob('documents', { documentId, generation: 0 });
    const retried = prepareJob('documents', { documentId, generation: 1 });
    expect(first.opts.jobId).toBe(`document-${documentId}-0`);
    expect(retried.opts.jobId).not.toBe(first.opts.jobId);
    expect(first.opts.backoff).toEqual({ type: 'document-retry-table' });
  });
});
