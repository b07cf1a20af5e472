import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildDocx, buildEncryptedPdf, buildPdf } from '@gleaner/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createDocumentParserPool,
  DocumentExtractionError,
  extractDocument,
  type DocumentParserPool,
  type DocumentParserPoolOptions,
} from './index.js';

/**
 * The parser pool's processes: the same documents as in-process, and a parse that runs too
 * long, is cancelled or runs out of memory is stopped by ending its process, after which the
 * pool goes on working. The processes here run this package's TypeScript sources (through
 * tsx); the build's parser file is the same module compiled.
 */
const pools: DocumentParserPool[] = [];
const scratch = mkdtempSync(path.join(tmpdir(), 'gleaner-parser-pool-'));

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
  rmSync(scratch, { recursive: true, force: true });
});

function pool(options: DocumentParserPoolOptions): DocumentParserPool {
  const created = createDocumentParserPool(options);
  pools.push(created);
  return created;
}

/**
 * A parser module that misbehaves on cue — `spin.txt` loops forever, `slow.txt` takes 400 ms,
 * `hog.txt` allocates until the heap cap kills it — and otherwise answers with the bytes as text, as the real parser
 * would for a text file.
 */
function misbehavingParser(): string {
  const file = path.join(scratch, 'misbehaving.process.mjs');
  writeFileSync(
    file,
    `process.on('disconnect', () => process.exit(0));
process.on('message', ({ id, bytes, hints }) => {
  if (hints?.filename === 'spin.txt') for (;;);
  if (hints?.filename === 'slow.txt') for (const until = Date.now() + 400; Date.now() < until; );
  if (hints?.filename === 'hog.txt') {
    const hoard = [];
    for (;;) hoard.push(Array.from({ length: 100000 }, (_, index) => ({ index })));
  }
  const text = new TextDecoder().decode(bytes);
  process.send({ id, document: { format: 'text', text, title: null, pageCount: null, textChars: text.length, truncated: false } });
});
`,
  );
  return file;
}

const text = (value: string) => new TextEncoder().encode(value);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('the real parser processes', () => {
  it('give the same documents as extractDocument, errors included', async () => {
    const parsers = pool({ processes: 2, timeoutMs: 30_000 });
    const pdf = (await buildPdf({ pages: 3, seed: 2, title: 'CV' })).bytes;
    const docx = (await buildDocx({ paragraphs: 3, seed: 4, title: 'Letter', pages: 1 })).bytes;
    const html = text(
      '<html><head><title>T</title><script>x()</script></head><body><p>Hi</p></body></html>',
    );
    for (const bytes of [pdf, docx, html]) {
      expect(await parsers.extract(bytes)).toEqual(await extractDocument(bytes));
    }
    const encrypted = await rejection(parsers.extract(buildEncryptedPdf()));
    expect(encrypted).toBeInstanceOf(DocumentExtractionError);
    expect(encrypted).toMatchObject({
      errorType: 'unsupported',
      code: 'DOCUMENT_UNSUPPORTED',
      retryClass: 'permanent',
    });
  });

  it('queue documents while every parser is busy, and leave the caller its bytes', async () => {
    const parsers = pool({ processes: 1, timeoutMs: 30_000 });
    const inputs = await Promise.all(
      [1, 2, 3, 4].map(async (seed) => (await buildPdf({ pages: 2, seed })).bytes),
    );
    const copies = inputs.map((bytes) => Uint8Array.from(bytes));
    const documents = await Promise.all(inputs.map((bytes) => parsers.extract(bytes)));
    expect(documents.map((each) => each.pageCount)).toEqual([2, 2, 2, 2]);
    expect(new Set(documents.map((each) => each.text)).size).toBe(4);
    expect(inputs).toEqual(copies); // sent to the parser as a copy, not the caller's buffer
  });

  it('stop a large PDF at its timeout, then parse the next document', async () => {
    const parsers = pool({ processes: 1, timeoutMs: 30_000 });
    const small = await buildPdf({ pages: 1, seed: 5 });
    await parsers.extract(small.bytes); // pdf.js loaded: the timeout below is spent parsing
    // 400 pages of 400 words: seconds of pdf.js work, a legitimate document past its budget.
    const large = (await buildPdf({ pages: 400, wordsPerPage: 400, seed: 6 })).bytes;
    const started = performance.now();
    const error = await rejection(parsers.extract(large, {}, { timeoutMs: 100 }));
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(error).toBeInstanceOf(DocumentExtractionError);
    expect(error).toMatchObject({
      errorType: 'timeout',
      code: 'DOCUMENT_TIMEOUT',
      retryClass: 'transient',
    });
    expect((await parsers.extract(small.bytes)).pageCount).toBe(1);
  }, 60_000);
});

