import { Command } from 'commander';
import { integer } from '../arguments.js';
import { unwrap } from '../output.js';
import type { Act } from '../program.js';

export function auditCommand(act: Act): Command {
  const audit = new Command('audit').description(
    'what operators did: key changes, dead-letter requeues and purges',
  );

  audit
    .command('list')
    .description('audit entries, newest first')
    .option('--action <action>', 'only this action, e.g. keys.revoke or dead_letters.requeue')
    .option('--limit <n>', 'at most this many (100 by default)', integer(1, 1000))
    .action(
      act(async (context, options: { action?: string; limit?: number }) => {
        const answer = unwrap(
          await context.api.GET('/admin/audit', {
            params: {
              query: {
                ...(options.action === undefined ? {} : { action: options.action }),
                ...(options.limit === undefined ? {} : { limit: options.limit }),
              },
            },
          }),
        );
        context.output.result(answer, () =>
          context.output.table(
            answer.items.map((entry) => ({
              ...entry,
              dry_run: entry.dry_run ? 'yes' : 'no',
              selector: JSON.stringify(entry.selector),
            })),
            ['at', 'actor', 'action', 'dry_run', 'affected', 'selector'],
          ),
        );
      }),
    );

  return audit;
}
