import type { Run } from '@gleaner/client';
import { exitCodes, type OutputStream } from './output.js';

/**
 * A run's progress by stage, drawn from what `GET /jobs/scrape/:runId` says of it:
 *
 *   scrape   the listing: postings found (`requested_pages`), done once the listing is
 *   crawl    postings whose page was fetched and handled: ready, skipped or failed
 *   extract  postings with their fields: ready (extracted) or skipped (unchanged)
 *
 * A crawl job extracts the page it fetched (decision 0004), so crawl and extract move together;
 * they part where a posting errors (crawled, never extracted).
 */
export interface StageProgress {
  name: 'scrape' | 'crawl' | 'extract';
  done: number;
  /** Unknown (null) while the listing is still finding postings. */
  total: number | null;
  complete: boolean;
}

const activeStatuses = new Set(['queued', 'running']);

export const isRunActive = (run: Pick<Run, 'status'>) => activeStatuses.has(run.status);

/** Whether the run's listing has ended: it covered the site, hit `results_wanted`, or the run ended. */
function isListingDone(run: Run): boolean {
  return (
    !isRunActive(run) ||
    run.listing_complete ||
    (run.results_wanted !== null && run.requested_pages >= run.results_wanted)
  );
}

export function runStages(run: Run): StageProgress[] {
  const listed = run.requested_pages;
  const listingDone = isListingDone(run);
  // The run's counters, not `listed - pending_count`: a cancelled run settles its pending
  // postings without crawling them.
  const settled = run.ready_count + run.skipped_count + run.errors_count;
  const extracted = run.ready_count + run.skipped_count;
  const total = listingDone ? listed : null;
  const ended = !isRunActive(run);
  return [
    { name: 'scrape', done: listed, total, complete: listingDone },
    {
      name: 'crawl',
      done: settled,
      total,
      complete: ended || (listingDone && settled >= listed),
    },
    {
      name: 'extract',
      done: extracted,
      total,
      complete: ended || (listingDone && settled >= listed),
    },
  ];
}

export const BAR_WIDTH = 24;

/** `[██████░░░░]`: the share done; an unknown total draws an empty bar. */
export function bar(done: number, total: number | null, width = BAR_WIDTH): string {
  const share = total === null ? 0 : total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(share * width);
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

function stageCounts(stage: StageProgress): string {
  if (stage.name === 'scrape') {
    return stage.complete ? `${stage.done} listed` : `${stage.done} found, listing…`;
  }
  if (stage.total === null) return `${stage.done}`;
  const percent = stage.total === 0 ? 100 : Math.floor((stage.done / stage.total) * 100);
  return `${stage.done}/${stage.total}  ${percent}%`;
}

function seconds(run: Run, now: number): string {
  if (!run.started_at) return '';
  const end = run.finished_at ? Date.parse(run.finished_at) : now;
  return `${((end - Date.parse(run.started_at)) / 1000).toFixed(1)} s`;
}

function header(run: Run, now: number): string {
  const parts = [`run ${run.run_id}`, run.site_name, run.status, seconds(run, now)];
  return parts.filter(Boolean).join(' · ');
}

/** The lines a terminal shows for a run: a header, then one bar per stage. */
export function renderBars(run: Run, now = Date.now()): string[] {
  const stages = runStages(run);
  const errors = run.errors_count > 0 ? `  ${run.errors_count} errors` : '';
  return [
    header(run, now),
    ...stages.map(
      (stage) =>
        `  ${stage.name.padEnd(8)} ${bar(stage.done, stage.total)}  ${stageCounts(stage)}${
          stage.name === 'extract' ? errors : ''
        }`,
    ),
  ];
}

/** One line of progress, for logs and pipes: printed again only when it changes. */
export function renderLine(run: Run): string {
  const [scrape, crawl, extract] = runStages(run) as [StageProgress, StageProgress, StageProgress];
  const of = (stage: StageProgress) =>
    stage.total === null ? `${stage.done}` : `${stage.done}/${stage.total}`;
  const listing = scrape.complete ? `${scrape.done} listed` : `${scrape.done} found (listing)`;
  return `${run.run_id} ${run.status}: scrape ${listing}, crawl ${of(crawl)}, extract ${of(
    extract,
  )}, ${run.errors_count} errors`;
}

/** How a finished run reads: its outcome, duration and counts. */
export function renderSummary(run: Run, now = Date.now()): string {
  const took = seconds(run, now);
  const counts = `${run.ready_count} ready, ${run.skipped_count} skipped, ${run.errors_count} errors, ${run.expired_count} expired`;
  const message = run.message ? `\n  ${run.message}` : '';
  return `run ${run.run_id} ${run.status}${took ? ` in ${took}` : ''}: ${counts}${message}`;
}

/** The CLI's exit status for a run that has ended. */
export function runExitCode(run: Pick<Run, 'status'>): number {
  switch (run.status) {
    case 'succeeded':
      return exitCodes.ok;
    case 'partial':
      return exitCodes.partial;
    case 'cancelled':
      return exitCodes.cancelled;
    default:
      return exitCodes.failed;
  }
}

/**
 * Draws a run's progress as it changes. On a terminal the bars are redrawn in place (the cursor
 * moved up over the previous frame, each line cleared); anywhere else one line is printed each
 * time the progress changes, so a log or a pipe gets a readable history.
 */
export class ProgressView {
  private drawnLines = 0;
  private lastLine: string | undefined;

  constructor(private readonly stream: OutputStream) {}

  get isTerminal(): boolean {
    return this.stream.isTTY === true;
  }

  update(run: Run, now = Date.now()): void {
    if (!this.isTerminal) {
      const line = renderLine(run);
      if (line !== this.lastLine) this.stream.write(`${line}\n`);
      this.lastLine = line;
      return;
    }
    const width = this.stream.columns ?? 80;
    const lines = renderBars(run, now).map((line) => line.slice(0, Math.max(20, width - 1)));
    const up = this.drawnLines > 0 ? `\x1b[${this.drawnLines}F` : '';
    this.stream.write(up + lines.map((line) => `\x1b[2K${line}\n`).join(''));
    this.drawnLines = lines.length;
  }
}
