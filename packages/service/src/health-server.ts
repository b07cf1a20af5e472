import { createServer, type Server } from 'node:http';

export interface HealthReport {
  ok: boolean;
  /** Merged into the response body beside `status` and `service`. */
  details?: Record<string, unknown>;
}

export type HealthCheck = () => HealthReport | Promise<HealthReport>;

export interface HealthServer {
  server: Server;
  /** Stops listening and drops open connections (a probe's keep-alive must not hold it open). */
  close(): Promise<void>;
}

/**
 * A `GET /health` endpoint for container healthchecks: 200 with `{"status":"healthy"}` when the
 * check passes, 503 otherwise (also when the check throws).
 */
export async function startHealthServer(options: {
  port: number;
  host?: string;
  service: string;
  check: HealthCheck;
}): Promise<HealthServer> {
  const { service, check } = options;
  const server = createServer((request, response) => {
    if (request.url !== '/health') {
      response.writeHead(404).end();
      return;
    }
    Promise.resolve()
      .then(check)
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
    server.listen(options.port, options.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
