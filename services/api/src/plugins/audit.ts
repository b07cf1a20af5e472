import { auditActorOf, recordAudit, type AuditEntry, type Database } from '@gleaner/db';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ruleOf, SAFE_METHODS } from './access.js';

/** What a route adds to its request's audit entry; the rest is the request's own. */
export type AuditDetails = Partial<
  Pick<AuditEntry, 'target' | 'selector' | 'dryRun' | 'affected' | 'details'>
>;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by a route to tell the audit log more than the request says (what it created, how many). */
    audit: AuditDetails | null;
  }
}

/**
 * One audit entry per mutating request (POST, PUT, PATCH, DELETE) made with a key, whatever its
 * outcome, Bull Board's actions included: the key, the action the route table names
 * (`sites.delete`), the target (the route's parameters unless the route says otherwise), the
 * selector (parameters and query), and the status answered. It is written before the answer
 * leaves, so a client that has its answer finds the entry. Requests without a key (401s) are not
 * entries: a flood of them must cost no writes.
 */
export const auditPlugin = fp<{ db: Database }>(async (app: FastifyInstance, { db }) => {
  app.decorateRequest('audit', null);
  const written = new WeakSet<FastifyRequest>();
  app.addHook('onSend', async (request, reply, payload) => {
    const url = request.routeOptions.url;
    if (
      SAFE_METHODS.has(request.method) ||
      request.principal === null ||
      url === undefined ||
      written.has(request)
    )
      return payload;
    written.add(request);
    const params = (request.params ?? {}) as Record<string, unknown>;
    const query = (request.query ?? {}) as Record<string, unknown>;
    const given = request.audit ?? {};
    try {
      await recordAudit(db, {
        ...auditActorOf(request.principal),
        action: ruleOf(request.method, url).audit,
        target: Object.values(params).map(String).join('/') || null,
        selector: { ...params, ...query },
        statusCode: reply.statusCode,
        requestId: request.id,
        ...given,
      });
    } catch (error) {
      // The act is done; the answer goes out, and the log keeps what the audit log could not.
      request.log.error(
        { err: error, action: ruleOf(request.method, url).audit },
        'audit entry not written',
      );
    }
    return payload;
  });
});
