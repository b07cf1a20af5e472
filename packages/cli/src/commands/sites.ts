import type { paths } from '@gleaner/client';
import { Command } from 'commander';
import { integer, jsonObject, keyValue, pauseRange } from '../arguments.js';
import type { CliContext } from '../context.js';
import { unwrap } from '../output.js';
import type { Act } from '../program.js';

type NewSite = paths['/sites']['post']['requestBody']['content']['application/json'];

interface AddOptions {
  kind: string;
  config?: Record<string, unknown>;
  set?: Record<string, unknown>;
  interval?: number;
  pause?: { min: number; max: number };
  concurrency?: number;
  disabled?: boolean;
  llm?: boolean;
  llmSync?: boolean;
  expireAfterMisses?: number;
  adaptive?: boolean;
  minInterval?: number;
  maxInterval?: number;
}

/** The body of `POST /sites` for `gleaner sites add`. */
export function newSiteBody(name: string, options: AddOptions): NewSite {
  return {
    site_name: name,
    // The API checks the kind against its adapters and answers 400 with the list.
    kind: options.kind as NewSite['kind'],
    config: { ...options.config, ...options.set },
    ...(options.interval === undefined ? {} : { interval_minutes: options.interval }),
    ...(options.pause === undefined
      ? {}
      : { min_pause_seconds: options.pause.min, max_pause_seconds: options.pause.max }),
    ...(options.concurrency === undefined ? {} : { max_concurrency: options.concurrency }),
    ...(options.disabled ? { enabled: false } : {}),
    ...(options.llm ? { llm_extraction: true } : {}),
    ...(options.llmSync ? { use_llm_sync: true } : {}),
    ...(options.expireAfterMisses === undefined
      ? {}
      : { expire_after_misses: options.expireAfterMisses }),
    ...(options.adaptive ? { adaptive: true } : {}),
    ...(options.minInterval === undefined ? {} : { min_interval_minutes: options.minInterval }),
    ...(options.maxInterval === undefined ? {} : { max_interval_minutes: options.maxInterval }),
  };
}

async function setEnabled(context: CliContext, site: string, enabled: boolean) {
  const answer = unwrap(
    await context.api.PATCH('/sites/{site}', {
      params: { path: { site } },
      body: { enabled },
    }),
  );
  context.output.result(answer, () =>
    context.output.line(`site ${answer.data.site_name} ${enabled ? 'enabled' : 'disabled'}`),
  );
}

export function sitesCommand(act: Act): Command {
  const sites = new Command('sites').description('register, list and disable sites');

  sites
    .command('add')
    .description('register a site; its config is checked against its kind')
    .argument('<name>', 'the site name: lower-case letters, digits, . _ -')
    .option('--kind <kind>', 'career-site, greenhouse, lever, ashby, …', 'career-site')
    .option('--config <json>', "the adapter's config as a JSON object", jsonObject)
    .option(
      '--set <key=value>',
      'one config field (repeatable): --set url=https://… --set sitemapUrl=https://…',
      keyValue,
    )
    .option('--interval <minutes>', 'how often the scheduler runs it', integer(1, 10_080))
    .option('--pause <seconds>', 'pause between requests: MIN-MAX or one number', pauseRange)
    .option('--concurrency <n>', 'requests in flight to the site at most', integer(1, 256))
    .option('--disabled', 'register it disabled (the scheduler leaves it alone)')
    .option('--llm', 'send pages the rules cannot read to the LLM stage')
    .option(
      '--llm-sync',
      'before a run closes, let the LLM match postings at new URLs with those not listed again (decision 0025)',
    )
    .option(
      '--expire-after-misses <n>',
      "complete listings that must miss a posting before it expires (default: the fleet's, 2)",
      integer(1, 100),
    )
    .option(
      '--adaptive',
      'run it more often when its postings change often, less when they rarely do (decision 0022)',
    )
    .option(
      '--min-interval <minutes>',
      "the adaptive interval's floor (default: a quarter of --interval)",
      integer(1, 10_080),
    )
    .option(
      '--max-interval <minutes>',
      "the adaptive interval's ceiling (default: four times --interval)",
      integer(1, 10_080),
    )
    .action(
      act(async (context, name: string, options: AddOptions) => {
        const answer = unwrap(
          await context.api.POST('/sites', { body: newSiteBody(name, options) }),
        );
        context.output.result(answer, () =>
          context.output.line(
            `site ${answer.data.site_name} registered (${answer.data.kind}, every ${answer.data.interval_minutes} min, id ${answer.data.id})`,
          ),
        );
      }),
    );

  sites
    .command('list')
    .description('registered sites and their schedules')
    .action(
      act(async (context) => {
        const answer = unwrap(await context.api.GET('/sites'));
        context.output.result(answer, () =>
          context.output.table(
            answer.data.map((site) => ({
              name: site.site_name,
              kind: site.kind,
              enabled: site.enabled ? 'yes' : 'no',
              every: site.adaptive
                ? `${site.adaptive_interval_minutes ?? site.interval_minutes} min (adaptive)`
                : `${site.interval_minutes} min`,
              'last run': site.last_run_at,
              'next run': site.enabled ? site.next_run_at : null,
            })),
            ['name', 'kind', 'enabled', 'every', 'last run', 'next run'],
          ),
        );
      }),
    );

  sites
    .command('disable')
    .description('stop scheduling a site (its postings stay)')
    .argument('<site>', 'site name or id')
    .action(act((context, site: string) => setEnabled(context, site, false)));

  sites
    .command('enable')
    .description('schedule a disabled site again')
    .argument('<site>', 'site name or id')
    .action(act((context, site: string) => setEnabled(context, site, true)));

  return sites;
}
