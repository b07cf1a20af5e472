import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createFixtureCareerSite, type FixtureCareerSite } from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analysePage, type PageInput } from './analyse-page.js';
import { extractBodyFields } from './body-fields.js';
import { createPageAnalyser, type PageAnalyser } from './page-analyser.js';
import { LISTING_CONTENT_TYPE } from './page-fields.js';

/**
 * The page analyser's threads against the event loop: the same analysis for every kind of page,
 * and a thread that dies fails only the pages it held.
 */
const workerRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let site: FixtureCareerSite;
let pages: PageInput[];
const analysers: PageAnalyser[] = [];

function analyser(threads: number, threadEntry?: string): PageAnalyser {
  const created = createPageAnalyser({ threads, ...(threadEntry ? { threadEntry } : {}) });
  analysers.push(created);
  return created;
}

const scratch = mkdtempSync(path.join(tmpdir(), 'gleaner-analyser-'));
let modules = 0;

/**
 * A thread module of the test's own: `body` runs with `parentPort` and `analyse(input)` (the
 * build's analysis of an HTML page) in scope.
 */
function threadModule(body: string): string {
  const dist = (file: string) => pathToFileURL(path.join(workerRoot, 'dist', file)).href;
  const file = path.join(scratch, `thread-${++modules}.mjs`);
  writeFileSync(
    file,
    `import { parentPort } from 'node:worker_threads';
import { analysePage } from '${dist('page-analysis/analyse-page.js')}';
import { extractPageFields } from '${dist('page-analysis/page-fields.js')}';
const analyse = (input) => analysePage(input, (each, _body, html) => extractPageFields(each.url, html));
${body}
`,
  );
  return file;
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
        parentPort.postMessage(batch.map(({ id, input }) => ({ id, analysis: analyse(input) })));
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
        parentPort.postMessage(batch.map(({ id, input }) => {
          if (input.url.endsWith('/endless')) for (;;) {}
          return { id, analysis: analyse(input) };
        }));
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

  it('analyses on the event loop when its thread module does not load', async () => {
    const broken = analyser(1, threadModule(`throw new Error('broken build');`));
    await expect(broken.analyse(pages[0]!)).rejects.toMatchObject({
      code: 'EXTRACT_THREAD_FAILED',
      message: expect.stringContaining('broken build') as unknown,
    });
    expect(await broken.analyse(pages[1]!)).toEqual(inline(pages[1]!));
  });

  it('refuses work once closed, and closes once', async () => {
    const closing = analyser(1);
    await Promise.all([closing.close(), closing.close()]);
    await expect(closing.analyse(pages[0]!)).rejects.toMatchObject({
      code: 'EXTRACT_THREAD_FAILED',
    });
  });
});
