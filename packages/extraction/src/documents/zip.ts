/**
 * A DOCX is a zip, and a zip can be a bomb: a few hundred kilobytes that inflate to gigabytes,
 * through one entry of repeated bytes, thousands of entries, or many central-directory entries
 * pointing at the same compressed data (https://www.bamsoftware.com/hacks/zipbomb/). mammoth
 * (through jszip) inflates whatever the central directory lists, trusting its declared sizes, so
 * this module walks the same central directory first and really inflates every entry it lists,
 * counting the bytes that come out and keeping none of them except the few small parts asked
 * for. Only a zip that stays under the limit is handed to mammoth.
 */
import { DocumentExtractionError } from './errors.js';
import { inflateInChunks } from './inflate.js';

export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflated; anything else is refused when read. */
  method: number;
  /** General purpose flags; bit 0 is encryption. */
  flags: number;
  compressedSize: number;
  localHeaderOffset: number;
}

/** A DOCX has a few dozen parts, a few hundred with images; far more is a bomb of entries. */
export const MAX_ZIP_ENTRIES = 10_000;

const EOCD_SIGNATURE = 0x06054b50;
const ZIP64_LOCATOR_SIGNATURE = 0x07064b50;
const ZIP64_EOCD_SIGNATURE = 0x06064b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;

function corrupt(message: string, cause?: unknown): DocumentExtractionError {
  return new DocumentExtractionError('corruption', message, cause === undefined ? {} : { cause });
}

/** Little-endian reads that refuse to go past the end: a cut-off zip is corrupt, not a crash. */
class Reader {
  private readonly view: DataView;

  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private check(offset: number, size: number): void {
    if (offset < 0 || offset + size > this.bytes.byteLength)
      throw corrupt('the zip is cut off or its directory points outside the file');
  }

  u16(offset: number): number {
    this.check(offset, 2);
    return this.view.getUint16(offset, true);
  }

  u32(offset: number): number {
    this.check(offset, 4);
    return this.view.getUint32(offset, true);
  }

  u64(offset: number): number {
    this.check(offset, 8);
    const value = this.view.getBigUint64(offset, true);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw corrupt('a zip64 field is out of range');
    return Number(value);
  }

  slice(offset: number, size: number): Uint8Array {
    this.check(offset, size);
    return this.bytes.subarray(offset, offset + size);
  }
}

/** Whether the bytes start like a zip (a local file header, or the directory of an empty zip). */
export function looksLikeZip(bytes: Uint8Array): boolean {
  return (
    bytes[0] === 0x50 &&
    bytes[1] === 0x4b &&
    ((bytes[2] === 0x03 && bytes[3] === 0x04) || (bytes[2] === 0x05 && bytes[3] === 0x06))
  );
}

function findEndOfCentralDirectory(reader: Reader): number {
  const length = reader.bytes.byteLength;
  // The record is 22 bytes plus a comment of at most 65535.
  for (let offset = length - 22; offset >= Math.max(0, length - 22 - 0xffff); offset--) {
    if (reader.u32(offset) === EOCD_SIGNATURE) return offset;
  }
  throw corrupt('the zip has no central directory (cut off, or not a zip)');
}

/**
 * The entries of the zip's central directory — what jszip, and so mammoth, will read. Throws
 * `corruption` for a directory that is cut off, points outside the file or lists more than
 * MAX_ZIP_ENTRIES entries.
 */
