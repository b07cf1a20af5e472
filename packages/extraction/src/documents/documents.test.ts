import fs from 'node:fs';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  buildDocx,
  buildDocxZipBomb,
  buildEncryptedPdf,
  buildImagePdf,
  buildPdf,
  buildPdfFlateBomb,
  buildPng,
  buildZip,
  readProcessMemory,
  recordOutgoingConnections,
  startCanary,
  type CanaryListener,
} from '@gleaner/testing';
import mammoth from 'mammoth';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  defaultDocumentLimits,
  detectDocumentFormat,
  DocumentExtractionError,
  extractDocument,
  type DocumentErrorType,
} from './index.js';

/** Whitespace-insensitive text, for comparing what pdf.js lays out with what was drawn. */
const words = (text: string) => text.split(/\s+/).filter(Boolean).join(' ');

async function failure(promise: Promise<unknown>): Promise<DocumentExtractionError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DocumentExtractionError);
  return error as DocumentExtractionError;
}

function expectType(error: DocumentExtractionError, errorType: DocumentErrorType) {
  expect(error.errorType).toBe(errorType);
  expect(error.retryClass).toBe(
    errorType === 'corruption' || errorType === 'unsupported' ? 'permanent' : 'transient',
  );
}

const latin1 = (...parts: (string | number[])[]) =>
  Uint8Array.from(
    parts.flatMap((part) =>
      typeof part === 'string' ? [...part].map((char) => char.charCodeAt(0)) : part,
    ),
  );

describe('detectDocumentFormat', () => {
  it('goes by the bytes first and the hints second', async () => {
    const pdf = (await buildPdf()).bytes;
    const docx = (await buildDocx()).bytes;
    const otherZip = buildZip([
      { name: 'xl/workbook.xml', data: new TextEncoder().encode('<x/>') },
    ]);
    const html = new TextEncoder().encode('<!DOCTYPE html><html><body>x</body></html>');
    const binary = Uint8Array.from({ length: 512 }, (_, index) => (index * 7) % 32);

    expect(detectDocumentFormat(pdf, { filename: 'cv.docx' })).toBe('pdf');
    expect(detectDocumentFormat(docx, { mediaType: 'application/pdf' })).toBe('docx');
    expect(detectDocumentFormat(html)).toBe('html');
    expect(detectDocumentFormat(new TextEncoder().encode('plain words'))).toBe('text');
    expect(
      detectDocumentFormat(new TextEncoder().encode('a <b>fragment'), { filename: 'x.htm' }),
    ).toBe('html');
    expect(detectDocumentFormat(buildPng(4, 4), { mediaType: 'application/pdf' })).toBeNull();
    expect(detectDocumentFormat(otherZip)).toBeNull();
    expect(detectDocumentFormat(otherZip, { filename: 'cv.docx' })).toBe('docx');
    expect(detectDocumentFormat(binary)).toBeNull();
    expect(detectDocumentFormat(binary, { mediaType: 'application/pdf; x=y' })).toBe('pdf');
  });
});

