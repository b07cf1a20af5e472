import { describe, expect, it } from 'vitest';
import {
  createInFlightJobs,
  JobReleasedError,
  JobTimeoutError,
  RunCancelledError,
} from './job-signal.js';

const crawlJob = (
  overrides: { timeoutMs?: number; bullmq?: AbortSignal; runId?: string } = {},
) => ({
  queue: 'crawl',
  runId: 'run-1',
  timeoutMs: undefined,
  bullmq: undefined,
  ...overrides,
});

describe('job signals', () => {
  it('aborts the jobs of a cancelled run, and only those', () => {
    const jobs = createInFlightJobs();
    const cancelled = jobs.start(crawlJob());
    const other = jobs.start(crawlJob({ runId: 'run-2' }));
    expect(jobs.cancel('run-1')).toBe(1);
    expect(cancelled.signal.aborted).toBe(true);
    expect(cancelled.signal.reason).toBeInstanceOf(RunCancelledError);
    expect(cancelled.isCancelled).toBe(true);
    expect(cancelled.isReleased).toBe(false);
    expect(other.signal.aborted).toBe(false);
    expect(jobs.runIds().sort()).toEqual(['run-1', 'run-2']);
  });

  it('aborts a queue’s jobs on release, whatever their run', () => {
    const jobs = createInFlightJobs();
    const crawl = jobs.start(crawlJob());
    const document = jobs.start({
      queue: 'documents',
      runId: undefined,
      timeoutMs: undefined,
      bullmq: undefined,
    });
    expect(jobs.release('crawl')).toBe(1);
    expect(crawl.signal.reason).toBeInstanceOf(JobReleasedError);
    expect(crawl.isReleased).toBe(true);
    expect(document.signal.aborted).toBe(false);
    expect(jobs.release('documents')).toBe(1);
    expect(document.isReleased).toBe(true);
  });

  it('aborts a job past its timeout with the error it fails with', async () => {
    const jobs = createInFlightJobs();
    const job = jobs.start(crawlJob({ timeoutMs: 20 }));
    await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
    expect(job.timedOut).toBeInstanceOf(JobTimeoutError);
    expect(job.signal.reason).toBe(job.timedOut);
    job.dispose();
  });

  it('follows BullMQ’s signal, also one already aborted', () => {
    const jobs = createInFlightJobs();
    const bullmq = new AbortController();
    const job = jobs.start(crawlJob({ bullmq: bullmq.signal }));
    const lockLost = new Error('lock lost');
    bullmq.abort(lockLost);
    expect(job.signal.reason).toBe(lockLost);
    expect([job.isCancelled, job.isReleased, job.timedOut]).toEqual([false, false, undefined]);

    const gone = new AbortController();
    gone.abort(lockLost);
    expect(jobs.start(crawlJob({ bullmq: gone.signal })).signal.reason).toBe(lockLost);
  });

  it('keeps the first cause as the reason and still tells each cause that came', () => {
    const jobs = createInFlightJobs();
    const job = jobs.start(crawlJob());
    jobs.cancel('run-1');
    jobs.release('crawl');
    expect(job.signal.reason).toBeInstanceOf(RunCancelledError);
    expect(job.isCancelled).toBe(true);
    expect(job.isReleased).toBe(true);
  });

  it('lets a disposed job go: no cause reaches it, and its run is no longer in flight', async () => {
    const jobs = createInFlightJobs();
    const bullmq = new AbortController();
    const job = jobs.start(crawlJob({ timeoutMs: 20, bullmq: bullmq.signal }));
    job.dispose();
    expect(jobs.cancel('run-1')).toBe(0);
    expect(jobs.release('crawl')).toBe(0);
    bullmq.abort(new Error('after the job'));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(job.signal.aborted).toBe(false);
    expect(job.timedOut).toBeUndefined();
    expect(jobs.runIds()).toEqual([]);
  });
});
