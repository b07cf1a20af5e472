import { parseArgs } from 'node:util';
import { z } from 'zod';
import { databaseFragment, loadConfig } from '@gleaner/config';
import { createApiKey, createDb, parseApiKeyScope, recordAudit } from '@gleaner/db';

/**
 * One-shot, straight against Postgres: creates an API key and prints it (the only time it is
 * shown). For the first admin key of a system started without ADMIN_API_KEY, and for the
 * operator who has lost every admin key; with a key in hand, `gleaner keys create` does the same
 * through the API. `pnpm keys:create --name <who> --scope admin|viewer|tenant:<id>`.
 */
const USAGE = 'usage: create-key --name <who> --scope admin|viewer|tenant:<id>\n';

function fail(message: string): never {
  process.stderr.write(`create-key: ${message}\n${USAGE}`);
  process.exit(2);
}

let values: { name?: string; scope?: string };
try {
  ({ values } = parseArgs({
    options: { name: { type: 'string' }, scope: { type: 'string' } },
    strict: true,
  }));
} catch (error) {
  fail((error as Error).message);
}
const name = values.name?.trim();
if (!name) fail('--name is required');
const scope = parseApiKeyScope(values.scope ?? '');
if (scope === undefined)
  fail(`--scope must be admin, viewer or tenant:<id>, not "${values.scope ?? ''}"`);

const loaded = loadConfig(z.object(databaseFragment), process.env);
if (!loaded.ok) fail(loaded.error.message);
const database = createDb({
  url: loaded.config.DATABASE_URL,
  poolMax: 1,
  applicationName: 'gleaner-create-key',
});
try {
  const { key, row } = await createApiKey(database.db, { name, scope });
  await recordAudit(database.db, {
    apiKeyId: null,
    actor: 'create-key (database)',
    action: 'keys.create',
    selector: { id: row.id, prefix: row.prefix },
    affected: 1,
    details: { name, scope: values.scope },
  });
  process.stdout.write(`${key}\n`);
  process.stderr.write(
    `create-key: ${values.scope} key "${name}" (prefix ${row.prefix}) created; it is shown only now\n`,
  );
} catch (error) {
  process.stderr.write(`create-key: ${(error as Error).message}\n`);
  process.exitCode = 1;
} finally {
  await database.close();
}
