import type { Run } from '@gleaner/client';
import { describe, expect, it } from 'vitest';
import { exitCodes } from './output.js';
import {
  bar,
  ProgressView,
  renderBars,
  renderLine,
  renderSummary,
  runExitCode,
  runStages,
} from './progress.js';
import { capture } from './recording-api.test-support.js';

function run(overrides: Partial<Run> = {}): Run {
  return {
    run_id: 'manual_0123456789ab',
    task_id: 'task',
    site_name: 'acme',
    trigger: 'manual',
    status: 'running',
    started_at: '2026-01-01T00:00:00.000Z',
    finished_at: null,
    requested_pages: 0,
    completed_pages: 0,
    errors_count: 0,
    ready_count: 0,
    skipped_count: 0,
    expired_count: 0,
    missing_fields: null,
    requests: null,
    pending_count: 0,
    results_wanted: null,
    search: null,
    listing_complete: false,
    message: null,
    scheduled_for: null,
    created_at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

const at = Date.parse('2026-01-01T00:00:04.200Z');

describe('run stages', () => {
  it('count postings found while the listing runs, with no total yet', () => {
    const stages = runStages(run({ requested_pages: 40, ready_count: 5, pending_count: 35 }));
    expect(stages).toEqual([
      { name: 'scrape', done: 40, total: null, complete: false },
      { name: 'crawl', done: 5, total: null, complete: false },
      { name: 'extract', done: 5, total: null, complete: false },
    ]);
  });

  it('take the listing as done once it covered the site or reached results_wanted', () => {
    const covered = run({ requested_pages: 50, listing_complete: true, ready_count: 20 });
    expect(runStages(covered)[0]).toEqual({ name: 'scrape', done: 50, total: 50, complete: true });
    expect(runStages(covered)[1]).toMatchObject({ done: 20, total: 50, complete: false });
    const capped = run({ requested_pages: 10, results_wanted: 10 });
    expect(runStages(capped)[0]).toMatchObject({ total: 10, complete: true });
  });

  it('part crawl from extract where postings error', () => {
    const stages = runStages(
      run({
        requested_pages: 10,
        listing_complete: true,
        ready_count: 6,
        skipped_count: 1,
        errors_count: 3,
      }),
    );
    expect(stages.map((stage) => [stage.name, stage.done, stage.complete])).toEqual([
      ['scrape', 10, true],
      ['crawl', 10, true],
      ['extract', 7, true],
    ]);
  });

  it('count a cancelled run by what it settled, not by what it left pending', () => {
    const cancelled = run({
      status: 'cancelled',
      requested_pages: 300,
      skipped_count: 30,
      pending_count: 0,
    });
    expect(runStages(cancelled).map((stage) => [stage.done, stage.total, stage.complete])).toEqual([
      [300, 300, true],
      [30, 300, true],
      [30, 300, true],
    ]);
  });
});

describe('rendering', () => {
  it('draws bars by share done, an unknown total as an empty bar', () => {
    expect(bar(0, 10, 10)).toBe('░░░░░░░░░░');
    expect(bar(5, 10, 10)).toBe('█████░░░░░');
    expect(bar(10, 10, 10)).toBe('██████████');
    expect(bar(12, 10, 10)).toBe('██████████');
    expect(bar(0, 0, 10)).toBe('██████████');
    expect(bar(7, null, 10)).toBe('░░░░░░░░░░');
  });

  it('draws a header and one bar per stage', () => {
    const lines = renderBars(
      run({ requested_pages: 200, listing_complete: true, ready_count: 98, errors_count: 2 }),
      at,
    );
    expect(lines).toEqual([
      'run manual_0123456789ab · acme · running · 4.2 s',
      `  scrape   ${'█'.repeat(24)}  200 listed`,
      `  crawl    ${'█'.repeat(12)}${'░'.repeat(12)}  100/200  50%`,
      `  extract  ${'█'.repeat(12)}${'░'.repeat(12)}  98/200  49%  2 errors`,
    ]);
    expect(renderBars(run({ requested_pages: 7 }), at)[1]).toBe(
      `  scrape   ${'░'.repeat(24)}  7 found, listing…`,
    );
  });

  it('writes one line for logs and pipes', () => {
    expect(renderLine(run({ requested_pages: 7 }))).toBe(
      'manual_0123456789ab running: scrape 7 found (listing), crawl 0, extract 0, 0 errors',
    );
    expect(
      renderLine(
        run({ status: 'succeeded', requested_pages: 3, ready_count: 3, listing_complete: true }),
      ),
    ).toBe('manual_0123456789ab succeeded: scrape 3 listed, crawl 3/3, extract 3/3, 0 errors');
  });

  it('sums up an ended run with its message', () => {
    const ended = run({
      status: 'failed',
      finished_at: '2026-01-01T00:00:01.500Z',
      errors_count: 3,
      message: 'listing failed: answered 404',
    });
    expect(renderSummary(ended)).toBe(
      'run manual_0123456789ab failed in 1.5 s: 0 ready, 0 skipped, 3 errors, 0 expired\n  listing failed: answered 404',
    );
  });

  it('gives each outcome its exit status', () => {
    expect(runExitCode({ status: 'succeeded' })).toBe(0);
    expect(runExitCode({ status: 'partial' })).toBe(exitCodes.partial);
    expect(runExitCode({ status: 'failed' })).toBe(exitCodes.failed);
    expect(runExitCode({ status: 'cancelled' })).toBe(exitCodes.cancelled);
    expect(new Set(Object.values(exitCodes)).size).toBe(Object.keys(exitCodes).length);
  });
});

describe('the progress view', () => {
  it('redraws in place on a terminal: up over the last frame, each line cleared', () => {
    const output = capture(true);
    const view = new ProgressView(output.stream);
    view.update(run({ requested_pages: 4 }), at);
    const first = output.text();
    expect(first.startsWith('\x1b[2Krun manual_0123456789ab')).toBe(true);
    expect(first.split('\n')).toHaveLength(5);
    view.update(run({ requested_pages: 4, listing_complete: true, ready_count: 2 }), at);
    const second = output.text().slice(first.length);
    expect(second.startsWith('\x1b[4F\x1b[2K')).toBe(true);
    expect(second).toContain('2/4  50%');
    expect(second.split('\x1b[2K')).toHaveLength(5);
  });

  it('prints a line per change elsewhere, and nothing for a poll that saw none', () => {
    const output = capture(false);
    const view = new ProgressView(output.stream);
    view.update(run({ requested_pages: 4 }), at);
    view.update(run({ requested_pages: 4 }), at + 500);
    view.update(run({ requested_pages: 4, listing_complete: true, ready_count: 1 }), at + 1000);
    expect(output.text()).not.toContain('\x1b');
    expect(output.text().trimEnd().split('\n')).toEqual([
      'manual_0123456789ab running: scrape 4 found (listing), crawl 0, extract 0, 0 errors',
      'manual_0123456789ab running: scrape 4 listed, crawl 1/4, extract 1/4, 0 errors',
    ]);
  });
});
