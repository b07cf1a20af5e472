import { Inflate } from 'fflate';

/**
 * Compressed bytes handed to the inflater at a time. DEFLATE expands at most ~1032:1, so one push
 * yields at most ~8 MiB: the most a bomb can make us hold before a caller's count stops it.
 */
const INFLATE_CHUNK_BYTES = 8 * 1024;

/**
 * Inflates raw DEFLATE data a chunk at a time, handing each piece of output to `onChunk` (which
 * counts it, and throws to stop). Nothing is kept here: memory stays at one chunk's output and
 * the 32 KiB window, however large the stream inflates. Throws fflate's error for data that does
 * not inflate.
 */
export function inflateInChunks(data: Uint8Array, onChunk: (chunk: Uint8Array) => void): void {
  const inflater = new Inflate(onChunk);
  if (data.byteLength === 0) {
    inflater.push(data, true);
    return;
  }
  for (let start = 0; start < data.byteLength; start += INFLATE_CHUNK_BYTES) {
    const end = Math.min(start + INFLATE_CHUNK_BYTES, data.byteLength);
    inflater.push(data.subarray(start, end), end === data.byteLength);
  }
}
