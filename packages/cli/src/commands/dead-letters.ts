import type { paths } from '@gleaner/client';
import { Command, Option } from 'commander';
import { integer, since } from '../arguments.js';
import type { CliContext } from '../context.js';
import { CliError, exitCodes, unwrap } from '../output.js';
import type { Act } from '../program.js';

type ListQuery = NonNullable<paths['/admin/dead-letters']['get']['parameters']['query']>;
type RequeueBody =
  paths['/admin/dead-letters/requeue']['post']['requestBody']['content']['application/json'];
type PurgeQuery = NonNullable<paths['/admin/dead-letters']['delete']['parameters']['query']>;
type DeadLetter =
  paths['/admin/dead-letters']['get']['responses'][200]['content']['application/json']['data'][number];
type Queue = NonNullable<ListQuery['queue']>;

const queues = [
  'scrape',
  'crawl',
  'extract',
  'llm-extract',
  'documents',
] as const satisfies readonly Queue[];

/** The selector every dead-letter route takes, as commander names its options. */
export interface SelectorOptions {
  queue?: Queue;
  site?: string;
  tenant?: string;
  errorClass?: string;
  since?: string;
}

/** The selector as the API names its fields, without the options not given. */
export function deadLetterSelector(options: SelectorOptions) {
  const selector = {
    queue: options.queue,
    site: options.site,
    tenant: options.tenant,
    error_class: options.errorClass,
    since: options.since,
  };
  return Object.fromEntries(
    Object.entries(selector).filter(([, value]) => value !== undefined),
  ) as Partial<typeof selector>;
}

/** The body of a requeue: a dry run unless `--yes`. */
export function requeueBody(options: SelectorOptions & { limit?: number; yes?: boolean }) {
  return {
    ...deadLetterSelector(options),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    dry_run: options.yes !== true,
  } satisfies RequeueBody;
}

/**
 * The query of a purge: a dry run unless `--yes`. With no selector the API purges nothing unless
 * told `all`; the CLI asks for `--all` before calling it.
 */
export function purgeQuery(
  options: SelectorOptions & { limit?: number; all?: boolean; yes?: boolean },
): PurgeQuery {
  const selector = deadLetterSelector(options);
  if (Object.keys(selector).length === 0 && !options.all) {
    throw new CliError(
      'give a selector (--queue, --site, --tenant, --error-class, --since), or --all to purge every dead letter',
      exitCodes.usage,
    );
  }
  return {
    ...selector,
    ...(options.all ? { all: 'true' } : {}),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    dry_run: options.yes === true ? 'false' : 'true',
  };
}

/** A dead letter as a table row: what failed, where, with which error. */
function row(letter: DeadLetter) {
  const message = letter.message.replace(/\s+/g, ' ');
  return {
    failed_at: letter.failed_at,
    queue: letter.queue,
    site: letter.site_name,
    run: letter.run_id,
    tenant: letter.tenant_id,
    error_class: letter.error_class ?? letter.retry_class,
    attempts: letter.attempts_made,
    message: message.length > 80 ? `${message.slice(0, 79)}…` : message,
  };
}

const columns = ['failed_at', 'queue', 'site', 'run', 'tenant', 'error_class', 'attempts'];

function withSelectorOptions(command: Command): Command {
  return command
    .addOption(new Option('--queue <queue>', 'the queue the job failed in').choices(queues))
    .option('--site <name>', "a site's name or id")
    .option('--tenant <id>', 'tenant id')
    .option('--error-class <code>', 'the error code it failed with, e.g. HTTP_STATUS_404')
    .option('--since <when>', 'failed since: 30m, 2h, 7d or an ISO 8601 date-time', since());
}

function printMore(context: CliContext, more: boolean, limit: number) {
  if (more) context.output.line(`more dead letters may match beyond --limit ${limit}`);
}

export function deadLettersCommand(act: Act): Command {
  const deadLetters = new Command('dead-letters').description(
    'jobs that failed for good, parked for operators: list, requeue, purge',
  );

  withSelectorOptions(deadLetters.command('list').description('dead letters, newest first'))
    .option('--limit <n>', 'at most this many (a page; 50 by default)', integer(1, 200))
    .option('--cursor <cursor>', 'the next page: next_cursor of the previous one')
    .action(
      act(async (context, options: SelectorOptions & { limit?: number; cursor?: string }) => {
        const answer = unwrap(
          await context.api.GET('/admin/dead-letters', {
            params: {
              query: {
                ...deadLetterSelector(options),
                ...(options.limit === undefined ? {} : { limit: options.limit }),
                ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
              },
            },
          }),
        );
        context.output.result(answer, () => {
          context.output.table(answer.data.map(row), [...columns, 'message']);
          if (answer.next_cursor) {
            context.output.line(`more: the same command with --cursor ${answer.next_cursor}`);
          }
        });
      }),
    );

  withSelectorOptions(
    deadLetters
      .command('requeue')
      .description('give dead letters back to the workers; a dry run unless --yes'),
  )
    .option('--limit <n>', 'at most this many, newest first (100 by default)', integer(1, 1000))
    .option('--yes', 'really requeue (without it, only report what would be)')
    .action(
      act(async (context, options: SelectorOptions & { limit?: number; yes?: boolean }) => {
        const answer = unwrap(
          await context.api.POST('/admin/dead-letters/requeue', { body: requeueBody(options) }),
        );
        context.output.result(answer, () => {
          const { output } = context;
          output.table(
            answer.entries.map((entry) => ({
              ...row(entry),
              outcome: entry.outcome,
              replay_run: entry.replay_run_id,
              reason: entry.reason,
            })),
            ['queue', 'site', 'run', 'error_class', 'outcome', 'replay_run', 'reason'],
          );
          output.line(
            answer.dry_run
              ? `dry run: ${answer.requeued} of ${answer.matched} matching dead letters would be requeued, ${answer.skipped} skipped; nothing changed (add --yes to requeue them)`
              : `requeued ${answer.requeued} of ${answer.matched} matching dead letters, ${answer.skipped} skipped`,
          );
          printMore(context, answer.more, options.limit ?? 100);
        });
      }),
    );

  withSelectorOptions(
    deadLetters
      .command('purge')
      .description('forget dead letters (their rows stay as they are); a dry run unless --yes'),
  )
    .option('--all', 'with no selector: every dead letter')
    .option('--limit <n>', 'at most this many (1000 by default)', integer(1, 10_000))
    .option('--yes', 'really purge (without it, only report what would be)')
    .action(
      act(
        async (
          context,
          options: SelectorOptions & { all?: boolean; limit?: number; yes?: boolean },
        ) => {
          const answer = unwrap(
            await context.api.DELETE('/admin/dead-letters', {
              params: { query: purgeQuery(options) },
            }),
          );
          context.output.result(answer, () => {
            const { output } = context;
            output.table(answer.entries.map(row), columns);
            output.line(
              answer.dry_run
                ? `dry run: ${answer.purged} of ${answer.matched} matching dead letters would be purged; nothing changed (add --yes to purge them)`
                : `purged ${answer.purged} of ${answer.matched} matching dead letters`,
            );
            printMore(context, answer.more, options.limit ?? 1000);
          });
        },
      ),
    );

  return deadLetters;
}
