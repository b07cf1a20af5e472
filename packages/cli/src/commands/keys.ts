import type { paths } from '@gleaner/client';
import { Command } from 'commander';
import { keyScope } from '../arguments.js';
import type { CliContext } from '../context.js';
import { CliError, exitCodes, unwrap } from '../output.js';
import type { Act } from '../program.js';

type KeySummary =
  paths['/admin/keys']['get']['responses'][200]['content']['application/json']['items'][number];

/** What `DELETE /admin/keys/:id` takes: a key's id, or its whole prefix (8 hex digits). */
const ID_OR_PREFIX = /^([0-9a-f]{8}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The one live key whose prefix starts with `start` (shorter than a whole prefix). */
export function keyByPrefixStart(keys: KeySummary[], start: string): KeySummary {
  const matches = keys.filter((key) => key.revoked_at === null && key.prefix.startsWith(start));
  if (matches.length === 1) return matches[0]!;
  throw new CliError(
    matches.length === 0
      ? `no live key has a prefix starting with ${start}`
      : `${matches.length} keys have a prefix starting with ${start}: give more of it, or the id`,
    exitCodes.usage,
  );
}

async function listKeys(context: CliContext) {
  return unwrap(await context.api.GET('/admin/keys'));
}

const when = (at: string | null) => at?.slice(0, 19).replace('T', ' ') ?? null;

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
          await context.api.POST('/admin/keys', {
            body: { name: options.name, scope: options.scope },
          }),
        );
        context.output.result(created, () => {
          context.output.line(created.key);
          context.output.note(
            `key ${created.prefix} (${created.name}, ${created.scope}, id ${created.id}) created: store it now, it is not shown again`,
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
          context.output.table(
            answer.items.map((key) => ({
              ...key,
              created: when(key.created_at),
              last_used: when(key.last_used_at),
              revoked: when(key.revoked_at),
            })),
            ['prefix', 'name', 'scope', 'created', 'last_used', 'revoked', 'id'],
          ),
        );
      }),
    );

  keys
    .command('revoke')
    .description('revoke an API key: it stops working at once')
    .argument('<id-or-prefix>', "the key's id, its prefix, or the start of its prefix")
    .action(
      act(async (context, idOrPrefix: string) => {
        const wanted = idOrPrefix.toLowerCase();
        const id = ID_OR_PREFIX.test(wanted)
          ? wanted
          : keyByPrefixStart((await listKeys(context)).items, wanted).id;
        const revoked = unwrap(
          await context.api.DELETE('/admin/keys/{id}', { params: { path: { id } } }),
        );
        context.output.result(revoked, () =>
          context.output.line(`key ${revoked.prefix} (${revoked.name}, ${revoked.scope}) revoked`),
        );
      }),
    );

  return keys;
}
