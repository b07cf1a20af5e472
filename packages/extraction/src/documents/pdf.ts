/**
 * PDF text with pdf.js (unpdf's serverless build, pdf.js 6.1), in the caller's thread: pdf.js's
 * own "worker" is a fake one in Node, so the parse is as interruptible as the thread it runs in
 * (the parser pool's).
 */
import { getResolvedPDFJS } from 'unpdf';
import type * as PdfJs from 'unpdf/pdfjs';
import { DocumentExtractionError } from './errors.js';
import { inflateInChunks } from './inflate.js';
import { tidyText } from './text.js';

export interface PdfLimits {
  maxPages: number;
  maxTextChars: number;
  /** Total bytes the PDF's Flate streams (images aside) may inflate to. */
  maxDecompressedBytes: number;
}

export interface PdfText {
  text: string;
  title: string | null;
  pageCount: number;
  /** Pages past `maxPages`, or past the point where the text reached `maxTextChars`, not read. */
  pagesSkipped: boolean;
}

type DocumentInitParameters = NonNullable<Parameters<typeof PdfJs.getDocument>[0]>;

/** pdf.js's PasswordException codes. */
const NEED_PASSWORD = 1;
const INCORRECT_PASSWORD = 2;

/** How many pages of a PDF with no text at all are looked at for images before giving up. */
const PAGES_CHECKED_FOR_IMAGES = 5;

/**
 * Options that keep pdf.js to the bytes it is given. It fetches only through a URL it is given:
 * the document (`url`, `range`; we pass `data`) and its helper files (`cMapUrl`,
 * `standardFontDataUrl`, `wasmUrl`, `iccUrl`; none set, so nothing is fetched or read from
 * disk: text from a non-embedded standard font or a predefined CJK CMap is read without those
 * files, glyph widths aside; what it cannot map it leaves out). No fonts are loaded into a page
 * (`disableFontFace`), no system fonts looked up, no OffscreenCanvas or ImageDecoder used.
 *
 * `isEvalSupported: false` is what pdf.js 4 needed to keep font programs out of `new Function`
 * (CVE-2024-4367). pdf.js 6 no longer has that code path or the option, so it is ignored; it stays
 * here so that a pdf.js build which still has it (`definePDFJSModule`) gets it off.
 */
const SAFE_OPTIONS: DocumentInitParameters & { isEvalSupported: false } = {
  isEvalSupported: false,
  useSystemFonts: false,
  disableFontFace: true,
  useWorkerFetch: false,
  isOffscreenCanvasSupported: false,
  isImageDecoderSupported: false,
  enableXfa: false,
  disableAutoFetch: true,
  disableStream: true,
  disableRange: true,
  // Errors only: pdf.js warns on every non-embedded font, and a thread's console is the process's.
  verbosity: 0,
  // Images are decoded only to tell a scan from blank pages, and an image's decoded size is
  // bounded by its dimensions: 50 megapixels is an A4 page scanned at 600 dpi, with room.
  maxImageSize: 50_000_000,
};

/**
 * A Flate stream inside a PDF is a zip bomb like any other: a 260 KB PDF whose page content
 * inflates to 256 MiB took pdf.js 5 s and 750 MB of memory (typed arrays, outside the thread's
 * heap cap) to read as an empty page. pdf.js has no limit of its own, so before it sees the
 * file, every stream whose dictionary names /FlateDecode is inflated here, a chunk at a time,
 * counting the output against `maxInflatedBytes`. Image streams are left out: pdf.js reads an
 * image only up to the size its dimensions give (and `maxImageSize` bounds those). A stream
 * that does not inflate (encrypted, another filter first, damaged) is left to pdf.js: a bomb
 * in an encrypted PDF is bounded only by the pool's timeout.
 */
export function checkFlateStreams(bytes: Uint8Array, maxInflatedBytes: number): void {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  const keyword = /stream(?:\r\n|\n|\r)/g;
  let total = 0;
  const count = (chunk: Uint8Array) => {
    total += chunk.byteLength;
    if (total > maxInflatedBytes)
      throw new DocumentExtractionError(
        'corruption',
        `the PDF's streams decompress past ${maxInflatedBytes} bytes`,
      );
  };
  for (let match = keyword.exec(text); match !== null; match = keyword.exec(text)) {
    if (text.startsWith('end', match.index - 3)) continue;
    const start = match.index + match[0].length;
    const endstream = text.indexOf('endstream', start);
    const end = endstream === -1 ? text.length : endstream;
    keyword.lastIndex = end;
    // The stream's dictionary: what follows the last `obj` keyword, within 4 KiB.
    const head = text.slice(Math.max(0, match.index - 4096), match.index);
    const dictionary = head.slice(head.lastIndexOf('obj') + 1);
    if (!dictionary.includes('/FlateDecode') || /\/Subtype\s*\/Image\b/.test(dictionary)) continue;
    // FlateDecode is zlib: a 2-byte header (method 8) before the raw DEFLATE data.
    const skip = ((bytes[start] ?? 0) & 0x0f) === 8 ? 2 : 0;
    try {
      inflateInChunks(bytes.subarray(start + skip, end), count);
    } catch (error) {
      if (error instanceof DocumentExtractionError) throw error;
      // Counted as far as it inflated; whether the stream is usable is pdf.js's call.
    }
  }
}

