import { createHash, randomBytes } from 'node:crypto';
import { and, asc, count, desc, eq, isNull, sql } from 'drizzle-orm';
import type { Database } from '../client.js';
import { apiKeys, auditLog, type ApiKeyRow, type AuditRow } from '../schema.js';

/**
 * API keys read `glk_<prefix>_<secret>`: 8 hex characters of public prefix (shown in lists and
 * audit entries), 43 base64url characters (256 bits) of secret. The database keeps the SHA-256
 * of the whole key, so a leaked table gives no key.
 */
const KEY_PATTERN = /^glk_([0-9a-f]{8})_([A-Za-z0-9_-]{43})$/;

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
      prefix: KEY_PATTERN.exec(key)?.[1] ?? key.slice(0, 8),
      secretSha256: sha256(key),
      role: input.scope.role,
      tenantId: input.scope.tenantId,
    })
    .onConflictDoNothing({ target: apiKeys.secretSha256 })
    .returning();
  if (row) return row;
  // The same key again (a restart with the same ADMIN_API_KEY): the row it already has.
  const [existing] = await db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.secretSha256, sha256(key)));
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

/** The live key `key` is, or undefined (unknown, malformed or revoked). Stamps its last use. */
export async function authenticateApiKey(
  db: Database,
  key: string,
): Promise<ApiKeyRow | undefined> {
  if (key.length < 32 || key.length > 256) return undefined;
  const [row] = await db
    .update(apiKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(and(eq(apiKeys.secretSha256, sha256(key)), isNull(apiKeys.revokedAt)))
    .returning();
  return row;
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

export async function recordAudit(
  db: Database,
  entry: AuditActor & {
    action: string;
    selector?: Record<string, unknown>;
    dryRun?: boolean;
    affected?: number;
    details?: Record<string, unknown>;
  },
): Promise<AuditRow> {
  const [row] = await db.insert(auditLog).values(entry).returning();
  return row!;
}

/** Audit entries, newest first, optionally of one action. */
export async function listAudit(
  db: Database,
  options: { action?: string; limit?: number } = {},
): Promise<AuditRow[]> {
  return db
    .select()
    .from(auditLog)
    .where(options.action === undefined ? undefined : eq(auditLog.action, options.action))
    .orderBy(desc(auditLog.id))
    .limit(options.limit ?? 100);
}
