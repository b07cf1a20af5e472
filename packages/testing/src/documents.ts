/**
 * Documents made on the spot for tests and benchmarks: PDFs (pdf-lib), DOCX files (docx), and the
 * hostile ones no library writes — a password-protected PDF, a scan without text, a DOCX linking
 * an external image, zip bombs — with small hand-written bytes. Every builder is deterministic for
 * a seed, and fast enough to make thousands of varied files for a benchmark.
 */
import {
  crc32,
  deflateRawSync,
  deflateSync,
  inflateRawSync,
  constants as zlibConstants,
} from 'node:zlib';
import { Document, Packer, Paragraph, TextRun } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';

// ---------------------------------------------------------------------------------------------
// Words

// prettier-ignore
const WORDS = [
  'experience', 'engineer', 'team', 'project', 'delivered', 'customers', 'platform', 'data',
  'design', 'built', 'led', 'skills', 'python', 'typescript', 'systems', 'product', 'growth',
  'managed', 'budget', 'research', 'analysis', 'reports', 'improved', 'process', 'quality',
  'service', 'support', 'training', 'mentored', 'junior', 'senior', 'cloud', 'migration',
  'security', 'testing', 'release', 'roadmap', 'stakeholders', 'sales', 'marketing', 'finance',
  'operations', 'logistics', 'nursing', 'patients', 'teaching', 'students', 'curriculum', 'Berlin',
  'London', 'Paris', 'university', 'degree', 'certified', 'languages', 'German', 'English',
  'French', 'volunteer', 'award', 'published', 'conference', 'the', 'and', 'with', 'for', 'in',
];

/**
 * mulberry32: a tiny seeded generator of numbers in [0, 1), so that a seed always makes the same
 * document (or bench data).
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` words of plain ASCII (what a PDF standard font can draw), seeded. */
export function seededWords(count: number, seed: number): string[] {
  const next = seededRandom(seed);
  return Array.from({ length: count }, () => WORDS[Math.floor(next() * WORDS.length)]!);
}

// ---------------------------------------------------------------------------------------------
// PDF

export interface BuiltPdf {
  bytes: Uint8Array;
  /** The text drawn on each page, lines joined with "\n". */
  pageTexts: string[];
}

export interface BuildPdfOptions {
  pages?: number;
  wordsPerPage?: number;
  seed?: number;
  /** The info dictionary's Title. */
  title?: string;
}

const WORDS_PER_LINE = 12;

/** A PDF with a text layer: seeded words on every page, 12 words a line, Helvetica. */
export async function buildPdf({
  pages = 1,
  wordsPerPage = 60,
  seed = 1,
  title,
}: BuildPdfOptions = {}): Promise<BuiltPdf> {
  const pdf = await PDFDocument.create();
  if (title !== undefined) pdf.setTitle(title);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const pageTexts: string[] = [];
  for (let index = 0; index < pages; index++) {
    const page = pdf.addPage([595, 842]);
    const words = seededWords(wordsPerPage, seed * 100_003 + index);
    const lines: string[] = [];
    for (let start = 0; start < words.length; start += WORDS_PER_LINE)
      lines.push(words.slice(start, start + WORDS_PER_LINE).join(' '));
    lines.forEach((line, lineIndex) =>
      // Lines past the bottom of the page are still in its text layer: fine for a parser.
      page.drawText(line, { x: 40, y: 800 - lineIndex * 14, size: 10, font }),
    );
    pageTexts.push(lines.join('\n'));
  }
  return { bytes: await pdf.save(), pageTexts };
}

/** A scan: pages that only draw an image, with no text layer at all. */
export async function buildImagePdf({ pages = 1 }: { pages?: number } = {}): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const image = await pdf.embedPng(buildPng(120, 160));
  for (let index = 0; index < pages; index++) {
    const page = pdf.addPage([595, 842]);
    page.drawImage(image, { x: 0, y: 0, width: 595, height: 842 });
  }
  return pdf.save();
}

/**
 * A PDF encrypted with the standard security handler (RC4, revision 2) whose password checks
 * fail for the empty password, so pdf.js asks for one. Written by hand: pdf-lib cannot encrypt.
 * The /U and /O values are not derived from any password; a reader can only say "password".
 */