describe('PDF', () => {
  it('reads the text of every page, the page count and the title', async () => {
    const { bytes, pageTexts } = await buildPdf({
      pages: 3,
      wordsPerPage: 40,
      seed: 7,
      title: 'Curriculum Vitae',
    });
    const document = await extractDocument(bytes, { filename: 'cv.pdf' });
    expect(document).toMatchObject({
      format: 'pdf',
      pageCount: 3,
      title: 'Curriculum Vitae',
      truncated: false,
    });
    const pages = document.text.split('\n\n');
    expect(pages.map(words)).toEqual(pageTexts.map(words));
    expect(document.textChars).toBe(document.text.length);
  });

  it('reads at most maxPages pages and says the text is truncated', async () => {
    const { bytes, pageTexts } = await buildPdf({ pages: 5, wordsPerPage: 12, seed: 3 });
    const document = await extractDocument(bytes, {}, { ...defaultDocumentLimits, maxPages: 2 });
    expect(document.pageCount).toBe(5);
    expect(document.truncated).toBe(true);
    expect(document.text.split('\n\n').map(words)).toEqual(pageTexts.slice(0, 2).map(words));
  });

  it('cuts the text at maxTextChars', async () => {
    const { bytes } = await buildPdf({ pages: 2, wordsPerPage: 200 });
    const document = await extractDocument(
      bytes,
      {},
      { ...defaultDocumentLimits, maxTextChars: 100 },
    );
    expect(document.text).toHaveLength(100);
    expect(document.textChars).toBe(100);
    expect(document.truncated).toBe(true);
  });

  it('reports a scan (images, no text layer) as needing OCR: extractor_missing', async () => {
    const error = await failure(extractDocument(await buildImagePdf({ pages: 2 })));
    expectType(error, 'extractor_missing');
    expect(error.code).toBe('DOCUMENT_EXTRACTOR_MISSING');
    expect(error.message).toMatch(/needs OCR/);
  });

  it('reports a password-protected PDF as unsupported', async () => {
    const error = await failure(extractDocument(buildEncryptedPdf()));
    expectType(error, 'unsupported');
    expect(error.code).toBe('DOCUMENT_UNSUPPORTED');
    expect(error.message).toMatch(/password-protected/);
  });

  it('reports a truncated or garbage PDF as corruption', async () => {
    const { bytes } = await buildPdf({ pages: 2 });
    for (const broken of [
      bytes.subarray(0, Math.floor(bytes.length * 0.6)),
      new TextEncoder().encode('%PDF-1.7\nnot really a pdf at all'),
    ]) {
      const error = await failure(extractDocument(broken));
      expectType(error, 'corruption');
      expect(error.code).toBe('DOCUMENT_CORRUPT');
    }
  });

  it('reports a PDF whose streams inflate past maxDecompressedBytes as corruption, quickly and holding little', async () => {
    const bomb = buildPdfFlateBomb({ inflatedBytes: 1024 * 1024 * 1024 });
    expect(bomb.byteLength).toBeLessThan(2 * 1024 * 1024);
    writeFileSync('/proc/self/clear_refs', '5'); // peak RSS from here on (see the DOCX bomb)
    const before = await readProcessMemory(process.pid);
    const started = performance.now();
    const error = await failure(extractDocument(bomb));
    const elapsed = performance.now() - started;
    const after = await readProcessMemory(process.pid);
    expectType(error, 'corruption');
    expect(error.message).toMatch(/streams decompress past 104857600 bytes/);
    expect(elapsed).toBeLessThan(5_000);
    // What it holds is bounded by the limit it enforces, not by the gigabyte the file inflates to:
    // 48–51 MB here alone, 66–89 MB on a loaded CI machine (the worker's other garbage counts too).
    const limit = defaultDocumentLimits.maxDecompressedBytes;
    expect(after.peakRssBytes - before.rssBytes).toBeLessThan(limit + 32 * 1024 * 1024);
    // Under the limit the same kind of file is read, as the blank page it is.
    const small = buildPdfFlateBomb({ inflatedBytes: 2 * 1024 * 1024 });
    expect(await extractDocument(small)).toMatchObject({ format: 'pdf', text: '', pageCount: 1 });
  });

  it('reads a PDF without fetching or reading anything (its standard font is not embedded)', async () => {
    const canary = await startCanary();
    const recorder = recordOutgoingConnections();
    const readFile = vi.spyOn(fs.promises, 'readFile');
    try {
      const { bytes, pageTexts } = await buildPdf({ pages: 1, seed: 11 });
      const document = await extractDocument(bytes);
      expect(words(document.text)).toBe(words(pageTexts[0]!));
      expect(readFile).not.toHaveBeenCalled();
      expect(recorder.attempts).toEqual([]);
      expect(canary.connections).toEqual([]);
    } finally {
      readFile.mockRestore();
      recorder.stop();
      await canary.close();
    }
  });
});

