import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, jobLogger } from './index.js';

function capture() {
  const stream = new PassThrough();
  const lines: Record<string, unknown>[] = [];
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
      lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  return { stream, lines };
}

describe('logger', () => {
  it('writes JSON with service, job bindings and redacted secrets', async () => {
    const { stream, lines } = capture();
    const logger = createLogger({ service: 'worker', destination: stream });
    const child = jobLogger(logger, {
      queueName: 'crawl',
      id: 'crawl-r1-p1',
      attemptsMade: 0,
      data: { runId: 'r1', postingId: 'p1' },
    });
    child.info({ config: { DATABASE_URL: 'postgres://user:secret@db/x' } }, 'fetched');
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines[0]).toMatchObject({
      service: 'worker',
      queue: 'crawl',
      jobId: 'crawl-r1-p1',
      attempt: 1,
      runId: 'r1',
      msg: 'fetched',
    });
    expect(JSON.stringify(lines[0])).not.toContain('secret');
  });
});
