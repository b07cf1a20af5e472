import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  analysePage,
  type FieldExtractor,
  type PageAnalysis,
  type PageInput,
} from './analyse-page.js';
import { extractBodyFields } from './body-fields.js';
import { ExtractError, LISTING_CONTENT_TYPE } from './page-fields.js';

/**
 * Runs `analysePage` (decoding, fingerprints, extraction: most of a crawl's CPU) in threads of
 * its own, so that one worker process uses a second core while its event loop goes on with
 * fetches, queue and database traffic. With no threads it runs on the event loop.
 *
 * Hand-written rather than piscina: on `pnpm bench pipeline` piscina's per-task messaging cost
 * more than the work it moved (a page's analysis is ~0.3 ms), and the pipeline got slower. Here
 * the pages a turn of the event loop asks for travel to a thread as one message and come back
 * as one: about 20 µs of the event loop's time per page.
 */
export interface PageAnalyser {
  /**
   * Rejects with `EXTRACT_THREAD_FAILED` (transient) when the page's thread died, or on close,
   * and with `signal`'s reason when it fires first (the job's timeout, its run's cancellation).
   * A page still being analysed in a thread then is stopped: the thread is ended and replaced,
   * and the other pages it held go to the replacement. On the event loop (no threads) an
   * analysis cannot be interrupted: the signal is only checked before it starts.
   */
  analyse(input: PageInput, signal?: AbortSignal): Promise<PageAnalysis>;
  /** Ends the threads; pages still being analysed are rejected. Idempotent. */
  close(): Promise<void>;
}

export interface PageAnalyserOptions {
  /** Threads; 0 analyses every page on the caller's event loop. */
  threads: number;
  /** The threads' module; by default the build's `analyse-page.thread.js`. */
  threadEntry?: string;
}

/** One page sent to a thread. */
export interface AnalysisRequest {
  id: number;
  input: PageInput;
}

/** A thread's answer for one page. */
export type AnalysisReply = { id: number; analysis: PageAnalysis } | { id: number; error: string };

interface Pending {
  /** The caller's input: what is sent again when the page moves to another thread. */
  input: PageInput;
  resolve(analysis: PageAnalysis): void;
  reject(error: Error): void;
}

interface AnalyserThread {
  worker: Worker;
  pending: Map<number, Pending>;
  /** It has answered at least once: its module loads, so a replacement will too. */
  hasAnswered: boolean;
  /** Requests waiting for the end of the current turn of the event loop. */
  outbox: AnalysisRequest[];
}

/**
 * The thread entry is the build's (`dist/page-analysis/analyse-page.thread.js`), also when this
 * module runs from source in tests: a thread cannot load TypeScript.
 */
function defaultThreadEntry(): string {
  const entry = fileURLToPath(
    new URL('../../dist/page-analysis/analyse-page.thread.js', import.meta.url),
  );
  if (!existsSync(entry))
    throw new Error(`page analyser threads need the worker built: ${entry} is missing`);
  return entry;
}

/** Every kind of page, ATS payloads included, on the event loop. */
const extractAny: FieldExtractor = (input, body, html) =>
  extractBodyFields({ ...input, body, ...(html === undefined ? {} : { html }) });

function threadFailed(message: string): ExtractError {
  return new ExtractError(message, 'EXTRACT_THREAD_FAILED', 'transient');
}

