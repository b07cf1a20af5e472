import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, jobLogger, teeLogger, withoutSecrets, type TeeLine } from './index.js';

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

describe('secrets', () => {
  it('never prints a secret key at the top of a line, one level down, or in bindings', async () => {
    const { stream, lines } = capture();
    const logger = createLogger({ service: 'api', destination: stream });
    logger.info({ password: 'hunter2', apiKey: 'k-top', listed: 3 }, 'top');
    logger.info({ provider: { GROQ_API_KEY: 'gsk_nested', model: 'm' } }, 'nested');
    const child = logger.child({ ADMIN_API_KEY: 'admin-key', db: { password: 'pw-binding' } });
    child.child({ site: 'acme', auth: { apiKey: 'k-grandchild' } }).warn('grandchild');
    const error = Object.assign(new Error('refused'), { apiKey: 'k-error' });
    logger.error({ err: error }, 'failed');
    logger.info({ req: { headers: { authorization: 'Bearer t' } }, config: { REDIS_URL: 'r' } });
    await new Promise((resolve) => setImmediate(resolve));

    const printed = lines.map((line) => JSON.stringify(line)).join('\n');
    for (const secret of ['hunter2', 'k-top', 'gsk_nested', 'admin-key', 'pw-binding'])
      expect(printed).not.toContain(secret);
    for (const secret of ['k-grandchild', 'k-error', 'Bearer t', '"r"'])
      expect(printed).not.toContain(secret);
    expect(lines[0]).toMatchObject({ password: '[redacted]', apiKey: '[redacted]', listed: 3 });
    expect(lines[1]).toMatchObject({ provider: { GROQ_API_KEY: '[redacted]', model: 'm' } });
    expect(lines[2]).toMatchObject({
      ADMIN_API_KEY: '[redacted]',
      db: { password: '[redacted]' },
      site: 'acme',
      auth: { apiKey: '[redacted]' },
      msg: 'grandchild',
    });
    // The error is still printed as one, with its message and stack.
    expect(lines[3]).toMatchObject({
      err: { type: 'Error', message: 'refused', apiKey: '[redacted]' },
    });
    expect((lines[3]!.err as { stack: string }).stack).toContain('refused');
    expect(error.apiKey).toBe('k-error');
  });

  it("hands back an object without secrets as it is, and leaves the caller's object alone", () => {
    const plain = { url: 'https://acme.example/jobs/1', nested: { bytes: 10 }, list: [1, 2] };
    expect(withoutSecrets(plain)).toBe(plain);
    const holding = { config: { password: 'p', host: 'db' }, password: 'q' };
    expect(withoutSecrets(holding)).toEqual({
      config: { password: '[redacted]', host: 'db' },
      password: '[redacted]',
    });
    expect(holding).toEqual({ config: { password: 'p', host: 'db' }, password: 'q' });
  });
});

describe('teeLogger', () => {
  it('hands lines from the tee level up to the tee while the stream keeps its own level', async () => {
    const { stream, lines } = capture();
    const logger = createLogger({ service: 'worker', level: 'info', destination: stream });
    const teed: TeeLine[] = [];
    const log = teeLogger(
      logger,
      { run: 'manual_abc' },
      {
        level: 'debug',
        write: (line) => teed.push(line),
      },
    );
    log.debug({ url: 'https://acme.example/jobs/1' }, 'posting %s fetched', 'job-1');
    log.info({ listed: 20, complete: true, nested: { a: 1 }, password: 'hunter2' }, 'listing done');
    log
      .child({ step: 'inner' })
      .warn({ err: new Error('socket hang up') }, 'job failed; will retry');
    log.error(new Error('boom'));
    log.trace('below both levels');
    await new Promise((resolve) => setImmediate(resolve));

    expect(teed.map(({ time: _time, ...line }) => line)).toEqual([
      {
        level: 'debug',
        msg: 'posting job-1 fetched',
        fields: { url: 'https://acme.example/jobs/1' },
      },
      { level: 'info', msg: 'listing done', fields: { listed: 20, complete: true } },
      { level: 'warn', msg: 'job failed; will retry', err: 'socket hang up' },
      { level: 'error', msg: 'boom' },
    ]);
    expect(teed.every((line) => Math.abs(line.time - Date.now()) < 60_000)).toBe(true);
    // The stream got the info lines and up, with the child's bindings, and no debug line.
    expect(lines.map((line) => [line.msg, line.run])).toEqual([
      ['listing done', 'manual_abc'],
      ['job failed; will retry', 'manual_abc'],
      ['boom', 'manual_abc'],
    ]);
    expect(lines[1]).toMatchObject({ step: 'inner' });
  });

  it('still tees from a silent logger, and leaves the parent untouched', async () => {
    const { stream, lines } = capture();
    const logger = createLogger({ service: 'worker', level: 'silent', destination: stream });
    const teed: TeeLine[] = [];
    const log = teeLogger(logger, {}, { level: 'info', write: (line) => teed.push(line) });
    log.debug('too low for the tee');
    log.info('kept');
    logger.info('the parent is not teed');
    await new Promise((resolve) => setImmediate(resolve));
    expect(teed.map((line) => line.msg)).toEqual(['kept']);
    expect(lines).toEqual([]);
    expect(logger.level).toBe('silent');
  });
});
