import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createGleanerClient } from './index.js';

let server: Server | undefined;

afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** A server that answers each request with the next of `answers`, recording the bodies it got. */
async function answering(answers: { status: number; headers?: Record<string, string> }[]) {
  const bodies: string[] = [];
  server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      bodies.push(body);
      const answer = answers[Math.min(bodies.length - 1, answers.length - 1)]!;
      response.writeHead(answer.status, {
        'content-type': answer.status < 400 ? 'application/json' : 'application/problem+json',
        ...answer.headers,
      });
      response.end(
        JSON.stringify(answer.status < 400 ? { run_id: 'r1' } : { status: answer.status }),
      );
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, bodies };
}

const scrape = { site_name: 'acme' } as never;

describe('a request the API refused while busy', () => {
  it('is sent again, body and all, after each Retry-After, up to twice', async () => {
    const { baseUrl, bodies } = await answering([
      { status: 503, headers: { 'retry-after': '0' } },
      { status: 429, headers: { 'retry-after': '0' } },
      { status: 202 },
    ]);
    const api = createGleanerClient({ baseUrl });
    const { data, response } = await api.POST('/jobs/scrape', { body: scrape });
    expect(response.status).toBe(202);
    expect(data).toEqual({ run_id: 'r1' });
    expect(bodies).toEqual(Array(3).fill(JSON.stringify(scrape)));
  });

  it('is answered to the caller past its retries, without Retry-After, or when told to wait long', async () => {
    const third = await answering([{ status: 503, headers: { 'retry-after': '0' } }]);
    const { response } = await createGleanerClient({ baseUrl: third.baseUrl }).POST(
      '/jobs/scrape',
      { body: scrape },
    );
    expect(response.status).toBe(503);
    expect(third.bodies).toHaveLength(3);
    await new Promise((resolve) => server!.close(resolve));

    for (const answer of [
      { status: 503 },
      { status: 429, headers: { 'retry-after': '60' } },
      { status: 500, headers: { 'retry-after': '0' } },
    ]) {
      const once = await answering([answer]);
      const started = Date.now();
      const result = await createGleanerClient({ baseUrl: once.baseUrl }).POST('/jobs/scrape', {
        body: scrape,
      });
      expect(result.response.status).toBe(answer.status);
      expect(once.bodies).toHaveLength(1);
      expect(Date.now() - started).toBeLessThan(5_000);
      await new Promise((resolve) => server!.close(resolve));
    }
    server = undefined;
    const never = await answering([{ status: 503, headers: { 'retry-after': '0' } }]);
    const { response: atOnce } = await createGleanerClient({
      baseUrl: never.baseUrl,
      retriesWhenBusy: 0,
    }).POST('/jobs/scrape', { body: scrape });
    expect(atOnce.status).toBe(503);
    expect(never.bodies).toHaveLength(1);
  });
});
