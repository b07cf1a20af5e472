import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';

/** Runs `body` in a child process whose stdout this side starts reading only after a while. */
async function runWithSlowReader(body: string): Promise<{ code: number | null; stdout: string }> {
  const module = JSON.stringify(new URL('./index.ts', import.meta.url).href);
  const script = `const { createLogger, endLogger } = await import(${module});\n${body}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Exit code once the child has exited and its stdout is read to the end.
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  child.stdout.pause();
  await sleep(1_000); // the pipe fills up meanwhile
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stdout.resume();
  return { code: await closed, stdout };
}

describe('endLogger', () => {
  it('writes every line, in order, before the process exits, even to a slow reader', async () => {
    // The pipe is full while the first burst is written: pino's write of it waits to be retried
    // when the last lines come, and the process exits right after them. Ending the logger with
    // `logger.flush()` instead lost ~50 of these lines and wrote the last ones before them.
    const { code, stdout } = await runWithSlowReader(`
      const logger = createLogger({ service: 'worker', pretty: false });
      for (let i = 0; i < 2000; i += 1) logger.info({ i, padding: 'x'.repeat(200) }, 'line');
      await new Promise((resolve) => setTimeout(resolve, 150));
      for (let i = 2000; i < 2010; i += 1) logger.info({ i }, 'last lines');
      await endLogger(logger, 10_000);
      process.exit(0);
    `);
    expect(code).toBe(0);
    const numbers = stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { i: number }).i);
    expect(numbers).toEqual([...Array(2010).keys()]);
  });
});
