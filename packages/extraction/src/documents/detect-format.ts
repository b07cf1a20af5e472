/**
 * Which parser a document needs. The bytes decide first, because names and media types are
 * whatever the uploader's machine said (a CV saved as `cv.pdf` that is really a Word file, a
 * browser sending `application/octet-stream` for everything); hints only settle what the bytes
 * leave open.
 */
import { listZipEntries, looksLikeZip } from './zip.js';

export type DocumentFormat = 'pdf' | 'docx' | 'html' | 'text';

export interface DocumentHints {
  /** The media type the document came with, e.g. an upload's `Content-Type`. */
  mediaType?: string;
  filename?: string;
}

const DOCX_MEDIA_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

const MEDIA_TYPES: Record<string, DocumentFormat> = {
  'application/pdf': 'pdf',
  'application/x-pdf': 'pdf',
  [DOCX_MEDIA_TYPE]: 'docx',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/plain': 'text',
  'text/markdown': 'text',
};

const EXTENSIONS: Record<string, DocumentFormat> = {
  pdf: 'pdf',
  docx: 'docx',
  html: 'html',
  htm: 'html',
  xhtml: 'html',
  txt: 'text',
  text: 'text',
  md: 'text',
};

/** The format the hints name, media type first; null when they name none we read. */
export function formatFromHints(hints: DocumentHints | undefined): DocumentFormat | null {
  const mediaType = hints?.mediaType?.split(';')[0]?.trim().toLowerCase();
  const byType = mediaType === undefined ? undefined : MEDIA_TYPES[mediaType];
  if (byType !== undefined) return byType;
  const extension = /\.([a-z0-9]{1,8})$/i.exec(hints?.filename?.trim() ?? '')?.[1]?.toLowerCase();
  return (extension === undefined ? undefined : EXTENSIONS[extension]) ?? null;
}

/** `%PDF-` in the first 1024 bytes, where Acrobat and pdf.js look for it. */
export function hasPdfHeader(bytes: Uint8Array): boolean {
  const limit = Math.min(bytes.byteLength, 1024) - 5;
  for (let index = 0; index <= limit; index++) {
    if (
      bytes[index] === 0x25 &&
      bytes[index + 1] === 0x50 &&
      bytes[index + 2] === 0x44 &&
      bytes[index + 3] === 0x46 &&
      bytes[index + 4] === 0x2d
    )
      return true;
  }
  return false;
}

function startsWith(bytes: Uint8Array, prefix: readonly number[], at = 0): boolean {
  return prefix.every((byte, index) => bytes[at + index] === byte);
}

/**
 * Formats we recognise and do not read. Most are binary and caught by the control-byte check
 * anyway; naming them keeps a PNG called `cv.pdf` from reaching pdf.js and being reported as a
 * broken PDF rather than as the image it is.
 */
export function knownUnsupportedFormat(bytes: Uint8Array): string | null {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47])) return 'a PNG image';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'a JPEG image';
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38])) return 'a GIF image';
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8))
    return 'a WebP image';
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a]))
    return 'a TIFF image';
  if (startsWith(bytes, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]))
    return 'an OLE compound file (a legacy .doc, or a password-protected Office document)';
  if (startsWith(bytes, [0x7b, 0x5c, 0x72, 0x74, 0x66])) return 'an RTF document';
  if (startsWith(bytes, [0x1f, 0x8b])) return 'a gzip archive';
  return null;
}

/** Whether the zip's central directory lists `word/document.xml` (false for a broken zip). */
export function isDocxZip(bytes: Uint8Array): boolean {
  try {
    return listZipEntries(bytes).some((entry) => entry.name === 'word/document.xml');
  } catch {
    return false; // a zip whose directory cannot be read holds no document we can find
  }
}

function hasUnicodeBom(bytes: Uint8Array): boolean {
  return (
    startsWith(bytes, [0xef, 0xbb, 0xbf]) ||
    startsWith(bytes, [0xfe, 0xff]) ||
    startsWith(bytes, [0xff, 0xfe])
  );
}

/**
 * Text, not binary: in the first 8 KiB, at most 1% control bytes (or two, in a short text) other
 * than tab, line breaks, form feed and escape. Git's rule is "any NUL"; a stray NUL in an
 * exported CV should not make it binary, and NULs are dropped from the text anyway. Binary
 * formats run at ~10% control bytes.
 */
export function looksLikeText(bytes: Uint8Array): boolean {
  if (hasUnicodeBom(bytes)) return true;
  const sample = Math.min(bytes.byteLength, 8192);
  let control = 0;
  for (let index = 0; index < sample; index++) {
    const byte = bytes[index]!;
    if (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c)
      if (byte !== 0x1b) control++;
  }
  return control <= Math.max(2, sample / 100);
}

const HTML_START =
  /^(?:\s|<!--[\s\S]*?-->)*(?:<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>]|<meta[\s>]|<title[\s>])/i;

/** A document that starts as an HTML page does (a doctype or a top-level element). */
export function looksLikeHtml(bytes: Uint8Array): boolean {
  const head = new TextDecoder('utf-8')
    .decode(bytes.subarray(0, 1024))
    .replace(/^\ufeff/, '')
    .replaceAll('\0', '');
  return HTML_START.test(head);
}

/**
 * The document's format: magic bytes first (`%PDF-`, a zip holding `word/document.xml`, an HTML
 * start, text), the hints second. Null for anything else — images, other zips, binary — which
 * `extractDocument` reports as `unsupported`. A zip without `word/document.xml` is a DOCX only
 * when the hints say so (and then a broken one); bytes that are neither text nor a format we
 * know are whatever the hints say, so that a PDF whose header was lost fails as a broken PDF.
 */
export function detectDocumentFormat(
  bytes: Uint8Array,
  hints?: DocumentHints,
): DocumentFormat | null {
  const hinted = formatFromHints(hints);
  if (hasPdfHeader(bytes)) return 'pdf';
  if (looksLikeZip(bytes)) return isDocxZip(bytes) || hinted === 'docx' ? 'docx' : null;
  if (knownUnsupportedFormat(bytes) !== null) return null;
  if (bytes.byteLength > 0 && looksLikeText(bytes)) {
    if (looksLikeHtml(bytes) || hinted === 'html') return 'html';
    return 'text';
  }
  return hinted === 'pdf' || hinted === 'docx' ? hinted : null;
}
