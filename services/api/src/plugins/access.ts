import { isApiKeyShaped, type ApiKeyRow } from '@gleaner/db';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AuthFailures } from './auth-failures.js';
import { boardActionOf, BULL_BOARD_PATH } from './bull-board.js';
import { THROTTLED, type KeyLookup, type Principal } from './key-lookup.js';
import { ProblemError, sendProblem } from './problem.js';

/**
 * Who may call a route. The table below, and nothing else, gives each route its level: the API's
 * own routes one by one, the routes a plugin adds (the docs, Bull Board) by the prefix they sit
 * under. A route it does not list is admin-only: nothing is open by default.
 *
 *   public        anyone, no key (`/health`)
 *   read          admin and viewer keys
 *   tenant-read   admin, viewer and tenant keys; the handler narrows a tenant key to its tenant
 *   tenant-write  admin and tenant keys; the handler narrows a tenant key to its tenant
 *   admin         admin keys
 */
export type Access = 'public' | 'read' | 'tenant-read' | 'tenant-write' | 'admin';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyInstance {
    /** Every route added after the access plugin, with its rules. */
    routeAccess(): ({ method: string; url: string } & RouteAccess)[];
  }
}

/**
 * A route's rules: who may call it (`access`); what the audit log calls a mutating request to it
 * (`audit`; for the routes under a prefix, made from each route); whether it also takes multipart
 * forms (`forms`: the uploads). Every other body a mutating route takes is JSON.
 */
export interface RouteRule {
  access: Access;
  audit?: string | ((url: string) => string);
  forms?: boolean;
}

/** A route's rules as the guard and the audit log apply them. */
export interface RouteAccess {
  access: Access;
  audit: string;
  forms: boolean;
}

/**
 * The API's routes and their rules: `<METHOD> <route>` (HEAD goes as its GET). A row whose route
 * ends in `/*` is for every route a plugin adds under that prefix, and `*` as its method for every
 * method without a row of its own.
 */
export const ROUTE_RULES: Readonly<Record<string, RouteRule>> = {
  'GET /health': { access: 'public' },
  'GET /jobs/health': { access: 'read' },
  'GET /jobs/queue/status': { access: 'read' },
  'GET /jobs/sites': { access: 'read' },
  'POST /jobs/scrape': { access: 'admin', audit: 'scrape.start' },
  'GET /jobs/scrape/:runId': { access: 'tenant-read' },
  'POST /jobs/scrape/:runId/cancel': { access: 'admin', audit: 'scrape.cancel' },
  'GET /runs/:runId': { access: 'tenant-read' },
  'GET /runs/:runId/events': { access: 'tenant-read' },
  'GET /sites': { access: 'read' },
  'POST /sites': { access: 'admin', audit: 'sites.create' },
  'GET /sites/:site': { access: 'read' },
  'GET /sites/:site/runs': { access: 'read' },
  'PATCH /sites/:site': { access: 'admin', audit: 'sites.update' },
  'DELETE /sites/:site': { access: 'admin', audit: 'sites.delete' },
  'GET /postings': { access: 'read' },
  'GET /changes': { access: 'tenant-read' },
  'GET /postings/:id': { access: 'read' },
  'GET /postings/:id/versions': { access: 'read' },
  'GET /scheduler/status': { access: 'read' },
  'POST /scheduler/run': { access: 'admin', audit: 'scheduler.run' },
  'POST /documents': { access: 'tenant-write', audit: 'documents.create', forms: true },
  'POST /documents/batch': { access: 'tenant-write', audit: 'documents.create_batch', forms: true },
  'GET /documents': { access: 'tenant-read' },
  'GET /documents/search': { access: 'tenant-read' },
  'GET /documents/status': { access: 'read' },
  'GET /documents/recent': { access: 'read' },
  'GET /documents/:id': { access: 'tenant-read' },
  'GET /documents/:id/text': { access: 'tenant-read' },
  'POST /documents/:id/cancel': { access: 'tenant-write', audit: 'documents.cancel' },
  'POST /admin/documents/pause': { access: 'admin', audit: 'documents.pause' },
  'POST /admin/documents/resume': { access: 'admin', audit: 'documents.resume' },
  'POST /admin/documents/retry': { access: 'admin', audit: 'documents.retry' },
  'GET /admin/extraction/status': { access: 'tenant-read' },
  'POST /admin/extraction/requeue': { access: 'admin', audit: 'extraction.requeue' },
  'GET /admin/backfill': { access: 'admin' },
  'GET /admin/storage': { access: 'admin' },
  'GET /admin/dead-letters': { access: 'read' },
  'GET /admin/alerts': { access: 'read' },
  'POST /admin/dead-letters/requeue': { access: 'admin', audit: 'dead_letters.requeue' },
  'DELETE /admin/dead-letters': { access: 'admin', audit: 'dead_letters.purge' },
  'GET /admin/keys': { access: 'admin' },
  'POST /admin/keys': { access: 'admin', audit: 'keys.create' },
  'DELETE /admin/keys/:id': { access: 'admin', audit: 'keys.revoke' },
  'GET /admin/audit': { access: 'admin' },
  'GET /webhooks/endpoints': { access: 'tenant-read' },
  'POST /webhooks/endpoints': { access: 'tenant-write', audit: 'webhooks.create' },
  'GET /webhooks/endpoints/:id': { access: 'tenant-read' },
  'PATCH /webhooks/endpoints/:id': { access: 'tenant-write', audit: 'webhooks.update' },
  'DELETE /webhooks/endpoints/:id': { access: 'tenant-write', audit: 'webhooks.delete' },
  'GET /webhooks/endpoints/:id/secret': { access: 'tenant-write' },
  'POST /webhooks/endpoints/:id/rotate-secret': {
    access: 'tenant-write',
    audit: 'webhooks.rotate_secret',
  },
  'GET /webhooks/endpoints/:id/deliveries': { access: 'tenant-read' },
  'POST /webhooks/endpoints/:id/deliveries/:deliveryId/replay': {
    access: 'tenant-write',
    audit: 'webhooks.replay',
  },
  'GET /workers': { access: 'read' },
  'GET /metrics': { access: 'read' },
  // The docs' page and the OpenAPI document it shows (@fastify/swagger-ui).
  'GET /docs/*': { access: 'tenant-read' },
  // Bull Board's page, assets and reads; its actions (retry, clean, pause, obliterate…) for admin
  // keys, each an audit entry named after its route (`board.job.retry`).
  [`GET ${BULL_BOARD_PATH}/*`]: { access: 'read' },
  [`* ${BULL_BOARD_PATH}/*`]: { access: 'admin', audit: boardActionOf },
};