describe('DOCX', () => {
  it('reads the paragraphs, the title and the page count Word saved', async () => {
    const { bytes, paragraphs } = await buildDocx({
      paragraphs: 4,
      seed: 5,
      title: 'Cover letter',
      pages: 2,
    });
    const document = await extractDocument(bytes, { filename: 'letter.docx' });
    expect(document).toMatchObject({
      format: 'docx',
      title: 'Cover letter',
      pageCount: 2,
      truncated: false,
    });
    expect(document.text).toBe(paragraphs.join('\n\n'));
  });

  it('has no page count when docProps/app.xml has none', async () => {
    const document = await extractDocument((await buildDocx({ paragraphs: 1 })).bytes);
    expect(document.pageCount).toBeNull();
    expect(document.title).toBeNull();
  });

  describe('zip bombs fail as corruption before mammoth sees them', () => {
    let scratch: string;
    beforeAll(() => {
      scratch = mkdtempSync(path.join(tmpdir(), 'gleaner-docx-'));
    });
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));

    it('one entry inflating to 1 GiB: quickly, holding a few MiB at most', async () => {
      const bomb = await buildDocxZipBomb({ inflatedBytes: 1024 * 1024 * 1024 });
      expect(bomb.byteLength).toBeLessThan(2 * 1024 * 1024);
      // Peak RSS from here on (Linux: writing 5 to clear_refs resets VmHWM to the current RSS).
      writeFileSync('/proc/self/clear_refs', '5');
      const before = await readProcessMemory(process.pid);
      const started = performance.now();
      const error = await failure(extractDocument(bomb, { filename: 'cv.docx' }));
      const elapsed = performance.now() - started;
      const after = await readProcessMemory(process.pid);
      expectType(error, 'corruption');
      expect(error.message).toMatch(/decompresses past 104857600 bytes/);
      // Stopped at the 100 MiB limit: a tenth of the bomb's inflation, not all of it.
      expect(elapsed).toBeLessThan(5_000);
      // Inflating the entry whole would hold 1 GiB; counting chunks holds ~8 MiB at a time.
      // 48–51 MB here alone, 66 once on a loaded CI machine: far from the gigabyte it inflates to.
      expect(after.peakRssBytes - before.rssBytes).toBeLessThan(80 * 1024 * 1024);
    });

    it('central-directory entries sharing one compressed entry', async () => {
      const bomb = await buildDocxZipBomb({
        inflatedBytes: 300 * 1024 * 1024,
        kind: 'overlapping',
      });
      expect(bomb.byteLength).toBeLessThan(200 * 1024);
      const error = await failure(extractDocument(bomb));
      expectType(error, 'corruption');
      expect(error.message).toMatch(/decompresses past/);
    });

    it('and a small limit applies to an ordinary DOCX too', async () => {
      const { bytes } = await buildDocx({ paragraphs: 50 });
      const limits = { ...defaultDocumentLimits, maxDecompressedBytes: 4096 };
      expectType(await failure(extractDocument(bytes, {}, limits)), 'corruption');
    });
  });

  it('reports a zip without word/document.xml as corruption when it claims to be a DOCX, else unsupported', async () => {
    const zip = buildZip([{ name: 'content.xml', data: new TextEncoder().encode('<office/>') }]);
    expectType(await failure(extractDocument(zip, { filename: 'cv.docx' })), 'corruption');
    expectType(await failure(extractDocument(zip, { filename: 'cv.odt' })), 'unsupported');
  });

  describe('a DOCX linking an external image', () => {
    let canary: CanaryListener;
    let scratch: string;
    beforeAll(async () => {
      canary = await startCanary();
      scratch = mkdtempSync(path.join(tmpdir(), 'gleaner-docx-'));
    });
    afterAll(async () => {
      await canary.close();
      rmSync(scratch, { recursive: true, force: true });
    });
    afterEach(() => vi.restoreAllMocks());

    it('is read without opening the linked file or connecting to the linked URL', async () => {
      const secret = path.join(scratch, 'secret.png');
      writeFileSync(secret, buildPng(2, 2));
      const { bytes, paragraphs } = await buildDocx({
        paragraphs: 2,
        seed: 9,
        externalImageTargets: [
          `http://127.0.0.1:${canary.port}/tracker.png`,
          secret,
          `file://${secret}`,
        ],
      });
      // The fixture really links: mammoth with external access on opens the file.
      const readFile = vi.spyOn(fs.promises, 'readFile');
      await mammoth.convertToHtml({ buffer: Buffer.from(bytes) }, { externalFileAccess: true });
      expect(readFile.mock.calls.map(([file]) => (typeof file === 'string' ? file : ''))).toContain(
        secret,
      );
      readFile.mockClear();

      const recorder = recordOutgoingConnections();
      try {
        const document = await extractDocument(bytes, { filename: 'cv.docx' });
        expect(document.text).toBe(paragraphs.join('\n\n'));
        expect(readFile).not.toHaveBeenCalled();
        expect(recorder.attempts).toEqual([]);
        expect(canary.connections).toEqual([]);
      } finally {
        recorder.stop();
      }
    });
  });
});

