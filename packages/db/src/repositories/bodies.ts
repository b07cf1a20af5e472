import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip, constants } from 'node:zlib';
import { eq } from 'drizzle-orm';
import type { Database } from '../client.js';
import { pageBodies } from '../schema.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export function sha256Hex(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

/**
 * Stores a raw body content-addressed; storing the same bytes twice is a no-op.
 * gzip level 4: posting pages compress ~5x at a fraction of level 9's CPU cost, and the
 * work runs on libuv's thread pool rather than the event loop.
 */
export async function storeBody(
  db: Database,
  body: Uint8Array,
  contentType: string | null,
  sha256 = sha256Hex(body),
): Promise<string> {
  const compressed = await gzipAsync(body, { level: 4, strategy: constants.Z_DEFAULT_STRATEGY });
  await db
    .insert(pageBodies)
    .values({
      sha256,
      content: compressed,
      contentEncoding: 'gzip',
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
  const body = row.contentEncoding === 'gzip' ? await gunzipAsync(row.content) : row.content;
  return { body, contentType: row.contentType };
}