/** The rows for the routes under a prefix. */
const PREFIX_RULES = Object.entries(ROUTE_RULES).flatMap(([key, rule]) => {
  const [method = '', route = ''] = key.split(' ');
  return route.endsWith('/*') ? [{ method, prefix: route.slice(0, -'/*'.length), rule }] : [];
});

const ALLOWED: Record<Access, readonly ApiKeyRow['role'][]> = {
  public: ['admin', 'viewer', 'tenant'],
  read: ['admin', 'viewer'],
  'tenant-read': ['admin', 'viewer', 'tenant'],
  'tenant-write': ['admin', 'tenant'],
  admin: ['admin'],
};

/** Methods that change nothing: never audited, never refused for coming from another site. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A route's rules: its row in the table, or else the row of the prefix it is under (one for its
 * method before one for any); admin-only and audited as `<METHOD> <route>` when no row names it.
 */
export function ruleOf(method: string, url: string): RouteAccess {
  const asked = method === 'HEAD' ? 'GET' : method;
  const underPrefix = (rowMethod: string) =>
    PREFIX_RULES.find(
      (row) => row.method === rowMethod && (url === row.prefix || url.startsWith(`${row.prefix}/`)),
    )?.rule;
  const listed = ROUTE_RULES[`${asked} ${url}`] ?? underPrefix(asked) ?? underPrefix('*');
  const audit = typeof listed?.audit === 'function' ? listed.audit(url) : listed?.audit;
  return {
    access: listed?.access ?? 'admin',
    audit: audit ?? `${method} ${url}`,
    forms: listed?.forms ?? false,
  };
}

/**
 * The key in `Authorization`: `Bearer <key>`, or HTTP Basic with the key as the password (any
 * user name), which is what a browser sends for Bull Board, the docs and the run page.
 */
export function credentialsFrom(
  header: string | undefined,
): { key: string; scheme: 'bearer' | 'basic' } | undefined {
  if (!header) return undefined;
  const space = header.indexOf(' ');
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (space < 0 || value === '') return undefined;
  if (scheme === 'bearer') return { key: value, scheme };
  if (scheme !== 'basic') return undefined;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const key = colon < 0 ? '' : decoded.slice(colon + 1);
  return key === '' ? undefined : { key, scheme };
}

/**
 * Basic alone: browsers take only the first challenge of a header, and a Bearer client needs
 * none (its key goes in `Authorization: Bearer …` all the same).
 */
const CHALLENGE = 'Basic realm="gleaner", charset="UTF-8"';

export interface AccessOptions {
  keys: KeyLookup;
  failures: AuthFailures;
  /** `API_PUBLIC_URL`: its origin is the API's own, besides the one a request's Host names. */
  publicUrl: string | undefined;
  /** `API_CORS_ORIGINS`: other sites a browser may act from. */
  corsOrigins: readonly string[];
}

/**
 * Guards every route: 401 (with a challenge a browser answers) without a live key, 429 instead
 * for an address that keeps failing, 403 for a key whose role may not call the route or for a
 * browser's saved login sent from another site, 415 for a body that is not the route's kind.
 */
