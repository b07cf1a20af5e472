import { describe, expect, it } from 'vitest';
import { jobs, queueNames, workQueueNames } from './catalogue.js';
import { assertValidJobId } from './define-job.js';
import { prepareJob } from './queues.js';

const runId = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';
const postingId = '6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b';
const siteId = '0f8fad5b-d9cb-469f-a165-70867728950e';

describe('job catalogue', () => {
  it('defines every queue once, with attempts and a job name of the form area.verb-noun', () => {
    expect(queueNames.sort()).toEqual([
      'backfill',
      'crawl',
      'dead-letter',
      'documents',
      'extract',
      'llm-extract',
      'llm-pages',
      'llm-sync',
      'scheduler',
      'scrape',
      'webhooks',
    ]);
    for (const name of queueNames) {
      expect(jobs[name].queue).toBe(name);
      expect(jobs[name].name).toMatch(/^[a-z-]+\.[a-z]+-[a-z-]+$/);
      expect(jobs[name].defaults.attempts).toBeGreaterThanOrEqual(1);
    }
  });

  it('derives deterministic ids that BullMQ accepts', () => {
    const crawl = prepareJob('crawl', { runId, siteId, postingId });
    expect(crawl.opts.jobId).toBe(`crawl-${runId}-${postingId}`);
    expect(prepareJob('crawl', { runId, siteId, postingId }).opts.jobId).toBe(crawl.opts.jobId);
    const extract = prepareJob('extract', { runId, postingId });
    expect(extract.opts.jobId).not.toContain(':');
  });

  it('lists every queue but the dead letters and scheduling passes as work for workers', () => {
    expect([...workQueueNames].sort()).toEqual([
      'backfill',
      'crawl',
      'documents',
      'extract',
      'llm-extract',
      'llm-pages',
      'llm-sync',
      'scrape',
      'webhooks',
    ]);
  });

  it('rejects invalid payloads and ids', () => {
    expect(() => prepareJob('crawl', { runId: 'x', siteId, postingId })).toThrow();
    expect(() => assertValidJobId('a:b')).toThrow(/no ':'/);
    expect(() => assertValidJobId('12345')).toThrow(/not all digits/);
  });
});