export function createPageAnalyser({
  threads,
  threadEntry = defaultThreadEntry(),
}: PageAnalyserOptions): PageAnalyser {
  if (!Number.isInteger(threads) || threads < 0)
    throw new RangeError(`page analyser threads must be an integer >= 0, got ${threads}`);
  const analyseInline = (input: PageInput, signal?: AbortSignal) =>
    Promise.resolve().then(() => {
      signal?.throwIfAborted();
      return analysePage(input, extractAny);
    });
  if (threads === 0) return { analyse: analyseInline, close: () => Promise.resolve() };

  let closing: Promise<void> | undefined;
  let nextId = 0;
  let flushScheduled = false;

  function start(): AnalyserThread {
    const worker = new Worker(threadEntry, {
      // None of the process's own options: V8 flags (`--max-semi-space-size`, compose gives the
      // worker one) are refused in a thread, and a resolution condition for the process's loader
      // (tests resolve workspace packages to TypeScript sources) would point the build at
      // files it cannot load. The thread's heap is set here instead.
      execArgv: [],
      // Young generation capped at 8 MB (V8's default grows to 48): pages die young here, and
      // a larger one raised the worker's peak RSS on `pnpm bench pipeline` (decision 0005).
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
    });
    const thread: AnalyserThread = { worker, pending: new Map(), hasAnswered: false, outbox: [] };
    worker.on('message', (replies: AnalysisReply[]) => {
      thread.hasAnswered = true;
      for (const reply of replies) {
        const pending = thread.pending.get(reply.id);
        if (!pending) continue;
        thread.pending.delete(reply.id);
        if ('analysis' in reply) pending.resolve(reply.analysis);
        else pending.reject(threadFailed(`page analysis failed: ${reply.error}`));
      }
    });
    // A thread that dies fails the pages it held (their jobs are retried) and is replaced. One
    // that never answered (its module does not load) is not: the pages it would have taken run
    // on the event loop instead.
    const onGone = (reason: string) => {
      for (const pending of thread.pending.values())
        pending.reject(threadFailed(`page analyser thread ${reason}`));
      thread.pending.clear();
      const index = pool.indexOf(thread);
      if (index === -1 || closing !== undefined) return;
      if (thread.hasAnswered) pool[index] = start();
      else pool.splice(index, 1);
    };
    worker.on('error', (error) => onGone(`failed: ${error.message}`));
    worker.on('exit', (code) => onGone(`exited with code ${code}`));
    return thread;
  }

  const pool: AnalyserThread[] = Array.from({ length: threads }, start);

  function send(thread: AnalyserThread, id: number, input: PageInput): void {
    // The thread gets its own copy of the bytes, moved rather than cloned: the caller keeps
    // the body to store it, and cloning a view would copy its whole underlying buffer.
    thread.outbox.push({ id, input: { ...input, body: new Uint8Array(input.body) } });
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  }

  /**
   * Gives up on page `id`: a page not sent yet is dropped; one its thread holds is stopped by
   * ending the thread (a parse cannot be interrupted otherwise). The thread's other pages go to
   * its replacement, which starts at once: they were waiting behind the page, not failing.
   */
  function abandon(thread: AnalyserThread, id: number): void {
    thread.pending.delete(id);
    const queued = thread.outbox.findIndex((request) => request.id === id);
    if (queued !== -1) {
      thread.outbox.splice(queued, 1);
      return;
    }
    const index = pool.indexOf(thread);
    if (index === -1 || closing !== undefined) return;
    const replacement = start();
    pool[index] = replacement;
    for (const [otherId, other] of thread.pending) {
      replacement.pending.set(otherId, other);
      send(replacement, otherId, other.input);
    }
    thread.pending.clear();
    thread.outbox = [];
    void thread.worker.terminate();
  }

  function flush(): void {
    flushScheduled = false;
    for (const thread of pool) {
      if (thread.outbox.length === 0) continue;
      const batch = thread.outbox;
      thread.outbox = [];
      thread.worker.postMessage(
        batch,
        batch.map((request) => request.input.body.buffer as ArrayBuffer),
      );
    }
  }

  return {
    analyse(input, signal) {
      if (closing !== undefined) return Promise.reject(threadFailed('page analyser is closed'));
      // ATS payloads are mapped by their site's adapter: small JSON, and threads stay free of
      // the adapters' modules.
      const first = pool[0];
      if (input.contentType === LISTING_CONTENT_TYPE || first === undefined)
        return analyseInline(input, signal);
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      // The least busy thread; ties go to the first.
      let thread = first;
      for (const candidate of pool)
        if (candidate.pending.size < thread.pending.size) thread = candidate;
      const id = nextId++;
      return new Promise<PageAnalysis>((resolve, reject) => {
        const onAbort = () => {
          // The page may have moved to a replacement thread since it was sent.
          const holder = pool.find((each) => each.pending.has(id));
          if (holder) abandon(holder, id);
          reject(signal!.reason as Error);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        const settled = () => signal?.removeEventListener('abort', onAbort);
        thread.pending.set(id, {
          input,
          resolve(analysis) {
            settled();
            resolve(analysis);
          },
          reject(error) {
            settled();
            reject(error);
          },
        });
        send(thread, id, input);
      });
    },
    close() {
      closing ??= Promise.all(pool.map((thread) => thread.worker.terminate())).then(
        () => undefined,
      );
      return closing;
    },
  };
}