export const accessPlugin = fp<AccessOptions>(async (app: FastifyInstance, options) => {
  const { keys, failures } = options;
  const trustedOrigins = new Set(options.corsOrigins);
  if (options.publicUrl !== undefined) trustedOrigins.add(new URL(options.publicUrl).origin);

  app.decorateRequest('principal', null);
  app.addHook('onClose', () => keys.close());
  const routes: { method: string; url: string }[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url });
  });
  app.decorate('routeAccess', () =>
    routes.map(({ method, url }) => ({ method, url, ...ruleOf(method, url) })),
  );

  async function refuseUnknown(request: FastifyRequest, reply: FastifyReply, detail: string) {
    const counted = await failures.record(request.ip);
    if (counted.isLimited) return tooManyFailures(reply, counted.retryAfterSeconds);
    return sendProblem(reply, 401, 'Unauthorized', detail, {
      headers: { 'www-authenticate': CHALLENGE },
    });
  }

  function tooManyFailures(reply: FastifyReply, retryAfterSeconds: number) {
    return sendProblem(
      reply,
      429,
      'Too Many Failed Authentications',
      `more than ${failures.max} requests without a valid API key from this address in a minute; try again later`,
      { headers: { 'retry-after': String(retryAfterSeconds) } },
    );
  }

  app.addHook('onRequest', async (request, reply) => {
    const url = request.routeOptions.url ?? '';
    const rule = ruleOf(request.method, url);
    const credentials = credentialsFrom(request.headers.authorization);
    if (rule.access === 'public' && credentials === undefined) return;
    if (credentials === undefined)
      return refuseUnknown(request, reply, 'an API key is required (Authorization: Bearer <key>)');
    // A string no key can be costs no query.
    let limitedFor = 0;
    const principal = isApiKeyShaped(credentials.key)
      ? await keys.authenticate(credentials.key, async () => {
          limitedFor = await failures.limitedFor(request.ip);
          return limitedFor === 0;
        })
      : undefined;
    if (principal === THROTTLED) return tooManyFailures(reply, limitedFor);
    if (principal === undefined)
      return refuseUnknown(request, reply, 'the API key is unknown or revoked');
    request.principal = principal;
    if (!ALLOWED[rule.access].includes(principal.role))
      return sendProblem(
        reply,
        403,
        'Forbidden',
        `a key of scope ${scopeName(principal)} may not ${request.method} ${url || request.url}`,
      );
    if (SAFE_METHODS.has(request.method)) return;
    const crossSite = credentials.scheme === 'basic' ? crossSiteReason(request) : undefined;
    if (crossSite !== undefined)
      return sendProblem(reply, 403, 'Cross-Site Request Refused', crossSite);
    const wrongBody = wrongBodyReason(request, rule);
    if (wrongBody !== undefined)
      return sendProblem(reply, 415, 'Unsupported Media Type', wrongBody, {
        errors: [{ field: 'headers.content-type', message: wrongBody }],
      });
  });

  /**
   * Why a browser's saved login (HTTP Basic) may not act here: the browser says the request comes
   * from another site, or its `Origin` is neither the API's own (the Host it called, or
   * `API_PUBLIC_URL`) nor one of `API_CORS_ORIGINS`. A Bearer key is never sent by a browser on
   * its own, so a page of another site cannot borrow one.
   */
  function crossSiteReason(request: FastifyRequest): string | undefined {
    if (request.headers['sec-fetch-site'] === 'cross-site')
      return 'a request from another site (Sec-Fetch-Site: cross-site) may not act with a browser login; send the key as Authorization: Bearer';
    const origin = request.headers.origin;
    if (origin === undefined || trustedOrigins.has(origin)) return undefined;
    // The Host it called, read as a URL of the origin's scheme so that default ports compare equal.
    if (URL.canParse(origin)) {
      const { protocol, host } = new URL(origin);
      if (
        URL.canParse(`${protocol}//${request.host}`) &&
        new URL(`${protocol}//${request.host}`).host === host
      )
        return undefined;
    }
    return `a request from ${origin} may not act with a browser login; send the key as Authorization: Bearer, or add the origin to API_CORS_ORIGINS`;
  }
});

/**
 * Why a mutating request's body is refused: JSON routes take `application/json` only (never the
 * `text/plain`, urlencoded or multipart forms another site's page can send), upload routes JSON
 * or `multipart/form-data`. A request without a body passes.
 */
function wrongBodyReason(request: FastifyRequest, rule: RouteAccess): string | undefined {
  const type = request.headers['content-type'];
  const hasBody =
    type !== undefined ||
    request.headers['transfer-encoding'] !== undefined ||
    Number(request.headers['content-length'] ?? 0) > 0;

  if (!hasBody || request.routeOptions.url === undefined) return undefined;
  const media = type?.split(';')[0]?.trim().toLowerCase();
  if (media === 'application/json' || (rule.forms && media === 'multipart/form-data'))
    return undefined;
  const accepted = rule.forms ? 'application/json or multipart/form-data' : 'application/json';
  return `${request.method} ${request.routeOptions.url ?? request.url} takes ${accepted}, not ${media ?? 'a body without a content type'}`;
}

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
