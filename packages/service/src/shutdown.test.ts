import { describe, expect, it } from 'vitest';
import { createShutdown, SHUTDOWN_RELEASE_MS, shutdownBoundMs } from './shutdown.js';

function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const at = (level: string) => (fields: object, message: string) =>
    lines.push({ level, fields: fields as Record<string, unknown>, message });
  return { lines, logger: { info: at('info'), warn: at('warn'), error: at('error') } };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('createShutdown', () => {
  it('runs work steps last-registered first, then connection steps, logging each with its duration', async () => {
    const { lines, logger } = recordingLogger();
    const shutdown = createShutdown({ graceMs: 1_000, logger });
    const order: string[] = [];
    const step = (name: string, ms = 0) => ({
      name,
      run: async () => {
        await sleep(ms);
        order.push(name);
      },
    });
    shutdown.add('connections', step('postgres'));
    shutdown.add('work', step('fetcher'));
    shutdown.add('connections', step('redis'));
    shutdown.add('work', step('workers', 30));

    const report = await shutdown.run();
    expect(order).toEqual(['workers', 'fetcher', 'redis', 'postgres']);
    expect(report.clean).toBe(true);
    expect(lines.map((line) => [line.level, line.message, line.fields.step])).toEqual([
      ['info', 'shutdown step done', 'workers'],
      ['info', 'shutdown step done', 'fetcher'],
      ['info', 'shutdown step done', 'redis'],
      ['info', 'shutdown step done', 'postgres'],
    ]);
    expect(lines[0]!.fields.durationMs).toBeGreaterThanOrEqual(25);
    for (const line of lines) expect(line.fields.durationMs).toEqual(expect.any(Number));
  });

  it('is bounded: a step that hangs is abandoned at its phase deadline and the rest still run', async () => {
    const { lines, logger } = recordingLogger();
    const shutdown = createShutdown({ graceMs: 0, logger });
    let closed = false;
    shutdown.add('connections', { name: 'postgres', run: () => (closed = true) });
    shutdown.add('work', { name: 'stuck', run: () => new Promise(() => {}) });

    const started = performance.now();
    const report = await shutdown.run();
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(SHUTDOWN_RELEASE_MS - 50);
    expect(took).toBeLessThan(SHUTDOWN_RELEASE_MS + 1_000);
    expect(closed).toBe(true);
    expect(report.clean).toBe(false);
    expect(report.steps.map((step) => [step.step, step.outcome])).toEqual([
      ['stuck', 'timed out'],
      ['postgres', 'done'],
    ]);
    expect(lines[0]).toMatchObject({
      level: 'warn',
      message: 'shutdown step timed out; moving on',
      fields: { step: 'stuck', timeoutMs: SHUTDOWN_RELEASE_MS },
    });
  }, 10_000);

  it('logs a failed step and goes on', async () => {
    const { lines, logger } = recordingLogger();
    const shutdown = createShutdown({ graceMs: 1_000, logger });
    shutdown.add('connections', { name: 'redis', run: () => {} });
    shutdown.add('work', {
      name: 'http server',
      run: () => Promise.reject(new Error('boom')),
    });
    const report = await shutdown.run();
    expect(report.steps.map((step) => step.outcome)).toEqual(['failed', 'done']);
    expect(lines[0]).toMatchObject({ level: 'error', fields: { step: 'http server' } });
    expect((lines[0]!.fields.err as Error).message).toBe('boom');
  });

  it('runs once however often it is asked', async () => {
    const { logger } = recordingLogger();
    const shutdown = createShutdown({ graceMs: 1_000, logger });
    let runs = 0;
    shutdown.add('work', { name: 'once', run: () => (runs += 1) });
    expect(shutdown.started).toBe(false);
    const [first, second] = await Promise.all([shutdown.run(), shutdown.run()]);
    await shutdown.run();
    expect(runs).toBe(1);
    expect(second).toBe(first);
    expect(shutdown.started).toBe(true);
  });

  it('stops at once a step registered after the shutdown began', async () => {
    const { logger } = recordingLogger();
    const shutdown = createShutdown({ graceMs: 1_000, logger });
    await shutdown.run();
    let stopped = false;
    shutdown.add('work', { name: 'late server', run: () => (stopped = true) });
    await sleep(0);
    expect(stopped).toBe(true);
  });

  it('bounds the whole shutdown by the grace period plus release, connection and flush time', () => {
    expect(shutdownBoundMs(10_000)).toBe(21_000);
  });
});
