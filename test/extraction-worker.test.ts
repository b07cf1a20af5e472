import { freePort, waitFor, waitForLog } from '@gleaner/testing';
import { describe, expect, it } from 'vitest';
import { useServiceProcesses } from './support/service-processes.js';

/**
 * The worker process as seed 002 runs it: with extraction on it serves llm-extract and answers
 * its probe on EXTRACTION_HEALTHCHECK_PORT; without a Groq key it refuses to start, naming it.
 */
const services = useServiceProcesses('extraction-worker');

const env = () => ({
  WORKER_QUEUES: 'llm-extract',
  EXTRACTION_ENABLED: 'true',
  DATABASE_POOL_MAX: '2',
});

describe('an extraction worker process', () => {
  it('answers seed 002’s health probe on EXTRACTION_HEALTHCHECK_PORT', async () => {
    const port = await freePort();
    const worker = services.start('worker', {
      ...env(),
      GROQ_API_KEY: 'test-key',
      GROQ_BASE_URL: 'http://127.0.0.1:9',
      EXTRACTION_HEALTHCHECK_PORT: String(port),
    });
    await waitForLog(worker, 'worker started');
    const body = await waitFor(
      async () => {
        const response = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined);
        return response?.ok ? await response.json() : undefined;
      },
      { timeoutMs: 10_000, what: 'the extraction health endpoint' },
    );
    expect(body).toEqual({ status: 'healthy', service: 'extraction-worker' });

    // On SIGTERM its LLM client's connections close once the jobs have stopped, before Redis.
    expect(await worker.stop()).toBe(0);
    const steps = worker.logs
      .filter((line) => line.msg === 'shutdown step done')
      .map((line) => String(line.step));
    expect(steps.indexOf('llm client')).toBeGreaterThan(steps.indexOf('workers'));
    expect(steps.indexOf('workers')).toBeGreaterThanOrEqual(0);
    expect(steps.indexOf('llm client')).toBeLessThan(steps.indexOf('redis'));
  });

  it('does not start without GROQ_API_KEY, and says so', async () => {
    const worker = services.start('worker', { ...env(), EXTRACTION_HEALTHCHECK_PORT: '0' });
    const code = await new Promise<number | null>((resolve) => worker.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(worker.stderr()).toContain('GROQ_API_KEY is required');
  });
});
