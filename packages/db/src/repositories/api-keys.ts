import { createHash, randomBytes } from 'node:crypto';
import { and, asc, count, desc, eq, inArray, isNull, lt, sql } from 'drizzle-orm';
import type { Database } from '../client.js';
import { apiKeys, auditLog, type ApiKeyRow, type AuditRow } from '../schema.js';

/**
 * API keys read `glk_<prefix>_<secret>`: 8 hex characters of public prefix (shown in lists and
 * audit entries), 43 base64url characters (256 bits) of secret. The database keeps the SHA-256
 * of the whole key, so a leaked table gives no key.
 */
const KEY_PATTERN = /^glk_([0-9a-f]{8})_([A-Za-z0-9_-]{43})$/;

/**
 * What any stored key can look like: a generated key, or an operator's (`ADMIN_API_KEY`) of 32 to
 * 256 printable ASCII characters without spaces, which is all an HTTP header carries intact. A
 * string outside it is refused before any query.
 */
const KEY_SHAPE = /^[\x21-\x7e]{32,256}$/;

export function isApiKeyShaped(key: string): boolean {
  return KEY_SHAPE.test(key);
}

/**
 * The public name of a key in lists, logs and audit entries: a generated key's own prefix, or for
 * an operator's key the first 8 hex digits of its SHA-256 (its first characters are its secret).
 */
export function apiKeyPrefix(key: string): string {
  return KEY_PATTERN.exec(key)?.[1] ?? sha256(key).slice(0, 8);
}

/** Who a key is: `admin`, `viewer`, or `tenant:<id>`. */
export type ApiKeyScope =
  { role: 'admin' | 'viewer'; tenantId: null } | { role: 'tenant'; tenantId: string };

/** A tenant id as the API accepts it (documents' `tenant_id`). */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9._:-]{1,200}$/;

/** Parses `admin`, `viewer` or `tenant:<id>`; undefined for anything else. */
export function parseApiKeyScope(value: string): ApiKeyScope | undefined {
  if (value === 'admin' || value === 'viewer') return { role: value, tenantId: null };
  const tenantId = value.startsWith('tenant:') ? value.slice('tenant:'.length) : undefined;
  return tenantId !== undefined && TENANT_ID_PATTERN.test(tenantId)
    ? { role: 'tenant', tenantId }
    : undefined;
}

export function formatApiKeyScope(scope: Pick<ApiKeyRow, 'role' | 'tenantId'>): string {
  return scope.role === 'tenant' ? `tenant:${scope.tenantId}` : scope.role;
}

function sha256(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export interface CreatedApiKey {
  /** The key itself: shown once, never stored. */
  key: string;
  row: ApiKeyRow;
}

/** A new key of `scope`, named for people (`ci`, `alice's laptop`). */
export async function createApiKey(
  db: Database,
  input: { name: string; scope: ApiKeyScope },
): Promise<CreatedApiKey> {
  const prefix = randomBytes(4).toString('hex');
  const key = `glk_${prefix}_${randomBytes(32).toString('base64url')}`;
  return { key, row: await insertKey(db, input, key) };
}

async function insertKey(
  db: Database,
  input: { name: string; scope: ApiKeyScope },
  key: string,
): Promise<ApiKeyRow> {
  const [row] = await db
    .insert(apiKeys)
    .values({
      name: input.name,
      prefix: apiKeyPrefix(key),
      secretSha256: sha256(key),
      role: input.scope.role,
      tenantId: input.scope.tenantId,
    })
    .onConflictDoNothing({ target: apiKeys.secretSha256 })
    .returning();
  if (row) return row;
  // The same key again (a restart with the same ADMIN_API_KEY): the row it already has, named as
  // keys are named now (an operator's key was once listed under its first 8 characters).
  const [existing] = await db
    .update(apiKeys)
    .set({ prefix: apiKeyPrefix(key) })
    .where(eq(apiKeys.secretSha256, sha256(key)))
    .returning();
  return existing!;
}

/**
 * Makes an operator-chosen key (`ADMIN_API_KEY`) an admin key, once: idempotent across restarts
 * and replicas. Any string of 32 or more characters is accepted (it is the operator's secret).
 */
export async function ensureApiKey(
  db: Database,
  input: { name: string; scope: ApiKeyScope; key: string },
): Promise<ApiKeyRow> {
  return insertKey(db, input, input.key);
}

/**
 * The live key `key` is, or undefined (unknown, malformed or revoked): one indexed `SELECT`, none
 * for a string no key can be. Its use is stamped apart, in batches (`stampApiKeysUsed`).
 */
export async function authenticateApiKey(
  db: Database,
  key: string,
): Promise<ApiKeyRow | undefined> {
  if (!isApiKeyShaped(key)) return undefined;
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.secretSha256, sha256(key)), isNull(apiKeys.revokedAt)));
  return row;
}

