import { Command } from 'commander';
import { keyScope } from '../arguments.js';
import type { CliContext } from '../context.js';
import { CliError, exitCodes, unwrap } from '../output.js';
import type { Act } from '../program.js';

/**
 * `POST /admin/keys`, `GET /admin/keys` and `DELETE /admin/keys/:id` are newer than the client's
 * OpenAPI document: they are called untyped, with the shapes below, until `pnpm openapi` picks
 * them up.
 */
interface CreatedKey {
  id: string;
  key: string;
  name: string;
  scope: string;
  prefix: string;
}

interface KeyEntry {
  id: string;
  name?: string;
  prefix?: string;
  scope?: string;
  [field: string]: unknown;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The keys of a `GET /admin/keys` answer: an array, or one under `items` or `data`. */
export function keyEntries(answer: unknown): KeyEntry[] {
  if (Array.isArray(answer)) return answer as KeyEntry[];
  const page = answer as { items?: unknown; data?: unknown } | null;
  if (Array.isArray(page?.items)) return page.items as KeyEntry[];
  if (Array.isArray(page?.data)) return page.data as KeyEntry[];
  return [];
}

/** The one key a `revoke` argument names: its id, or the start of its prefix. */
export function findKey(entries: KeyEntry[], idOrPrefix: string): KeyEntry {
  const byId = entries.find((entry) => entry.id === idOrPrefix);
  if (byId) return byId;
  const matches = entries.filter((entry) => entry.prefix?.startsWith(idOrPrefix));
  if (matches.length === 1) return matches[0]!;
  throw new CliError(
    matches.length === 0
      ? `no key has the id or prefix ${idOrPrefix}`
      : `${matches.length} keys start with ${idOrPrefix}: give more of the prefix, or the id`,
    exitCodes.usage,
  );
}

async function listKeys(context: CliContext): Promise<unknown> {
  return unwrap(await context.untyped<unknown>('GET', '/admin/keys'));
}

export function keysCommand(act: Act): Command {
  const keys = new Command('keys').description('API keys: create, list, revoke');

  keys
    .command('create')
    .description('create an API key; it is shown once')
    .requiredOption('--name <name>', 'who or what will use it')
    .requiredOption('--scope <scope>', 'admin, viewer or tenant:<id>', keyScope)
    .action(
      act(async (context, options: { name: string; scope: string }) => {
        const created = unwrap(
          await context.untyped<CreatedKey>('POST', '/admin/keys', {
            body: { name: options.name, scope: options.scope },
          }),
        );
        context.output.result(created, () => {
          context.output.line(created.key);
          context.output.note(
            `key ${created.name} (${created.scope}, id ${created.id}, prefix ${created.prefix}) created: store it now, it is not shown again`,
          );
        });
      }),
    );

  keys
    .command('list')
    .description('API keys (never the keys themselves)')
    .action(
      act(async (context) => {
        const answer = await listKeys(context);
        context.output.result(answer, () =>
          context.output.table(keyEntries(answer), ['id', 'name', 'scope', 'prefix']),
        );
      }),
    );

  keys
    .command('revoke')
    .description('revoke an API key: it stops working at once')
    .argument('<id-or-prefix>', "the key's id, or the start of its prefix")
    .action(
      act(async (context, idOrPrefix: string) => {
        const id = UUID.test(idOrPrefix)
          ? idOrPrefix
          : findKey(keyEntries(await listKeys(context)), idOrPrefix).id;
        const answer = unwrap(
          await context.untyped<unknown>('DELETE', `/admin/keys/${encodeURIComponent(id)}`),
        );
        context.output.result(answer ?? { id, revoked: true }, () =>
          context.output.line(`key ${id} revoked`),
        );
      }),
    );

  return keys;
}
