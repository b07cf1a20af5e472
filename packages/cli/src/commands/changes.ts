import { setTimeout as sleep } from 'node:timers/promises';
import { Command, Option } from 'commander';
import { integer } from '../arguments.js';
import type { CliContext } from '../context.js';
import { unwrap } from '../output.js';
import type { Act } from '../program.js';

const CHANGE_TYPES = ['created', 'updated', 'closed', 'reopened'] as const;

interface ChangesOptions {
  since?: string;
  type?: (typeof CHANGE_TYPES)[number];
  site?: string;
  tenant?: string;
  limit?: number;
  follow?: boolean;
  interval: number;
}

/** One page of the feed from `since`; answers the events and the cursor to go on from. */
async function readPage(context: CliContext, since: string, options: ChangesOptions) {
  return unwrap(
    await context.api.GET('/changes', {
      params: {
        query: {
          since,
          ...(options.type === undefined ? {} : { type: options.type }),
          ...(options.site === undefined ? {} : { site_name: options.site }),
          ...(options.tenant === undefined ? {} : { tenant_id: options.tenant }),
          ...(options.limit === undefined ? {} : { limit: options.limit }),
        },
      },
    }),
  );
}

export function changesCommand(act: Act): Command {
  return new Command('changes')
    .description(
      'what changed in postings, in commit order (created, updated, closed, reopened); --follow to keep reading',
    )
    .option(
      '--since <cursor>',
      'the last cursor read; 0 (the default) for the whole feed, latest for now',
    )
    .addOption(new Option('--type <type>', 'only events of this type').choices(CHANGE_TYPES))
    .option('--site <name>', "only this site's postings")
    .option('--tenant <id>', "only the sites of this tenant (a tenant key's own by default)")
    .option('--limit <n>', 'events per request (100 by default)', integer(1, 1000))
    .option('--follow', 'keep polling for new events until interrupted')
    .option('--interval <seconds>', 'seconds between polls with --follow', integer(1, 3600), 5)
    .action(
      act(async (context, options: ChangesOptions) => {
        let since = options.since ?? '0';
        for (;;) {
          const page = await readPage(context, since, options);
          for (const event of page.data) {
            // --json: one event per line (JSON Lines), so that a script reads them as they come.
            if (context.output.isJson) context.output.line(JSON.stringify(event));
            else
              context.output.line(
                [
                  event.position,
                  event.occurred_at,
                  event.type.padEnd(8),
                  event.posting_id,
                  Object.keys(event.changes).join(',') || '-',
                ].join('  '),
              );
          }
          since = page.next_cursor;
          if (page.data.length > 0) continue;
          if (!options.follow) break;
          await sleep(options.interval * 1000);
        }
        // Where to go on from next time: stderr, so that stdout stays the events.
        context.output.note(`next cursor: ${since}`);
      }),
    );
}
