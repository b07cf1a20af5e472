import { createServer, type Server } from 'node:http';

export interface HealthCheck {
  (): Promise<{ ok: boolean; details: Record<string, unknown> }>;
}

/** A tiny /health endpoint for container healthchecks (200 when healthy, 503 otherwise). */
export async function startHealthServer(
  port: number,
  service: string,
  check: HealthCheck,
): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.url !== '/health') {
      response.writeHead(404).end();
      return;
    }
    check()
      .then(({ ok, details }) => {
        response
          .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
          .end(JSON.stringify({ status: ok ? 'healthy' : 'unhealthy', service, ...details }));
      })
      .catch((error: unknown) => {
        response
          .writeHead(503, { 'content-type': 'application/json' })
          .end(JSON.stringify({ status: 'unhealthy', service, error: String(error) }));
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve());
  });
  return server;
}
