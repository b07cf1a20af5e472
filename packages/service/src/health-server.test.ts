import { Agent, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startHealthServer, type HealthReport } from './health-server.js';

async function probe(port: number, path = '/health', agent?: Agent) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

describe('startHealthServer', () => {
  it('answers 200 or 503 with the check details, 404 elsewhere, and closes with a keep-alive client connected', async () => {
    let report: HealthReport | Error = { ok: true, details: { redis: true } };
    const health = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      service: 'worker',
      check: () => {
        if (report instanceof Error) throw report;
        return report;
      },
    });
    const { port } = health.server.address() as AddressInfo;
    const agent = new Agent({ keepAlive: true });
    try {
      expect(await probe(port, '/health', agent)).toEqual({
        status: 200,
        body: JSON.stringify({ status: 'healthy', service: 'worker', redis: true }),
      });
      report = { ok: false, details: { redis: false } };
      expect(await probe(port, '/health', agent)).toMatchObject({ status: 503 });
      report = new Error('postgres gone');
      const failed = await probe(port, '/health', agent);
      expect(failed.status).toBe(503);
      expect(JSON.parse(failed.body)).toMatchObject({
        status: 'unhealthy',
        error: 'Error: postgres gone',
      });
      expect((await probe(port, '/metrics', agent)).status).toBe(404);

      // The agent keeps its connection open; close() must not wait for it.
      const started = performance.now();
      await health.close();
      expect(performance.now() - started).toBeLessThan(1_000);
    } finally {
      agent.destroy();
    }
  });
});
