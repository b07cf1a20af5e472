import { authenticateApiKey, type ApiKeyRow, type Database } from '@gleaner/db';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError, sendProblem } from './problem.js';

/**
 * Who may call a route. The table below gives each route of the API its level; a route may
 * instead declare `config: { access }` (plugins with routes of their own do). A route with
 * neither is admin-only: nothing is open by default.
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
  interface FastifyInstance {
    /** Every route added after the access plugin, with the level that guards it. */
    routeAccess(): { method: string; url: string; access: Access }[];
  }
}

/** The API's routes and who may call them: `<METHOD> <route>` (HEAD goes as its GET). */
export const ROUTE_ACCESS: Readonly<Record<string, Access>> = {
  'GET /health': 'public',
  'GET /jobs/health': 'read',
  'GET /jobs/queue/status': 'read',
  'GET /jobs/sites': 'read',
  'POST /jobs/scrape': 'admin',
  'GET /jobs/scrape/:runId': 'tenant-read',
  'POST /jobs/scrape/:runId/cancel': 'admin',
  'GET /sites': 'read',
  'POST /sites': 'admin',
  'GET /sites/:site': 'read',
  'GET /sites/:site/runs': 'read',
  'PATCH /sites/:site': 'admin',
  'DELETE /sites/:site': 'admin',
  'GET /postings': 'read',
  'GET /postings/:id': 'read',
  'GET /postings/:id/versions': 'read',
  'GET /scheduler/status': 'read',
  'POST /scheduler/run': 'admin',
  'POST /documents': 'tenant-write',
  'POST /documents/batch': 'tenant-write',
  'GET /documents': 'tenant-read',
  'GET /documents/search': 'tenant-read',
  'GET /documents/status': 'read',
  'GET /documents/:id': 'tenant-read',
  'GET /documents/:id/text': 'tenant-read',
  'POST /admin/documents/pause': 'admin',
  'POST /admin/documents/resume': 'admin',
  'POST /admin/documents/retry': 'admin',
  'GET /admin/extraction/status': 'tenant-read',
  'POST /admin/extraction/requeue': 'admin',
  'GET /admin/backfill': 'admin',
  'GET /admin/storage': 'admin',
  'GET /admin/keys': 'admin',
  'POST /admin/keys': 'admin',
  'DELETE /admin/keys/:id': 'admin',
  'GET /admin/audit': 'admin',
};

const ALLOWED: Record<Access, readonly ApiKeyRow['role'][]> = {
  public: ['admin', 'viewer', 'tenant'],
  read: ['admin', 'viewer'],
  'tenant-read': ['admin', 'viewer', 'tenant'],
  'tenant-write': ['admin', 'tenant'],
  admin: ['admin'],
};

/** The level a route is guarded by: its own `config.access`, the table's, or admin. */
export function accessOf(method: string, url: string, declared: Access | undefined): Access {
  return declared ?? ROUTE_ACCESS[`${method === 'HEAD' ? 'GET' : method} ${url}`] ?? 'admin';
}

/**
 * The key in `Authorization`: `Bearer <key>`, or HTTP Basic with the key as the password (any
 * user name), which is what a browser sends for Bull Board, the docs and the run page.
 */
export function keyFromAuthorization(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const space = header.indexOf(' ');
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (space < 0 || value === '') return undefined;
  if (scheme === 'bearer') return value;
  if (scheme !== 'basic') return undefined;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1) || undefined;
}

/**
 * Keys seen in the last few seconds, so a busy client costs one query per key per interval,
 * not one per request. A revocation through this process applies at once; other replicas see
 * it within KEY_CACHE_MS.
 */
const KEY_CACHE_MS = 10_000;
const KEY_CACHE_SIZE = 10_000;

export interface KeyLookup {
  authenticate(key: string): Promise<Principal | undefined>;
  /** Forget every cached key (after a revocation). */
  forget(): void;
}

