/**
 * The documents bench's bare loop, in a process of its own: documents.ts forks it once before the
 * pipeline and once after, and sends it the warm-up files and the timed files. It parses the
 * warm-up files, then the timed ones, one after the other with `extractDocument`, answers with
 * the timed run's figures and exits.
 */
import { performance } from 'node:perf_hooks';
import { extractDocument } from '@gleaner/extraction/documents';
import type { BenchFile } from './documents.js';
import type { ChildAnswer } from './support.js';

export interface BareLoopRequest {
  warmUp: readonly BenchFile[];
  files: readonly BenchFile[];
}

export interface BareLoopResult {
  seconds: number;
  /** The process's CPU, its V8 helper threads included. */
  cpuSeconds: number;
  minorPageFaults: number;
}

const send = process.send?.bind(process);
if (!send) throw new Error("documents-bare-loop.ts runs only as the documents bench's child");

// The bench is gone: so is the work.
process.on('disconnect', () => process.exit(0));

async function bareLoop(files: readonly BenchFile[]): Promise<BareLoopResult> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const faults = process.resourceUsage().minorPageFault;
  for (const file of files) {
    const document = await extractDocument(file.bytes, {
      mediaType: file.mediaType,
      filename: file.name,
    });
    if (document.textChars === 0) throw new Error(`the bare loop read no text from ${file.name}`);
  }
  const used = process.cpuUsage(cpu);
  return {
    seconds: (performance.now() - started) / 1000,
    cpuSeconds: (used.user + used.system) / 1e6,
    minorPageFaults: process.resourceUsage().minorPageFault - faults,
  };
}

process.once('message', ({ warmUp, files }: BareLoopRequest) => {
  void (async () => {
    await bareLoop(warmUp);
    return { result: await bareLoop(files) };
  })()
    .catch((error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }))
    .then((answer: ChildAnswer<BareLoopResult>) => send(answer, () => process.disconnect()));
});
