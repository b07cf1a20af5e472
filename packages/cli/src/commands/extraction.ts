import type { paths } from '@gleaner/client';
import { Command, Option } from 'commander';
import { integer } from '../arguments.js';
import { CliError, exitCodes, unwrap } from '../output.js';
import type { Act } from '../program.js';

type RequeueBody =
  paths['/admin/extraction/requeue']['post']['requestBody']['content']['application/json'];

interface RequeueOptions {
  tenant: string;
  status?: NonNullable<RequeueBody['status']>;
  neverExtracted?: boolean;
  limit?: number;
  yes?: boolean;
}

/** The body of `POST /admin/extraction/requeue`: a dry run unless `--yes`. */
export function extractionRequeueBody(options: RequeueOptions): RequeueBody {
  return {
    tenant_id: options.tenant,
    ...(options.status === undefined ? {} : { status: options.status }),
    ...(options.neverExtracted ? { only_null_status: true } : {}),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    dry_run: options.yes !== true,
  };
}

export function extractionCommand(act: Act): Command {
  const extraction = new Command('extraction').description(
    "a tenant's LLM extraction: status and requeues",
  );

  extraction
    .command('status')
    .description("a tenant's extractions by status, the queue's depths, the fallback rate")
    .requiredOption('--tenant <id>', 'tenant id')
    .action(
      act(async (context, options: { tenant: string }) => {
        const answer = unwrap(
          await context.api.GET('/admin/extraction/status', {
            params: { query: { tenant_id: options.tenant } },
          }),
        );
        context.output.result(answer, () => {
          const { output } = context;
          output.line(
            `extraction ${answer.enabled ? 'enabled' : 'disabled'} (${answer.mode}, version ${answer.version}) for tenant ${answer.tenant_id}`,
          );
          output.table(
            Object.entries(answer.status_counts).map(([status, count]) => ({ status, count })),
            ['status', 'count'],
          );
          const { queue } = answer;
          output.line(
            `queue: ${queue.queue} waiting, ${queue.active} active, ${queue.retry} to retry, ${queue.dlq} dead letters`,
          );
          if (answer.fallback_rate !== null) {
            output.line(`fallback model answered ${(answer.fallback_rate * 100).toFixed(1)} %`);
          }
        });
      }),
    );

  extraction
    .command('requeue')
    .description(
      'extract again: by status, or complete resumes never extracted; a dry run unless --yes',
    )
    .requiredOption('--tenant <id>', 'tenant id')
    .addOption(
      new Option('--status <status>', 'requeue extractions in this status (any version)')
        .choices(['failed', 'ready', 'skipped', 'queued', 'processing'])
        .conflicts('neverExtracted'),
    )
    .option('--never-extracted', "the tenant's complete resumes that were never extracted")
    .option('--limit <n>', 'at most this many, oldest first', integer(1, 10_000))
    .option('--yes', 'really requeue (without it, only report what would be)')
    .action(
      act(async (context, options: RequeueOptions) => {
        if (options.status === undefined && !options.neverExtracted) {
          throw new CliError('give --status <status> or --never-extracted', exitCodes.usage);
        }
        const answer = unwrap(
          await context.api.POST('/admin/extraction/requeue', {
            body: extractionRequeueBody(options),
          }),
        );
        context.output.result(answer, () =>
          context.output.line(
            answer.dry_run
              ? `${answer.matched} extractions match; nothing requeued (dry run: add --yes to requeue them)`
              : `requeued ${answer.requeued} of ${answer.matched} extractions under version ${answer.version}`,
          ),
        );
      }),
    );

  return extraction;
}