describe('a parser that will not finish', () => {
  it('is killed at the timeout and replaced; queued documents go to the replacement', async () => {
    const parsers = pool({ processes: 1, timeoutMs: 300, entry: misbehavingParser() });
    const started = performance.now();
    const spinning = rejection(parsers.extract(text('x'), { filename: 'spin.txt' }));
    // Its own time budget: it goes to the replacement as that process starts, and a process
    // loading its modules on a busy machine can take longer than the spinning one's 300 ms.
    const queued = parsers.extract(text('after the spin'), {}, { timeoutMs: 30_000 });
    const error = await spinning;
    expect(error).toMatchObject({ errorType: 'timeout', code: 'DOCUMENT_TIMEOUT' });
    expect(performance.now() - started).toBeLessThan(3_000);
    // The spinning parser can never answer: this comes from the one that replaced it.
    expect((await queued).text).toBe('after the spin');
  });

  it('is killed when the signal aborts, with the signal reason', async () => {
    const parsers = pool({ processes: 1, timeoutMs: 60_000, entry: misbehavingParser() });
    const controller = new AbortController();
    const reason = new Error('job cancelled');
    const spinning = rejection(
      parsers.extract(text('x'), { filename: 'spin.txt' }, { signal: controller.signal }),
    );
    const queuedController = new AbortController();
    const queued = rejection(
      parsers.extract(text('never sent'), {}, { signal: queuedController.signal }),
    );
    queuedController.abort(new Error('queued job cancelled'));
    expect(await queued).toMatchObject({ message: 'queued job cancelled' });
    setTimeout(() => controller.abort(reason), 100);
    expect(await spinning).toBe(reason);
    expect((await parsers.extract(text('still working'))).text).toBe('still working');
    const aborted = AbortSignal.abort(new Error('already'));
    expect(await rejection(parsers.extract(text('x'), {}, { signal: aborted }))).toMatchObject({
      message: 'already',
    });
  });

  it('dies at its heap cap: corruption, and the pool goes on', async () => {
    const parsers = pool({
      processes: 1,
      timeoutMs: 60_000,
      maxHeapMb: 32,
      entry: misbehavingParser(),
    });
    const error = await rejection(parsers.extract(text('x'), { filename: 'hog.txt' }));
    expect(error).toBeInstanceOf(DocumentExtractionError);
    expect(error).toMatchObject({ errorType: 'corruption', retryClass: 'permanent' });
    expect((error as Error).message).toMatch(/exceeded the parser's memory limit/);
    expect((await parsers.extract(text('after the hog'))).text).toBe('after the hog');
  });
});

describe('a document sent ahead to a busy parser', () => {
  it('gets its full time once its turn comes, not from when it was sent', async () => {
    const parsers = pool({ processes: 1, timeoutMs: 300, entry: misbehavingParser() });
    const slow = parsers.extract(text('slow'), { filename: 'slow.txt' }, { timeoutMs: 5_000 });
    const next = parsers.extract(text('next'), {}, { timeoutMs: 300 });
    expect((await slow).text).toBe('slow');
    expect((await next).text).toBe('next');
  });

  it('is rejected at once when its signal aborts, and the parser goes on', async () => {
    const parsers = pool({ processes: 1, timeoutMs: 5_000, entry: misbehavingParser() });
    const slow = parsers.extract(text('slow'), { filename: 'slow.txt' });
    const controller = new AbortController();
    const ahead = rejection(parsers.extract(text('ahead'), {}, { signal: controller.signal }));
    const after = parsers.extract(text('after'));
    const reason = new Error('job cancelled');
    controller.abort(reason);
    expect(await ahead).toBe(reason);
    expect((await slow).text).toBe('slow');
    expect((await after).text).toBe('after');
  });
});

describe('close', () => {
  it('rejects what is queued or running, then every new document; twice is fine', async () => {
    const parsers = createDocumentParserPool({
      processes: 1,
      timeoutMs: 60_000,
      entry: misbehavingParser(),
    });
    const running = rejection(parsers.extract(text('x'), { filename: 'spin.txt' }));
    const queued = rejection(parsers.extract(text('y')));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await Promise.all([parsers.close(), parsers.close()]);
    for (const error of [await running, await queued, await rejection(parsers.extract(text('z')))])
      expect(error).toMatchObject({ code: 'DOCUMENT_PARSER_CLOSED', retryClass: 'transient' });
  });
});