describe('HTML', () => {
  it('keeps scripts and styles out of the text; the title is <title>', async () => {
    const html = `<!doctype html><html><head><title>Ana Silva &ndash; CV</title>
      <style>body { color: red }</style><script>window.track('head')</script></head>
      <body><h1>Ana Silva</h1><p>Nurse &amp; midwife</p>
      <script type="text/javascript">var secret = "</p>not text";</script>
      <noscript>enable js</noscript><ul><li>Triage</li><li>Night shifts</li></ul></body></html>`;
    const document = await extractDocument(new TextEncoder().encode(html));
    expect(document).toMatchObject({ format: 'html', title: 'Ana Silva – CV', pageCount: null });
    expect(document.text).toBe('Ana Silva\nNurse & midwife\nTriage\nNight shifts');
  });

  it('takes the first <h1> when there is no <title>', async () => {
    const html = '<html><body><h1>Références</h1><h1>Second</h1><p>Texte</p></body></html>';
    const document = await extractDocument(new TextEncoder().encode(html));
    expect(document.title).toBe('Références');
  });
});

describe('text', () => {
  it('reads windows-1252 bytes (é, ü, €, curly quotes) when they are not UTF-8', async () => {
    const bytes = latin1('Caf', [0xe9], ' M', [0xfc], 'nchen ', [0x80], '5 ', [0x93], 'ok', [0x94]);
    const document = await extractDocument(bytes, { filename: 'notes.txt' });
    expect(document).toMatchObject({ format: 'text', text: 'Café München €5 “ok”', title: null });
  });

  it('reads UTF-8, and UTF-16 with a byte-order mark', async () => {
    expect((await extractDocument(new TextEncoder().encode('Grüße, €'))).text).toBe('Grüße, €');
    const utf16 = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from('Zoë\r\nline two', 'utf16le'),
    ]);
    expect((await extractDocument(utf16)).text).toBe('Zoë\nline two');
  });

  it('removes NUL characters', async () => {
    // One stray NUL in a line of text (a NUL-padded field from some exporter), not binary.
    const line = ' Silva, nurse in Lisbon since 2019.';
    const document = await extractDocument(latin1('Name: Ana', [0], line));
    expect(document.text).toBe(`Name: Ana${line}`);
    expect(document.text).not.toContain('\0');
  });
});

describe('what is not read', () => {
  it('reports images and unknown binary as unsupported', async () => {
    const png = await failure(extractDocument(buildPng(8, 8), { filename: 'cv.pdf' }));
    expectType(png, 'unsupported');
    expect(png.message).toMatch(/PNG image/);
    const binary = Uint8Array.from({ length: 4096 }, (_, index) => (index * 31) % 256);
    expectType(await failure(extractDocument(binary)), 'unsupported');
  });

  it('reports an empty document as corruption and an oversized one as unsupported', async () => {
    expectType(await failure(extractDocument(new Uint8Array(0))), 'corruption');
    const big = await failure(
      extractDocument(
        new Uint8Array(2048).fill(0x61),
        {},
        { ...defaultDocumentLimits, maxBytes: 1024 },
      ),
    );
    expectType(big, 'unsupported');
    expect(big.code).toBe('DOCUMENT_TOO_LARGE');
  });
});