function errorName(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'name' in error ? error.name : undefined;
}

/** pdf.js's failure to open a document, in our terms. */
function openError(error: unknown): DocumentExtractionError {
  const name = errorName(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (name === 'PasswordException' && (code === NEED_PASSWORD || code === INCORRECT_PASSWORD))
    return new DocumentExtractionError(
      'unsupported',
      'the PDF is password-protected: it cannot be read without its password',
      { cause: error },
    );
  const detail = error instanceof Error ? error.message : String(error);
  return new DocumentExtractionError('corruption', `the PDF cannot be opened: ${detail}`, {
    cause: error,
  });
}

interface TextItemLike {
  str?: unknown;
  hasEOL?: unknown;
}

/** A page's text items joined as pdf.js lays them out: `hasEOL` ends a line. */
function pageText(items: readonly unknown[]): string {
  let text = '';
  for (const item of items as TextItemLike[]) {
    if (typeof item.str === 'string') text += item.str;
    if (item.hasEOL === true) text += '\n';
  }
  return tidyText(text);
}

/** Whether the page draws an image: a scan, or text that was turned into a picture. */
async function paintsImage(pdf: PdfJs.PDFDocumentProxy, pageNumber: number): Promise<boolean> {
  const { OPS } = await getResolvedPDFJS();
  const imageOps = new Set<number>([
    OPS.paintImageXObject,
    OPS.paintInlineImageXObject,
    OPS.paintImageMaskXObject,
    OPS.paintImageXObjectRepeat,
    OPS.paintImageMaskXObjectRepeat,
    OPS.paintInlineImageXObjectGroup,
    OPS.paintImageMaskXObjectGroup,
  ]);
  const page = await pdf.getPage(pageNumber);
  const operators = await page.getOperatorList();
  return operators.fnArray.some((op) => imageOps.has(op));
}

function infoTitle(info: unknown): string | null {
  const title = (info as { Title?: unknown } | null)?.Title;
  if (typeof title !== 'string') return null;
  const cleaned = title.replaceAll('\0', '').trim();
  return cleaned === '' ? null : cleaned;
}

/**
 * Text of the PDF's pages (at most `maxPages`, and no more once `maxTextChars` is reached),
 * joined with blank lines; the page count; the title from the info dictionary.
 *
 * Throws `unsupported` for a password-protected PDF, `corruption` for one pdf.js cannot open or
 * read or whose streams inflate past `maxDecompressedBytes`, and `extractor_missing` for pages with no text layer at all but images — a scan, which
 * needs OCR, which this deployment does not have. A PDF with neither text nor images (blank
 * pages) is read as empty text.
 */
export async function extractPdf(bytes: Uint8Array, limits: PdfLimits): Promise<PdfText> {
  checkFlateStreams(bytes, limits.maxDecompressedBytes);
  const { getDocument } = await getResolvedPDFJS();
  // pdf.js takes ownership of (transfers) the buffer it is given: hand it a copy.
  const task = getDocument({ ...SAFE_OPTIONS, data: new Uint8Array(bytes) });
  let pdf: PdfJs.PDFDocumentProxy;
  try {
    pdf = await task.promise;
  } catch (error) {
    await task.destroy();
    throw openError(error);
  }
  try {
    const pageCount = pdf.numPages;
    const metadata = await pdf.getMetadata().catch(() => null);
    const title = infoTitle(metadata?.info);
    const pages: string[] = [];
    let chars = 0;
    const lastPage = Math.min(pageCount, limits.maxPages);
    let pagesRead = 0;
    for (let pageNumber = 1; pageNumber <= lastPage && chars <= limits.maxTextChars; pageNumber++) {
      const page = await pdf.getPage(pageNumber);
      const content = await page.getTextContent();
      page.cleanup();
      const text = pageText(content.items);
      pagesRead = pageNumber;
      if (text !== '') {
        pages.push(text);
        chars += text.length + 2;
      }
    }
    if (pages.length === 0 && pageCount > 0) {
      for (
        let pageNumber = 1;
        pageNumber <= Math.min(pagesRead, PAGES_CHECKED_FOR_IMAGES);
        pageNumber++
      ) {
        if (await paintsImage(pdf, pageNumber))
          throw new DocumentExtractionError(
            'extractor_missing',
            'the PDF has no text layer, only images (a scan): reading it needs OCR, which this deployment does not have',
          );
      }
    }
    return { text: pages.join('\n\n'), title, pageCount, pagesSkipped: pagesRead < pageCount };
  } catch (error) {
    if (error instanceof DocumentExtractionError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new DocumentExtractionError('corruption', `the PDF cannot be read: ${detail}`, {
      cause: error,
    });
  } finally {
    await task.destroy();
  }
}