export function createKeyLookup(db: Database, now: () => number = Date.now): KeyLookup {
  const cache = new Map<string, { principal: Principal | undefined; until: number }>();
  return {
    async authenticate(key) {
      const cached = cache.get(key);
      if (cached !== undefined && cached.until > now()) return cached.principal;
      const row = await authenticateApiKey(db, key);
      const principal = row && {
        id: row.id,
        name: row.name,
        prefix: row.prefix,
        role: row.role,
        tenantId: row.tenantId,
      };
      if (cache.size >= KEY_CACHE_SIZE) cache.clear();
      cache.set(key, { principal, until: now() + KEY_CACHE_MS });
      return principal;
    },
    forget() {
      cache.clear();
    },
  };
}

/**
 * Basic alone: browsers take only the first challenge of a header, and a Bearer client needs
 * none (its key goes in `Authorization: Bearer …` all the same).
 */
const CHALLENGE = 'Basic realm="gleaner", charset="UTF-8"';

/**
 * Guards every route with the key its access level asks for: 401 (with a challenge a browser
 * answers) without a live key, 403 for a key whose role may not call the route.
 */
export const accessPlugin = fp<{ keys: KeyLookup }>(async (app: FastifyInstance, { keys }) => {
  app.decorateRequest('principal', null);
  const routes: { method: string; url: string; config: () => Access | undefined }[] = [];
  app.addHook('onRoute', (route) => {
    // Read when asked: a plugin's own onRoute hook may set the level after this one runs.
    for (const method of [route.method].flat())
      routes.push({ method, url: route.url, config: () => route.config?.access });
  });
  app.decorate('routeAccess', () =>
    routes.map(({ method, url, config }) => ({
      method,
      url,
      access: accessOf(method, url, config()),
    })),
  );
  app.addHook('onRequest', async (request, reply) => {
    const access = accessOf(
      request.method,
      request.routeOptions.url ?? '',
      request.routeOptions.config.access,
    );
    const key = keyFromAuthorization(request.headers.authorization);
    if (access === 'public' && key === undefined) return;
    if (key === undefined)
      return sendProblem(
        reply,
        401,
        'Unauthorized',
        'an API key is required (Authorization: Bearer <key>)',
        {
          headers: { 'www-authenticate': CHALLENGE },
        },
      );
    const principal = await keys.authenticate(key);
    if (principal === undefined)
      return sendProblem(reply, 401, 'Unauthorized', 'the API key is unknown or revoked', {
        headers: { 'www-authenticate': CHALLENGE },
      });
    request.principal = principal;
    if (!ALLOWED[access].includes(principal.role))
      return sendProblem(
        reply,
        403,
        'Forbidden',
        `a key of scope ${scopeName(principal)} may not ${request.method} ${request.routeOptions.url ?? request.url}`,
      );
  });
});

function scopeName(principal: Principal): string {
  return principal.role === 'tenant' ? `tenant:${principal.tenantId}` : principal.role;
}

/** The tenant a request is limited to: a tenant key's own, or null for admin and viewer keys. */
export function tenantOf(request: FastifyRequest): string | null {
  return request.principal?.role === 'tenant' ? request.principal.tenantId : null;
}

/**
 * Refuses a tenant key acting for another tenant: 403 naming `field` (`body.tenant_id`,
 * `query.tenant_id`). Admin and viewer keys pass.
 */
export function assertTenant(request: FastifyRequest, tenantId: string, field: string): void {
  const own = tenantOf(request);
  if (own === null || own === tenantId) return;
  throw new ProblemError(403, 'Forbidden', `this key may act only for tenant ${own}`, {
    errors: [{ field, message: `must be ${own} for this key` }],
  });
}

/** Whether a tenant key may see something of `tenantId` (a document, a site's run). */
export function canSeeTenant(request: FastifyRequest, tenantId: string | null): boolean {
  const own = tenantOf(request);
  return own === null || own === tenantId;
}
