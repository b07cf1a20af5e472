import { setTimeout as sleep } from 'node:timers/promises';
import type { Run } from '@gleaner/client';
import { Command } from 'commander';
import { integer } from '../arguments.js';
import type { CliContext } from '../context.js';
import { CliError, unwrap } from '../output.js';
import type { Act } from '../program.js';
import { isRunActive, ProgressView, renderSummary, runExitCode } from '../progress.js';

/** Polls that may fail in a row (the API restarting, a blip) before the watch gives up. */
const MAX_FAILED_POLLS = 20;

async function fetchRun(context: CliContext, runId: string): Promise<Run> {
  const answer = unwrap(
    await context.api.GET('/jobs/scrape/{runId}', {
      params: { path: { runId }, query: { limit: 0 } },
    }),
  );
  const { postings: _postings, ...run } = answer.data;
  return run;
}

/**
 * Follows a run until it ends, drawing its progress (on stderr, so that `--json` leaves stdout to
 * the final run), and answers the exit status its outcome gives. A poll that fails is tried again
 * for a while: the API restarting does not end the watch. An unknown run does.
 */
export async function watchRun(context: CliContext, runId: string): Promise<number> {
  const view = new ProgressView(context.output.stderr);
  let failures = 0;
  let run: Run;
  for (;;) {
    try {
      run = await fetchRun(context, runId);
      failures = 0;
    } catch (error) {
      const status = error instanceof CliError ? (error.body as { status?: number })?.status : 0;
      failures += 1;
      if ((status !== undefined && status >= 400 && status < 500) || failures > MAX_FAILED_POLLS)
        throw error;
      await sleep(context.pollIntervalMs);
      continue;
    }
    view.update(run);
    if (!isRunActive(run)) break;
    await sleep(context.pollIntervalMs);
  }
  context.output.result(run, () => context.output.line(renderSummary(run)));
  return runExitCode(run);
}

interface StartOptions {
  site: string;
  results?: number;
  search?: string;
  location?: string;
  remote?: boolean;
  watch?: boolean;
}

export function runsCommand(act: Act): Command {
  const runs = new Command('runs').description('start, watch and cancel scrape runs');

  runs
    .command('start')
    .description("start a run of a site now (the site's schedule is unchanged)")
    .requiredOption('--site <name>', 'site name')
    .option('--results <n>', 'stop after this many postings', integer(1, 100_000))
    .option('--search <words>', "search-driven kinds: this run's search words")
    .option('--location <place>', "search-driven kinds: this run's location (or remote)")
    .option('--remote', 'search-driven kinds: remote jobs only')
    .option('--watch', 'follow the run until it ends; the exit status says how it ended')
    .action(
      act(async (context, options: StartOptions) => {
        const answer = unwrap(
          await context.api.POST('/jobs/scrape', {
            body: {
              site_name: options.site,
              ...(options.results === undefined ? {} : { results_wanted: options.results }),
              ...(options.search === undefined ? {} : { search_term: options.search }),
              ...(options.location === undefined ? {} : { location: options.location }),
              ...(options.remote ? { is_remote: true } : {}),
            },
          }),
        );
        const started = answer.data;
        if (!options.watch) {
          context.output.result(answer, () =>
            context.output.line(
              `run ${started.run_id} ${started.status}; follow it with: gleaner runs watch ${started.run_id}`,
            ),
          );
          return;
        }
        context.output.note(`run ${started.run_id} ${started.status}`);
        return watchRun(context, started.run_id);
      }),
    );

  runs
    .command('watch')
    .description('draw a run’s progress until it ends; exits non-zero unless it succeeded')
    .argument('<run>', 'run id (manual_… or sched_…)')
    .action(act((context, runId: string) => watchRun(context, runId)));

  runs
    .command('cancel')
    .description('cancel a queued or running run on every worker')
    .argument('<run>', 'run id (manual_… or sched_…)')
    .action(
      act(async (context, runId: string) => {
        const answer = unwrap(
          await context.api.POST('/jobs/scrape/{runId}/cancel', { params: { path: { runId } } }),
        );
        context.output.result(answer, () => context.output.line(renderSummary(answer.data)));
      }),
    );

  return runs;
}
