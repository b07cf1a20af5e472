import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createFixtureCareerSite, type FixtureCareerSite } from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analysePage, readPage, type PageInput, type StoredPageInput } from './analyse-page.js';
import { extractBodyFields } from './body-fields.js';
import {
  createPageAnalyser,
  type PageAnalyser,
  type PageAnalyserOptions,
} from './page-analyser.js';
import { LISTING_CONTENT_TYPE } from './page-fields.js';
import { templateLearnInput } from './template-tasks.js';

/**
 * The page analyser's threads against the event loop: the same analysis for every kind of page,
 * and a thread that dies fails only the pages it held.
 */
const workerRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let site: FixtureCareerSite;
let pages: PageInput[];
const analysers: PageAnalyser[] = [];

function analyser(
  threads: number,
  threadEntry?: string,
  budgets: Pick<PageAnalyserOptions, 'pageBudgetMs' | 'slowPageMs'> = {},
): PageAnalyser {
  const created = createPageAnalyser({
    threads,
    ...(threadEntry ? { threadEntry } : {}),
    ...budgets,
  });
  analysers.push(created);
  return created;
}

const scratch = mkdtempSync(path.join(tmpdir(), 'gleaner-analyser-'));
let modules = 0;

/**
 * A thread module of the test's own: `body` runs with `parentPort`, `analyse(input)` (the build's
 * analysis of an HTML page) and `answer(request, work)` in scope. `answer` does what the real
 * thread does around each page (its progress for the watchdog) and answers with what `work`
 * returns, by default the build's own answer to the request.
 */
function threadModule(body: string): string {
  const dist = (file: string) => pathToFileURL(path.join(workerRoot, 'dist', file)).href;
  const file = path.join(scratch, `thread-${++modules}.mjs`);
  writeFileSync(
    file,
    `import { parentPort, workerData } from 'node:worker_threads';
import { analysePage, readPage } from '${dist('page-analysis/analyse-page.js')}';
import { extractPageFields } from '${dist('page-analysis/page-fields.js')}';
const extract = (each, _body, html) => extractPageFields(each.url, html);
const analyse = (input) => analysePage(input, extract);
const progress = new Int32Array(workerData.progress);
const answer = (request, work = () =>
  request.kind === 'crawl' ? analyse(request.input) : readPage(request.input, extract)) => {
  Atomics.add(progress, 0, 1);
  Atomics.store(progress, 1, request.id);
  try {
    return { id: request.id, result: work() };
  } finally {
    Atomics.store(progress, 1, -1);
  }
};
// Busy for ms milliseconds: a parser caught in a page it is slow on.
const spin = (ms) => {
  const until = Date.now() + ms;
  while (Date.now() < until) {}
};
${body}
`,
  );
  return file;
}

/** A thread whose analysis of a page whose URL ends with /slow-<ms> takes that long first. */
function slowPagesThread(): string {
  return threadModule(`
    parentPort.on('message', (batch) => {
      parentPort.postMessage(batch.map((request) => answer(request, () => {
        const slow = /\\/slow-(\\d+)$/.exec(request.input.url);
        if (slow) spin(Number(slow[1]));
        return analyse(request.input);
      })));
    });
    parentPort.postMessage('ready');`);
}

/** Page `index` of the fixture site, as a page that takes `ms` to analyse (slowPagesThread). */
function slowPage(index: number, ms: number): PageInput {
  return { ...pages[index]!, url: `https://careers.example.com/jobs/slow-${ms}` };
}

function page(body: Buffer | string, contentType = 'text/html; charset=utf-8'): PageInput {
  return {
    body: Buffer.from(body),
    contentType,
    siteKind: 'career-site',
    url: 'https://careers.example.com/jobs/1',
    previous: null,
  };
}

/** The analysis on the event loop, as the reference. */
function inline(input: PageInput) {
  return analysePage(input, (each, body, html) =>
    extractBodyFields({ ...each, body, ...(html === undefined ? {} : { html }) }),
  );
}

