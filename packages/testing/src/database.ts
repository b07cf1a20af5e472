import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { createDb, defaultMigrationsFolder, runMigrations } from '@gleaner/db';

/** Superuser connection used to create and drop test databases. */
export const testAdminUrl =
  process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

function urlFor(name: string): string {
  const url = new URL(testAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Template name derived from the migrations' content, so a new migration makes a new template. */
function templateName(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(defaultMigrationsFolder)
    .filter((f) => f.endsWith('.sql'))
    .sort()) {
    hash.update(file).update(readFileSync(path.join(defaultMigrationsFolder, file)));
  }
  return `gleaner_tpl_${hash.digest('hex').slice(0, 12)}`;
}

const TEMPLATE_LOCK_KEY = 7_301_955_432;

async function ensureTemplate(admin: pg.Client): Promise<string> {
  const template = templateName();
  await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK_KEY]);
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
    if (exists.rowCount === 0) {
      const building = `${template}_build_${randomBytes(3).toString('hex')}`;
      await admin.query(`CREATE DATABASE "${building}"`);
      const handle = createDb({ url: urlFor(building), poolMax: 1 });
      try {
        await runMigrations(handle.pool);
      } finally {
        await handle.close();
      }
      await admin.query(`ALTER DATABASE "${building}" RENAME TO "${template}"`);
    }
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK_KEY]);
  }
  return template;
}

/**
 * A fresh, migrated database of its own for one test file, cloned from a template that is
 * migrated once per set of migrations. `drop()` removes only this database.
 */
export async function createTestDatabase(
  label = 'test',
  options: { migrated?: boolean } = {},
): Promise<TestDatabase> {
  const admin = new pg.Client({ connectionString: testAdminUrl });
  await admin.connect();
  try {
    // `migrated: false`: an empty database, for what runs the migrations itself.
    const template = options.migrated === false ? 'template0' : await ensureTemplate(admin);
    const safeLabel = label
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .slice(0, 20);
    const name = `gleaner_t_${safeLabel}_${randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
    return {
      name,
      url: urlFor(name),
      drop: async () => {
        const client = new pg.Client({ connectionString: testAdminUrl });
        await client.connect();
        try {
          await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        } finally {
          await client.end();
        }
      },
    };
  } finally {
    await admin.end();
  }
}
