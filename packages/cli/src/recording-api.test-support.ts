import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CliIo } from './context.js';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  body: string;
}

type Answer = { status: number; body?: unknown; type?: string };

/**
 * An HTTP server on loopback standing in for the API where a unit test needs one: it records
 * each request the CLI sends and answers what `answer` says, so a test can check the requests a
 * command line makes. The system test (test/cli.test.ts) runs the CLI against the real API.
 */
export async function startRecordingApi(answer: (request: RecordedRequest) => Answer) {
  const requests: RecordedRequest[] = [];
  const server = createServer((incoming: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const url = new URL(incoming.url ?? '/', 'http://localhost');
      const request: RecordedRequest = {
        method: incoming.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      const { status, body, type } = answer(request);
      if (body === undefined) {
        response.writeHead(status).end();
        return;
      }
      response
        .writeHead(status, { 'content-type': type ?? 'application/json' })
        .end(typeof body === 'string' ? body : JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Streams that keep what the CLI writes. */
export function capture(isTTY = false) {
  let text = '';
  return {
    stream: { write: (chunk: string) => (text += chunk), isTTY, columns: 100 },
    text: () => text,
  };
}

/** Runs the CLI in-process on `argv` with captured output. */
export async function runCaptured(
  run: (io: CliIo) => Promise<number>,
  argv: string[],
  io: Partial<CliIo> = {},
) {
  const stdout = capture();
  const stderr = capture();
  const code = await run({
    argv,
    env: {},
    cwd: '/nonexistent',
    stdout: stdout.stream,
    stderr: stderr.stream,
    pollIntervalMs: 10,
    ...io,
  });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}
