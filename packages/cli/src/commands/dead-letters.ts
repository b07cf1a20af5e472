import { Command } from 'commander';
import { integer, since } from '../arguments.js';
import { formatCell, unwrap } from '../output.js';
import type { Act } from '../program.js';

/**
 * `GET /admin/dead-letters` and `POST /admin/dead-letters/requeue` are newer than the client's
 * OpenAPI document: they are called untyped, with the shapes below, until `pnpm openapi` picks
 * them up.
 */
interface DeadLetterPage {
  items: Record<string, unknown>[];
  next_cursor: string | null;
}

interface RequeueAnswer {
  dry_run: boolean;
  matched: number;
  requeued: number;
}

interface SelectorOptions {
  queue?: string;
  site?: string;
  tenant?: string;
  errorClass?: string;
  since?: string;
  limit?: number;
}

/** The selector of both routes, as the API names its fields. */
export function deadLetterSelector(options: SelectorOptions) {
  return {
    queue: options.queue,
    site: options.site,
    tenant: options.tenant,
    error_class: options.errorClass,
    since: options.since,
    limit: options.limit,
  };
}

/** The body of a requeue: a dry run unless `--yes`. */
export function requeueBody(options: SelectorOptions & { yes?: boolean }) {
  const selector = Object.fromEntries(
    Object.entries(deadLetterSelector(options)).filter(([, value]) => value !== undefined),
  );
  return { ...selector, dry_run: options.yes !== true };
}

/** Columns shown first when present; the rest of an item's plain fields follow. */
const preferredColumns = [
  'id',
  'queue',
  'job_name',
  'site',
  'tenant',
  'error_class',
  'error_code',
  'attempts',
  'failed_at',
];

/** A table of whatever plain fields the items carry, the preferred ones first. */
export function deadLetterColumns(items: Record<string, unknown>[], max = 8): string[] {
  const plain = new Set<string>();
  for (const item of items) {
    for (const [key, value] of Object.entries(item)) {
      if (value === null || typeof value !== 'object') plain.add(key);
    }
  }
  const preferred = preferredColumns.filter((column) => plain.has(column));
  const rest = [...plain].filter((column) => !preferredColumns.includes(column));
  return [...preferred, ...rest].slice(0, max);
}

function withSelectorOptions(command: Command): Command {
  return command
    .option('--queue <queue>', 'scrape, crawl, extract, llm-extract, documents')
    .option('--site <name>', 'site name')
    .option('--tenant <id>', 'tenant id')
    .option('--error-class <class>', 'permanent, transient, …')
    .option('--since <when>', 'dead-lettered since: 30m, 2h, 7d or an ISO 8601 date-time', since())
    .option('--limit <n>', 'at most this many', integer(1, 10_000));
}

export function deadLettersCommand(act: Act): Command {
  const deadLetters = new Command('dead-letters').description(
    'jobs that failed for good, parked for operators',
  );

  withSelectorOptions(deadLetters.command('list').description('dead letters, newest first'))
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .action(
      act(async (context, options: SelectorOptions & { cursor?: string }) => {
        const answer = unwrap(
          await context.untyped<DeadLetterPage>('GET', '/admin/dead-letters', {
            query: { ...deadLetterSelector(options), cursor: options.cursor },
          }),
        );
        context.output.result(answer, () => {
          context.output.table(
            answer.items.map((item) =>
              Object.fromEntries(Object.entries(item).map(([k, v]) => [k, formatCell(v)])),
            ),
            deadLetterColumns(answer.items),
          );
          if (answer.next_cursor) {
            context.output.line(`more: gleaner dead-letters list --cursor ${answer.next_cursor}`);
          }
        });
      }),
    );

  withSelectorOptions(
    deadLetters
      .command('requeue')
      .description('put dead letters back on their queues; a dry run unless --yes'),
  )
    .option('--yes', 'really requeue (without it, only report what would be)')
    .action(
      act(async (context, options: SelectorOptions & { yes?: boolean }) => {
        const answer = unwrap(
          await context.untyped<RequeueAnswer>('POST', '/admin/dead-letters/requeue', {
            body: requeueBody(options),
          }),
        );
        context.output.result(answer, () =>
          context.output.line(
            answer.dry_run
              ? `${answer.matched} dead letters match; nothing requeued (dry run: add --yes to requeue them)`
              : `requeued ${answer.requeued} of ${answer.matched} matching dead letters`,
          ),
        );
      }),
    );

  return deadLetters;
}