/** Stamps `last_used_at` of the keys `ids` (those used since the last stamp) in one statement. */
export async function stampApiKeysUsed(db: Database, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db
    .update(apiKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(inArray(apiKeys.id, [...ids]));
}

export async function countLiveAdminKeys(db: Database): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(apiKeys)
    .where(and(eq(apiKeys.role, 'admin'), isNull(apiKeys.revokedAt)));
  return row?.n ?? 0;
}

export async function listApiKeys(db: Database): Promise<ApiKeyRow[]> {
  return db.select().from(apiKeys).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
}

/** Revokes a key by id or prefix; the row revoked, or undefined when none matched. */
export async function revokeApiKey(
  db: Database,
  idOrPrefix: string,
): Promise<ApiKeyRow | undefined> {
  const column = /^[0-9a-f]{8}$/.test(idOrPrefix) ? apiKeys.prefix : apiKeys.id;
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
    .where(eq(column, idOrPrefix))
    .returning();
  return row;
}

/** The key an audit entry names: its id and `<prefix> (<name>)`. */
export interface AuditActor {
  apiKeyId: string | null;
  actor: string;
}

export function auditActorOf(key: Pick<ApiKeyRow, 'id' | 'prefix' | 'name'>): AuditActor {
  return { apiKeyId: key.id, actor: `${key.prefix} (${key.name})` };
}

export interface AuditEntry extends AuditActor {
  action: string;
  target?: string | null;
  selector?: Record<string, unknown>;
  dryRun?: boolean;
  affected?: number;
  details?: Record<string, unknown>;
  /** The HTTP status the request was answered with. */
  statusCode?: number | null;
  requestId?: string | null;
}

export async function recordAudit(db: Database, entry: AuditEntry): Promise<AuditRow> {
  const [row] = await db.insert(auditLog).values(entry).returning();
  return row!;
}

export interface AuditFilter {
  /** A key's id, or its 8-character prefix. */
  actor?: string;
  action?: string;
  target?: string;
  /** Entries older than this id (the last id of the previous page). */
  before?: number;
  limit?: number;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Audit entries, newest first, filtered by key, action and target. */
export async function listAudit(db: Database, filter: AuditFilter = {}): Promise<AuditRow[]> {
  const { actor } = filter;
  const byActor =
    actor === undefined
      ? undefined
      : UUID_PATTERN.test(actor)
        ? eq(auditLog.apiKeyId, actor.toLowerCase())
        : inArray(
            auditLog.apiKeyId,
            db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.prefix, actor)),
          );
  return db
    .select()
    .from(auditLog)
    .where(
      and(
        byActor,
        filter.action === undefined ? undefined : eq(auditLog.action, filter.action),
        filter.target === undefined ? undefined : eq(auditLog.target, filter.target),
        filter.before === undefined ? undefined : lt(auditLog.id, filter.before),
      ),
    )
    .orderBy(desc(auditLog.id))
    .limit(filter.limit ?? 100);
}