export function buildEncryptedPdf(): Uint8Array {
  const hex = (bytes: number, value: number) => Buffer.alloc(bytes, value).toString('hex');
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>',
    `<< /Filter /Standard /V 1 /R 2 /O <${hex(32, 0x5a)}> /U <${hex(32, 0xa5)}> /P -4 >>`,
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(pdf.length);
    pdf += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) pdf += `${String(offset).padStart(10, '0')} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Encrypt 4 0 R /ID [<${hex(16, 0x11)}> <${hex(16, 0x11)}>] >>\n`;
  pdf += `startxref\n${xref}\n%%EOF\n`;
  return new TextEncoder().encode(pdf);
}

// ---------------------------------------------------------------------------------------------
// PNG

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A grey 8-bit greyscale PNG: an image, and the bytes of a format documents are not. */
export function buildPng(width: number, height: number): Uint8Array {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 0; // greyscale
  const rows = Buffer.alloc((width + 1) * height, 0x80);
  for (let row = 0; row < height; row++) rows[row * (width + 1)] = 0; // filter: none
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

// ---------------------------------------------------------------------------------------------
// Zip

export interface ZipFileEntry {
  name: string;
  data: Uint8Array;
}

interface RawZipEntry {
  name: string;
  method: 0 | 8;
  compressed: Uint8Array;
  crc: number;
  /** What the headers claim; a bomb lies here. */
  declaredSize: number;
}

/** Writes a zip; `directory` may list an entry's local header more than once (overlapping bombs). */
function writeZip(
  entries: readonly RawZipEntry[],
  directory: readonly { entry: number; name: string }[] = entries.map((each, index) => ({
    entry: index,
    name: each.name,
  })),
): Uint8Array {
  const parts: Buffer[] = [];
  const offsets: number[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const header = Buffer.alloc(30);
    header.writeUInt32LE(0x04034b50, 0);
    header.writeUInt16LE(20, 4); // version needed
    header.writeUInt16LE(0x0800, 6); // UTF-8 names
    header.writeUInt16LE(entry.method, 8);
    header.writeUInt32LE(entry.crc, 14);
    header.writeUInt32LE(entry.compressed.byteLength, 18);
    header.writeUInt32LE(entry.declaredSize, 22);
    header.writeUInt16LE(name.length, 26);
    offsets.push(offset);
    parts.push(header, name, Buffer.from(entry.compressed));
    offset += header.length + name.length + entry.compressed.byteLength;
  }
  const directoryStart = offset;
  for (const { entry: index, name: entryName } of directory) {
    const entry = entries[index]!;
    const name = Buffer.from(entryName, 'utf8');
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(20, 4);
    header.writeUInt16LE(20, 6);
    header.writeUInt16LE(0x0800, 8);
    header.writeUInt16LE(entry.method, 10);
    header.writeUInt32LE(entry.crc, 16);
    header.writeUInt32LE(entry.compressed.byteLength, 20);
    header.writeUInt32LE(entry.declaredSize, 24);
    header.writeUInt16LE(name.length, 28);
    header.writeUInt32LE(offsets[index]!, 42);
    parts.push(header, name);
    offset += header.length + name.length;
  }
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(directory.length, 8);
  end.writeUInt16LE(directory.length, 10);
  end.writeUInt32LE(offset - directoryStart, 12);
  end.writeUInt32LE(directoryStart, 16);
  parts.push(end);
  return Buffer.concat(parts);
}

function deflatedEntry({ name, data }: ZipFileEntry): RawZipEntry {
  return {
    name,
    method: 8,
    compressed: deflateRawSync(data),
    crc: crc32(data),
    declaredSize: data.byteLength,
  };
}

/** A zip of `files`, deflated. */
export function buildZip(files: readonly ZipFileEntry[]): Uint8Array {
  return writeZip(files.map(deflatedEntry));
}

/** The files of a zip we wrote or docx wrote (trusted input: no limits, stored or deflated). */
export function readZip(bytes: Uint8Array): ZipFileEntry[] {
  const zip = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end === -1) throw new Error('not a zip');
  const files: ZipFileEntry[] = [];
  let offset = zip.readUInt32LE(end + 16);
  for (let index = 0; index < zip.readUInt16LE(end + 10); index++) {
    const method = zip.readUInt16LE(offset + 10);
    const size = zip.readUInt32LE(offset + 20);
    const nameLength = zip.readUInt16LE(offset + 28);
    const local = zip.readUInt32LE(offset + 42);
    const name = zip.toString('utf8', offset + 46, offset + 46 + nameLength);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + size);
    files.push({ name, data: method === 8 ? inflateRawSync(data) : Uint8Array.from(data) });
    offset += 46 + nameLength + zip.readUInt16LE(offset + 30) + zip.readUInt16LE(offset + 32);
  }
  return files;
}

