import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { sendProblem } from './problem.js';

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * HTTP basic auth with ADMIN_USERNAME / ADMIN_PASSWORD on every route of the encapsulated
 * context it is added to (Bull Board, the admin endpoints). With no password set, the context
 * stays open; the Bull Board plugin warns about that once at start.
 */
export function requireAdmin(app: FastifyInstance, config: ApiDeps['config']): void {
  const { ADMIN_USERNAME, ADMIN_PASSWORD } = config;
  if (!ADMIN_PASSWORD) return;
  app.addHook('onRequest', async (request, reply) => {
    const header = request.headers.authorization ?? '';
    const [scheme, encoded] = header.split(' ');
    const [user, ...rest] = Buffer.from(encoded ?? '', 'base64')
      .toString('utf8')
      .split(':');
    if (
      scheme?.toLowerCase() !== 'basic' ||
      !safeEqual(user ?? '', ADMIN_USERNAME) ||
      !safeEqual(rest.join(':'), ADMIN_PASSWORD)
    ) {
      return sendProblem(reply, 401, 'Unauthorized', 'admin credentials required', {
        headers: { 'www-authenticate': 'Basic realm="gleaner-admin", charset="UTF-8"' },
      });
    }
  });
}
