import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { inArray, sql } from 'drizzle-orm';
import type { Database } from '../client.js';
import { pageBodies } from '../schema.js';

const gunzipAsync = promisify(gunzip);

export function sha256Hex(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

/**
 * Stores a raw body content-addressed. The bytes go in as fetched and Postgres compresses them
 * (lz4 column compression, migration 0003): a fraction of gzip's CPU, and none of it on a
 * worker's event loop.
 *
 * Storing bytes already kept moves their `stored_at` to now, which keeps the body sweeper
 * (`deleteUnreferencedBodies`) off them for its grace period while the caller points a posting
 * at them. The move is skipped when `stored_at` is under a minute old, so bytes stored again and
 * again cost a row lock rather than a new row version each time; the sweeper's grace is at least
 * five minutes (`BODY_SWEEP_GRACE_MS`), so a body stored within the last minute is never its.
 * A body the sweeper deletes meanwhile is inserted again: `ON CONFLICT` waits for the delete.
 */
export async function storeBody(
  db: Database,
  body: Uint8Array,
  contentType: string | null,
  sha256 = sha256Hex(body),
): Promise<string> {
  await db
    .insert(pageBodies)
    .values({
      sha256,
      content: Buffer.from(body.buffer, body.byteOffset, body.byteLength),
      contentEncoding: 'identity',
      contentType,
      byteLength: body.byteLength,
    })
    .onConflictDoUpdate({
      target: pageBodies.sha256,
      set: { storedAt: sql`now()` },
      setWhere: sql`${pageBodies.storedAt} < now() - interval '1 minute'`,
    });
  return sha256;
}

export interface StoredBody {
  body: Buffer;
  contentType: string | null;
}

export async function loadBody(db: Database, sha256: string): Promise<StoredBody | undefined> {
  return (await loadBodies(db, [sha256])).get(sha256);
}

/** The stored bodies of `sha256s`, by sha256, in one query; those not stored are absent. */
export async function loadBodies(
  db: Database,
  sha256s: readonly string[],
): Promise<Map<string, StoredBody>> {
  const found = new Map<string, StoredBody>();
  if (sha256s.length === 0) return found;
  const rows = await db
    .select()
    .from(pageBodies)
    .where(inArray(pageBodies.sha256, [...new Set(sha256s)]));
  for (const row of rows) {
    // Rows written before migration 0003 were gzip-compressed by the worker.
    const body = row.contentEncoding === 'gzip' ? await gunzipAsync(row.content) : row.content;
    found.set(row.sha256, { body, contentType: row.contentType });
  }
  return found;
}