// ---------------------------------------------------------------------------------------------
// DOCX

export interface BuiltDocx {
  bytes: Uint8Array;
  paragraphs: string[];
}

export interface BuildDocxOptions {
  paragraphs?: number;
  wordsPerParagraph?: number;
  seed?: number;
  /** `dc:title` of docProps/core.xml. */
  title?: string;
  /** Written as `<Pages>` in docProps/app.xml (Word's own count; docx writes none). */
  pages?: number;
  /**
   * Images linked, not embedded (`TargetMode="External"`), one per target: a URL or a file
   * path. A parser that follows them reads a file or opens a connection.
   */
  externalImageTargets?: string[];
}

function externalImage(relationshipId: string, index: number): string {
  return (
    '<w:p><w:r><w:drawing>' +
    '<wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing">' +
    `<wp:extent cx="952500" cy="952500"/><wp:docPr id="${900 + index}" name="Linked ${index}" descr="linked image ${index}"/>` +
    '<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">' +
    '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture">' +
    '<pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture">' +
    `<pic:nvPicPr><pic:cNvPr id="${900 + index}" name="Linked ${index}"/><pic:cNvPicPr/></pic:nvPicPr>` +
    '<pic:blipFill>' +
    `<a:blip xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:link="${relationshipId}"/>` +
    '</pic:blipFill></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>'
  );
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"]/g, (char) =>
    char === '&' ? '&amp;' : char === '<' ? '&lt;' : char === '>' ? '&gt;' : '&quot;',
  );
}

/** A DOCX of seeded paragraphs, written by docx, then patched for `pages` and external images. */
export async function buildDocx({
  paragraphs = 5,
  wordsPerParagraph = 30,
  seed = 1,
  title,
  pages,
  externalImageTargets = [],
}: BuildDocxOptions = {}): Promise<BuiltDocx> {
  const texts = Array.from({ length: paragraphs }, (_, index) =>
    seededWords(wordsPerParagraph, seed * 100_003 + index).join(' '),
  );
  const document = new Document({
    ...(title === undefined ? {} : { title }),
    sections: [{ children: texts.map((text) => new Paragraph({ children: [new TextRun(text)] })) }],
  });
  const bytes = new Uint8Array(await Packer.toBuffer(document));
  if (pages === undefined && externalImageTargets.length === 0) return { bytes, paragraphs: texts };
  const files = readZip(bytes).map((file) => {
    let xml = new TextDecoder().decode(file.data);
    if (file.name === 'docProps/app.xml' && pages !== undefined)
      // docx writes an empty, self-closed <Properties/>.
      xml = xml.includes('</Properties>')
        ? xml.replace('</Properties>', `<Pages>${pages}</Pages></Properties>`)
        : xml.replace(
            /<Properties([^>]*)\/>/,
            `<Properties$1><Pages>${pages}</Pages></Properties>`,
          );
    else if (file.name === 'word/document.xml' && externalImageTargets.length > 0) {
      const images = externalImageTargets.map((_, index) =>
        externalImage(`rIdLinked${index}`, index),
      );
      const at = xml.lastIndexOf('<w:sectPr');
      xml = xml.slice(0, at) + images.join('') + xml.slice(at);
    } else if (file.name === 'word/_rels/document.xml.rels' && externalImageTargets.length > 0) {
      const relationships = externalImageTargets.map(
        (target, index) =>
          `<Relationship Id="rIdLinked${index}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="${escapeXml(target)}" TargetMode="External"/>`,
      );
      xml = xml.replace('</Relationships>', `${relationships.join('')}</Relationships>`);
    } else return file;
    return { name: file.name, data: new TextEncoder().encode(xml) };
  });
  return { bytes: buildZip(files), paragraphs: texts };
}

