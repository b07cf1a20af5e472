import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { eq } from 'drizzle-orm';
import type { Database } from '../client.js';
import { pageBodies } from '../schema.js';

const gunzipAsync = promisify(gunzip);

export function sha256Hex(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

/**
 * Stores a raw body content-addressed; storing the same bytes twice is a no-op. The bytes go
 * in as fetched and Postgres compresses them (lz4 column compression, migration 0003): a
 * fraction of gzip's CPU, and none of it on a worker's event loop.
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
    .onConflictDoNothing();
  return sha256;
}

export async function loadBody(
  db: Database,
  sha256: string,
): Promise<{ body: Buffer; contentType: string | null } | undefined> {
  const [row] = await db.select().from(pageBodies).where(eq(pageBodies.sha256, sha256)).limit(1);
  if (!row) return undefined;
  // Rows written before migration 0003 were gzip-compressed by the worker.
  const body = row.contentEncoding === 'gzip' ? await gunzipAsync(row.content) : row.content;
  return { body, contentType: row.contentType };
}
