import type { ApiKeyRow } from '@gleaner/db';

/**
 * Who may call a route, set on each route as `config: { access }`. A route without one is
 * admin-only: nothing is open by default.
 *
 *   public        anyone, no key (`/health`)
 *   read          admin and viewer keys
 *   tenant-read   admin, viewer and tenant keys; the handler narrows a tenant key to its tenant
 *   tenant-write  admin and tenant keys; the handler narrows a tenant key to its tenant
 *   admin         admin keys
 */
export type Access = 'public' | 'read' | 'tenant-read' | 'tenant-write' | 'admin';

/** The key a request was made with (null on public routes called without one). */
export type Principal = Pick<ApiKeyRow, 'id' | 'name' | 'prefix' | 'role' | 'tenantId'>;

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}