export interface DocxZipBombOptions {
  /** Bytes the bomb inflates to, in total. */
  inflatedBytes: number;
  /**
   * `single`: one entry of zeros, a ~1000:1 deflate stream. `overlapping`: many
   * central-directory entries sharing one entry's compressed data (a file of a few kilobytes
   * that a reader trusting the directory inflates once per entry).
   */
  kind?: 'single' | 'overlapping';
}

const MIB = 1024 * 1024;

/**
 * A raw deflate stream that inflates to `mebibytes` MiB of `byte`, made without holding them:
 * one MiB compressed with a full flush (byte-aligned, no final block), repeated, then an empty
 * final block.
 */
function repeatedDeflateStream(mebibytes: number, byte = 0): Buffer {
  const block = deflateRawSync(Buffer.alloc(MIB, byte), {
    finishFlush: zlibConstants.Z_FULL_FLUSH,
  });
  const stream = Buffer.alloc(block.length * mebibytes + 2);
  for (let index = 0; index < mebibytes; index++) block.copy(stream, index * block.length);
  stream[stream.length - 2] = 0x03; // final fixed-Huffman block holding only end-of-block
  stream[stream.length - 1] = 0x00;
  return stream;
}

/**
 * A one-page PDF whose content stream (FlateDecode) inflates to `inflatedBytes` of spaces: a
 * page that reads as blank, after gigabytes of decompression. The zlib checksum is left 0.
 */
export function buildPdfFlateBomb({ inflatedBytes }: { inflatedBytes: number }): Uint8Array {
  const deflated = repeatedDeflateStream(Math.max(1, Math.ceil(inflatedBytes / MIB)), 0x20);
  const stream = Buffer.concat([Buffer.from([0x78, 0x9c]), deflated, Buffer.alloc(4)]);
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>',
  ];
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n', 'latin1')];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  const add = (part: Buffer | string) => {
    const buffer = typeof part === 'string' ? Buffer.from(part, 'latin1') : part;
    parts.push(buffer);
    length += buffer.length;
  };
  objects.forEach((object, index) => {
    offsets.push(length);
    add(`${index + 1} 0 obj\n${object}\nendobj\n`);
  });
  offsets.push(length);
  add(`4 0 obj\n<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`);
  add(stream);
  add('\nendstream\nendobj\n');
  const xref = length;
  add(`xref\n0 5\n0000000000 65535 f \n`);
  for (const offset of offsets) add(`${String(offset).padStart(10, '0')} 00000 n \n`);
  add(`trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`);
  return Buffer.concat(parts);
}

/**
 * A DOCX (a real one: word/document.xml, text and all) carrying a zip bomb in
 * `word/media/`, whose headers declare 1 KiB per entry. The CRC is left 0: nothing that reads
 * a bomb should get far enough to check it.
 */
export async function buildDocxZipBomb({
  inflatedBytes,
  kind = 'single',
}: DocxZipBombOptions): Promise<Uint8Array> {
  const docx = readZip((await buildDocx({ paragraphs: 2 })).bytes).map(deflatedEntry);
  const mebibytes = Math.max(1, Math.ceil(inflatedBytes / MIB));
  const bomb = (name: string, size: number): RawZipEntry => ({
    name,
    method: 8,
    compressed: repeatedDeflateStream(size),
    crc: 0,
    declaredSize: 1024,
  });
  if (kind === 'single') return writeZip([...docx, bomb('word/media/image1.png', mebibytes)]);
  const shared = docx.length;
  const directory = [
    ...docx.map((each, index) => ({ entry: index, name: each.name })),
    ...Array.from({ length: mebibytes }, (_, index) => ({
      entry: shared,
      name: `word/media/image${index + 1}.png`,
    })),
  ];
  return writeZip([...docx, bomb('word/media/image0.png', 1)], directory);
}