/** A page as the extract (fields) or LLM stage (fields and text) reads it from storage. */
function stored(input: PageInput, wantsText: boolean): StoredPageInput {
  const { previous: _previous, ...rest } = input;
  return { ...rest, wantsText };
}

beforeAll(async () => {
  site = await createFixtureCareerSite({ postings: 12, pageBytes: 8000 });
  pages = await Promise.all(
    site.postings().map(async (posting) => {
      const response = await fetch(posting.url);
      return page(Buffer.from(await response.arrayBuffer()));
    }),
  );
});

afterAll(async () => {
  await Promise.all(analysers.map((each) => each.close()));
  await site.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('page analyser', () => {
  it('gives the same analysis in a thread as on the event loop, many pages at once', async () => {
    const threaded = analyser(2);
    const results = await Promise.all(pages.map((input) => threaded.analyse(input)));
    expect(results).toEqual(pages.map((input) => inline(input)));
    for (const [index, result] of results.entries()) {
      expect(result.unchanged).toBe(false);
      expect(result.fields?.title).toBe(site.postings()[index]!.expected.title);
    }
    // Without threads: the same again.
    expect(await analyser(0).analyse(pages[0]!)).toEqual(results[0]);
  });

  it('tells an unchanged page without extracting it, and reports a page with no posting', async () => {
    const threaded = analyser(1);
    const first = await threaded.analyse(pages[0]!);
    const again = await threaded.analyse({
      ...pages[0]!,
      previous: { bodySha256: 'other', textSha256: first.textSha256 },
    });
    expect(again).toEqual({ sha256: first.sha256, textSha256: first.textSha256, unchanged: true });
    const none = await threaded.analyse(page('<html><body><p>No job here.</p></body></html>'));
    expect(none).toMatchObject({ unchanged: false, extractionError: 'page holds no job posting' });
    expect(none.fields).toBeUndefined();
  });

  it('maps ATS payloads on the event loop with their site adapter', async () => {
    const payload = page('{"id": 1}', LISTING_CONTENT_TYPE);
    const result = await analyser(1).analyse({ ...payload, siteKind: 'no-such-kind' });
    expect(result.textSha256).toBeNull();
    expect(result.extractionError).toMatch(/no-such-kind/);
  });

  it('fails the pages of a thread that dies and goes on with a new one', async () => {
    // A thread that answers its first batch and exits on its second.
    const entry = threadModule(`
      let batches = 0;
      parentPort.on('message', (batch) => {
        batches += 1;
        if (batches === 2) process.exit(7);
        parentPort.postMessage(batch.map((request) => answer(request)));
      });`);
    const dying = analyser(1, entry);
    expect(await dying.analyse(pages[0]!)).toEqual(inline(pages[0]!));
    await expect(dying.analyse(pages[1]!)).rejects.toMatchObject({
      code: 'EXTRACT_THREAD_FAILED',
      retryClass: 'transient',
      message: expect.stringContaining('exited with code 7') as unknown,
    });
    expect(await dying.analyse(pages[2]!)).toEqual(inline(pages[2]!));
  });

  it('stops a parse that outlives its signal, and the thread goes on with the other pages', async () => {
    // A thread whose analysis of one page never ends: a parser caught in a pathological page.
    const entry = threadModule(`
      parentPort.on('message', (batch) => {
        parentPort.postMessage(batch.map((request) => answer(request, () => {
          if (request.input.url.endsWith('/endless')) for (;;) {}
          return analyse(request.input);
        })));
      });`);
    const stuck = analyser(1, entry);
    const deadline = new AbortController();
    const endless = stuck.analyse(
      { ...pages[0]!, url: 'https://careers.example.com/endless' },
      deadline.signal,
    );
    // Sent in the same batch, behind the endless page: it waits, it must not fail.
    const behind = stuck.analyse(pages[1]!);
    setTimeout(() => deadline.abort(new Error('job deadline passed')), 300);
    await expect(endless).rejects.toThrow('job deadline passed');
    expect(await behind).toEqual(inline(pages[1]!));
    // Later jobs are served by the replacement thread.
    expect(await stuck.analyse(pages[2]!)).toEqual(inline(pages[2]!));
    expect(await stuck.analyse(pages[3]!, new AbortController().signal)).toEqual(inline(pages[3]!));
  });

  it('refuses a page whose signal has fired already, without a thread', async () => {
    const threaded = analyser(1);
    await expect(
      threaded.analyse(pages[0]!, AbortSignal.abort(new Error('cancelled'))),
    ).rejects.toThrow('cancelled');
    await expect(
      analyser(0).analyse(pages[0]!, AbortSignal.abort(new Error('cancelled'))),
    ).rejects.toThrow('cancelled');
    expect(await threaded.analyse(pages[0]!)).toEqual(inline(pages[0]!));
  });

  it('fails every page, never reading it on the event loop, when its thread module does not load', async () => {
    const broken = analyser(1, threadModule(`throw new Error('broken build');`));
    for (const input of [pages[0]!, pages[1]!])
      await expect(broken.analyse(input)).rejects.toMatchObject({
        code: 'EXTRACT_THREAD_FAILED',
        retryClass: 'transient',
        message: expect.stringContaining('broken build') as unknown,
      });
    await expect(broken.read(stored(pages[2]!, true))).rejects.toMatchObject({
      code: 'EXTRACT_THREAD_FAILED',
    });
  });

  it('reads stored pages in a thread as on the event loop: fields, and text when asked', async () => {
    const threaded = analyser(1);
    const inputs = pages.slice(0, 4).map((input, index) => stored(input, index % 2 === 0));
    const readings = await Promise.all(inputs.map((input) => threaded.read(input)));
    const extractAny = (
      each: Pick<PageInput, 'contentType' | 'siteKind' | 'url'>,
      body: Buffer,
      html: string | undefined,
    ) => extractBodyFields({ ...each, body, ...(html === undefined ? {} : { html }) });
    expect(readings).toEqual(inputs.map((input) => readPage(input, extractAny)));
    expect(readings[0]!.fields?.title).toBe(site.postings()[0]!.expected.title);
    expect(readings[0]!.text).toContain(site.postings()[0]!.expected.title);
    expect(readings[1]!.text).toBeUndefined();
    const none = await threaded.read(stored(page('<p>No job here.</p>'), true));
    expect(none).toEqual({
      text: 'No job here.',
      extractionError: {
        message: 'page holds no job posting',
        code: 'EXTRACT_NOT_A_POSTING',
        retryClass: 'permanent',
      },
    });
  });

  it('fails a page past its budget as permanent, and the pages queued behind it move on', async () => {
    const budget = 4000;
    const slow = analyser(1, slowPagesThread(), { pageBudgetMs: budget, slowPageMs: 200 });
    // Warm: the thread has loaded, so the endless page starts at once.
    expect(await slow.analyse(pages[0]!)).toEqual(inline(pages[0]!));
    const started = performance.now();
    const endless = slow.analyse(slowPage(1, 60_000)).then(
      () => ({ error: undefined, at: performance.now() - started }),
      (error: unknown) => ({ error, at: performance.now() - started }),
    );
    // Sent in the same batch, behind the endless page: a new thread takes them.
    const behind = [2, 3].map((index) =>
      slow
        .analyse(pages[index]!)
        .then((analysis) => ({ analysis, at: performance.now() - started })),
    );
    const [first, second] = await Promise.all(behind);
    expect(first!.analysis).toEqual(inline(pages[2]!));
    expect(second!.analysis).toEqual(inline(pages[3]!));
    const failed = await endless;
    expect(failed).toMatchObject({
      error: {
        code: 'EXTRACT_PAGE_TOO_SLOW',
        retryClass: 'permanent',
        message: `page analysis took longer than ${budget} ms`,
      },
    });
    // The waiting pages did not wait for the budget; the slow page was stopped soon after it.
    expect(Math.max(first!.at, second!.at)).toBeLessThan(failed.at);
    expect(failed.at).toBeGreaterThanOrEqual(budget);
    expect(failed.at).toBeLessThan(budget + 2000);
    expect(await slow.analyse(pages[4]!)).toEqual(inline(pages[4]!));
  });

  it('answers a slow page that ends within its budget, and queues slow pages past the slow lane', async () => {
    const slow = analyser(1, slowPagesThread(), { pageBudgetMs: 1500, slowPageMs: 100 });
    expect(await slow.analyse(pages[0]!)).toEqual(inline(pages[0]!));
    // Slow, but within the budget: answered from the slow lane, not failed.
    const patient = await slow.analyse(slowPage(1, 400));
    expect(patient).toEqual({ ...inline(pages[1]!), fields: expect.anything() as unknown });
    expect(patient.fields?.title).toBe(site.postings()[1]!.expected.title);
    // Two endless pages and one thread: the second waits for the slow lane, then starts over in
    // a thread of its own with a budget of its own.
    const outcomes = await Promise.allSettled([
      slow.analyse(slowPage(2, 60_000)),
      slow.read(stored(slowPage(3, 60_000), true)),
    ]);
    for (const outcome of outcomes)
      expect(outcome).toMatchObject({
        status: 'rejected',
        reason: { code: 'EXTRACT_PAGE_TOO_SLOW' },
      });
    expect(await slow.analyse(pages[5]!)).toEqual(inline(pages[5]!));
  });

  it('refuses work once closed, and closes once', async () => {
    const closing = analyser(1);
    await Promise.all([closing.close(), closing.close()]);
    await expect(closing.analyse(pages[0]!)).rejects.toMatchObject({
      code: 'EXTRACT_THREAD_FAILED',
    });
  });

  it('learns a site template in a thread, reads with it, grounds a label, and tells a misfit', async () => {
    const page = (title: string, team: string, company: string) =>
      Buffer.from(`<html><head><title>${title}</title></head><body><header>Home</header>
<main><h1 class="hd">${title}</h1><div class="m1">${team}</div><div class="m2">${company}</div>
<p>Location: Lisbon, Portugal</p><h2>Responsibilities</h2>
<p>As our ${title} you will work with ${team} on what ${company} ships every week.</p>
<a href="/apply">Apply now</a></main><footer>All rights reserved.</footer></body></html>`);
    const site = [
      page('Data Analyst', 'Payments', 'Initech'),
      page('Backend Engineer', 'Growth', 'Hooli'),
      page('Product Designer', 'Search', 'Globex'),
    ].map((body) => ({ body, contentType: 'text/html' }));
    const threads = analyser(1);
    const { template } = await threads.learn(templateLearnInput(site));
    expect(template).not.toBeNull();
    expect(template!.pages).toBe(3);

    const labelled = await threads.label({
      body: new Uint8Array(site[0]!.body),
      contentType: 'text/html',
      template: template!,
      labels: { company: 'Initech' },
    });
    expect(labelled.grounded).toEqual(['company']);
    const reading = await threads.read({
      body: page('Site Reliability Engineer', 'Platform', 'Umbrella'),
      contentType: 'text/html',
      siteKind: 'career-site',
      url: 'https://example.com/jobs/sre',
      wantsText: false,
      template: labelled.template,
    });
    expect(reading.fields).toMatchObject({
      title: 'Site Reliability Engineer',
      company: 'Umbrella',
      location: 'Lisbon, Portugal',
    });
    expect(reading.templateFit).toMatchObject({ fits: true, stale: false, unread: [] });

    // A page of another design is read as without the template, and says it does not fit.
    const redesign = await threads.read({
      body: Buffer.from(
        `<html><body><section class="opening"><h3 class="t">Technical Writer</h3><ul><li>Remote</li></ul><h4>What you'll do</h4><p>Write the docs our users read every day, with the engineers who build it.</p><button>Apply for this job</button></section></body></html>`,
      ),
      contentType: 'text/html',
      siteKind: 'career-site',
      url: 'https://example.com/jobs/writer',
      wantsText: false,
      template: labelled.template,
    });
    expect(redesign.templateFit?.fits).toBe(false);
  });
});