export function listZipEntries(bytes: Uint8Array): ZipEntry[] {
  const reader = new Reader(bytes);
  const end = findEndOfCentralDirectory(reader);
  let count = reader.u16(end + 10);
  let directoryOffset = reader.u32(end + 16);
  if (count === 0xffff || directoryOffset === 0xffffffff) {
    // ZIP64: the real figures are in the zip64 end record, found through its locator.
    if (reader.u32(end - 20) !== ZIP64_LOCATOR_SIGNATURE)
      throw corrupt('the zip64 end-of-directory locator is missing');
    const record = reader.u64(end - 20 + 8);
    if (reader.u32(record) !== ZIP64_EOCD_SIGNATURE)
      throw corrupt('the zip64 end-of-directory record is missing');
    count = reader.u64(record + 32);
    directoryOffset = reader.u64(record + 48);
  }
  if (count > MAX_ZIP_ENTRIES)
    throw corrupt(`the zip lists ${count} entries, more than the ${MAX_ZIP_ENTRIES} allowed`);
  const entries: ZipEntry[] = [];
  const names = new TextDecoder('utf-8');
  let offset = directoryOffset;
  for (let index = 0; index < count; index++) {
    if (reader.u32(offset) !== CENTRAL_SIGNATURE)
      throw corrupt('the zip central directory is damaged');
    const flags = reader.u16(offset + 8);
    const method = reader.u16(offset + 10);
    let compressedSize = reader.u32(offset + 20);
    const uncompressedSize = reader.u32(offset + 24);
    const nameLength = reader.u16(offset + 28);
    const extraLength = reader.u16(offset + 30);
    const commentLength = reader.u16(offset + 32);
    let localHeaderOffset = reader.u32(offset + 42);
    const name = names.decode(reader.slice(offset + 46, nameLength));
    if (compressedSize === 0xffffffff || localHeaderOffset === 0xffffffff) {
      // The zip64 extra field holds, in this order, only the sizes that overflowed.
      let extra = offset + 46 + nameLength;
      const extraEnd = extra + extraLength;
      while (extra + 4 <= extraEnd) {
        const id = reader.u16(extra);
        const size = reader.u16(extra + 2);
        if (id === 0x0001) {
          let field = extra + 4;
          if (uncompressedSize === 0xffffffff) field += 8;
          if (compressedSize === 0xffffffff) {
            compressedSize = reader.u64(field);
            field += 8;
          }
          if (localHeaderOffset === 0xffffffff) localHeaderOffset = reader.u64(field);
          break;
        }
        extra += 4 + size;
      }
    }
    entries.push({ name, method, flags, compressedSize, localHeaderOffset });
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** The compressed bytes of an entry, located through its local header as jszip does. */
function entryData(reader: Reader, entry: ZipEntry): Uint8Array {
  const header = entry.localHeaderOffset;
  if (reader.u32(header) !== LOCAL_SIGNATURE)
    throw corrupt(`the zip entry ${entry.name} has no local header`);
  const start = header + 30 + reader.u16(header + 26) + reader.u16(header + 28);
  return reader.slice(start, entry.compressedSize);
}

export interface InflateOptions {
  /** Total inflated bytes allowed across all entries. */
  maxInflatedBytes: number;
  /** Names of the entries to keep (small parts such as `docProps/core.xml`). */
  keep: ReadonlySet<string>;
  /** Bytes kept per kept entry; the rest of it is counted, not kept. */
  maxKeptBytes: number;
}

/**
 * Inflates every entry of `entries`, counting what comes out (declared sizes are never trusted),
 * and returns the kept ones. Throws `corruption` when the total passes `maxInflatedBytes` — as
 * soon as it does, holding at most one chunk's output — or when an entry does not inflate.
 */
export function inflateZipEntries(
  bytes: Uint8Array,
  entries: readonly ZipEntry[],
  { maxInflatedBytes, keep, maxKeptBytes }: InflateOptions,
): Map<string, Uint8Array> {
  const reader = new Reader(bytes);
  const kept = new Map<string, Uint8Array>();
  let total = 0;
  const tooLarge = () => corrupt(`the zip decompresses past ${maxInflatedBytes} bytes`);
  for (const entry of entries) {
    if ((entry.flags & 1) !== 0) throw corrupt(`the zip entry ${entry.name} is encrypted`);
    const data = entryData(reader, entry);
    const parts: Uint8Array[] = [];
    let keptBytes = 0;
    const wanted = keep.has(entry.name);
    const collect = (chunk: Uint8Array) => {
      total += chunk.byteLength;
      if (total > maxInflatedBytes) throw tooLarge();
      if (wanted && keptBytes < maxKeptBytes) {
        const part = chunk.subarray(0, maxKeptBytes - keptBytes);
        parts.push(part.slice());
        keptBytes += part.byteLength;
      }
    };
    if (entry.method === 0) {
      collect(data);
    } else if (entry.method === 8) {
      try {
        inflateInChunks(data, collect);
      } catch (error) {
        if (error instanceof DocumentExtractionError) throw error;
        throw corrupt(`the zip entry ${entry.name} does not inflate`, error);
      }
    } else {
      throw corrupt(`the zip entry ${entry.name} uses compression method ${entry.method}`);
    }
    if (wanted) kept.set(entry.name, concat(parts, keptBytes));
  }
  return kept;
}

function concat(parts: readonly Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1 && parts[0] !== undefined) return parts[0];
  const result = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    result.set(part, offset);
    offset += part.byteLength;
  }
  return result;
}
