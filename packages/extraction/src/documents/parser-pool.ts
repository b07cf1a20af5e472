import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { DocumentHints } from './detect-format.js';
import { DocumentExtractionError, type DocumentErrorType } from './errors.js';
import {
  defaultDocumentLimits,
  type DocumentLimits,
  type ExtractedDocument,
} from './extract-document.js';

/**
 * extractDocument in threads that can be stopped. pdf.js and mammoth are synchronous for long
 * stretches and have no cancellation: a hostile or merely huge document would hold an event
 * loop for as long as it likes, and a promise race would only stop waiting for it. Here a
 * document that runs past its time, or whose job is cancelled, has its thread terminated and
 * replaced; a thread that hits its heap cap dies alone, not the worker process.
 *
 * Hand-written, like the page analyser's pool (services/worker/src/page-analysis): one
 * document per thread at a time (a parse takes milliseconds to seconds, so batching messages
 * saves nothing), jobs queue when every thread is busy.
 */
export interface DocumentParserPool {
  /**
   * Runs extractDocument in a thread. At `timeoutMs` (counted from when a thread takes the
   * document, not while it queues) the thread is terminated and replaced and the promise
   * rejects with DocumentExtractionError `timeout`; when `signal` aborts, likewise with the
   * signal's reason (a queued document is just dropped). A thread that dies, e.g. at its heap
   * cap, rejects with `corruption` ("exceeded the parser's memory limit") and is replaced.
   */
  extract(
    bytes: Uint8Array,
    hints?: DocumentHints,
    options?: { signal?: AbortSignal; timeoutMs?: number; limits?: DocumentLimits },
  ): Promise<ExtractedDocument>;
  /** Terminates the threads; documents queued or being parsed are rejected. Idempotent. */
  close(): Promise<void>;
}

export interface DocumentParserPoolOptions {
  threads: number;
  /** Default time a thread may spend on one document. */
  timeoutMs: number;
  /** Old-generation heap cap per thread (`resourceLimits.maxOldGenerationSizeMb`); default 2048. */
  maxHeapMb?: number;
  /**
   * The threads' module, for tests that need a thread to misbehave on cue (spin, run out of
   * memory); it must answer ParseRequest with ParseReply. By default this package's
   * `parser.thread`.
   */
  threadEntry?: string | URL;
}

/** One document sent to a thread. The bytes are the pool's own copy, moved, not cloned. */
export interface ParseRequest {
  id: number;
  bytes: Uint8Array;
  hints: DocumentHints | undefined;
  limits: DocumentLimits;
}

export type ParseReply =
  | { id: number; document: ExtractedDocument }
  | {
      id: number;
      error: { errorType: DocumentErrorType; code: string | undefined; message: string };
    };

interface Job {
  request: ParseRequest;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  resolve(document: ExtractedDocument): void;
  reject(error: unknown): void;
  readonly onAbort: () => void;
}

interface ParserThread {
  worker: Worker;
  job: Job | null;
  timer: NodeJS.Timeout | undefined;
  /** It has answered at least once: its module loads, so a replacement will too. */
  hasAnswered: boolean;
  isGone: boolean;
}

/**
 * V8 sizes an isolate's old-generation growth by its heap cap: under 2 GB (64-bit) it grows the
 * heap by less than 4× per collection, down to 1.1× at 256 MB, and collects fully that much more
 * often. A thread capped at 512 MB parsed the bench's mixed resumes at 47–84 documents/s where
 * the same parsers in the main thread did 148–167; capped at 2 GB it did 134–166. The cap is for
 * a document that runs away; the byte counting of zips and PDF streams bounds the rest.
 */
const DEFAULT_MAX_HEAP_MB = 2048;

/**
 * How to start a thread. From the build, `parser.thread.js` beside this file, with none of the
 * process's own options (`execArgv: []`, as the page analyser does: V8 flags are refused in a
 * thread, and the tests' resolution condition would point the build at TypeScript sources).
 * From the sources (vitest, tsx: this file is `.ts`), a thread cannot load TypeScript by itself
 * and Node 20 does not pass `--import` hooks to a worker's entry, so a small bootstrap registers
 * tsx in the thread and then imports `parser.thread.ts`, with workspace packages resolved to
 * their sources as in the tests.
 */
function defaultThread(): { entry: string | URL; options: { eval: boolean; execArgv: string[] } } {
  const self = import.meta.url;
  if (!self.endsWith('.ts'))
    return { entry: new URL('./parser.thread.js', self), options: { eval: false, execArgv: [] } };
  const tsxPackage = createRequire(self).resolve('tsx/package.json');
  const tsxApi = new URL('./dist/esm/api/index.mjs', pathToFileURL(tsxPackage)).href;
  const thread = new URL('./parser.thread.ts', self).href;
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(thread)}); });`;
  return { entry: bootstrap, options: { eval: true, execArgv: ['--conditions=@gleaner/source'] } };
}

function closedError(): DocumentExtractionError {
  return new DocumentExtractionError('unknown', 'the document parser pool is closed', {
    code: 'DOCUMENT_PARSER_CLOSED',
  });
}

export function createDocumentParserPool(options: DocumentParserPoolOptions): DocumentParserPool {
  const { threads, timeoutMs, maxHeapMb = DEFAULT_MAX_HEAP_MB } = options;
  if (!Number.isInteger(threads) || threads < 1)
    throw new RangeError(`document parser threads must be an integer >= 1, got ${threads}`);
  if (!(timeoutMs > 0)) throw new RangeError(`timeoutMs must be > 0, got ${timeoutMs}`);
  const thread =
    options.threadEntry === undefined
      ? defaultThread()
      : {
          entry:
            options.threadEntry instanceof URL
              ? fileURLToPath(options.threadEntry)
              : options.threadEntry,
          options: { eval: false, execArgv: [] },
        };

  const pool: ParserThread[] = [];
  const queue: Job[] = [];
  let nextId = 0;
  let closing: Promise<void> | undefined;

  function start(): ParserThread {
    const worker = new Worker(thread.entry, {
      ...thread.options,
      resourceLimits: { maxOldGenerationSizeMb: maxHeapMb },
    });
    const parser: ParserThread = {
      worker,
      job: null,
      timer: undefined,
      hasAnswered: false,
      isGone: false,
    };
    worker.on('message', (reply: ParseReply) => {
      parser.hasAnswered = true;
      const job = parser.job;
      if (job === null || job.request.id !== reply.id) return;
      release(parser);
      if ('document' in reply) job.resolve(reply.document);
      else
        job.reject(
          new DocumentExtractionError(reply.error.errorType, reply.error.message, {
            ...(reply.error.code === undefined ? {} : { code: reply.error.code }),
          }),
        );
      dispatch();
    });
    worker.on('error', (error: Error & { code?: string }) => {
      gone(
        parser,
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new DocumentExtractionError(
              'corruption',
              `the document exceeded the parser's memory limit (${maxHeapMb} MB of heap)`,
              { cause: error },
            )
          : new DocumentExtractionError('unknown', `a parser thread failed: ${error.message}`, {
              cause: error,
            }),
      );
    });
    worker.on('exit', (code) => {
      gone(
        parser,
        new DocumentExtractionError('unknown', `a parser thread exited with code ${code}`),
      );
    });
    pool.push(parser);
    return parser;
  }

  /** The thread is done with its job (answered, timed out or abandoned). */
  function release(parser: ParserThread): void {
    clearTimeout(parser.timer);
    parser.timer = undefined;
    const job = parser.job;
    parser.job = null;
    job?.signal?.removeEventListener('abort', job.onAbort);
  }

  /**
   * A thread that died by itself: its document fails with `error`. It is replaced at once if it
   * had worked before; one that never answered (its module does not load) is replaced only
   * when a document needs a thread, so a broken build fails documents instead of looping.
   */
  function gone(parser: ParserThread, error: DocumentExtractionError): void {
    if (parser.isGone) return;
    parser.isGone = true;
    pool.splice(pool.indexOf(parser), 1);
    const job = parser.job;
    release(parser);
    job?.reject(error);
    if (closing !== undefined) return;
    if (parser.hasAnswered) start();
    dispatch();
  }

  /** Ends a thread that is still parsing a document we gave up on, and starts another. */
  function stop(parser: ParserThread): void {
    parser.isGone = true;
    pool.splice(pool.indexOf(parser), 1);
    release(parser);
    void parser.worker.terminate();
    if (closing === undefined) start();
  }

  function dispatch(): void {
    while (queue.length > 0 && closing === undefined) {
      let parser = pool.find((each) => each.job === null);
      if (parser === undefined && pool.length < threads) parser = start();
      if (parser === undefined) return;
      const job = queue.shift()!;
      const running = parser;
      running.job = job;
      running.timer = setTimeout(() => {
        stop(running);
        job.reject(
          new DocumentExtractionError(
            'timeout',
            `parsing the document took longer than ${job.timeoutMs} ms`,
          ),
        );
        dispatch();
      }, job.timeoutMs);
      running.worker.postMessage(job.request, [job.request.bytes.buffer as ArrayBuffer]);
    }
  }

  /** The job's signal fired: a queued job is dropped, a running one has its thread stopped. */
  function abort(job: Job, reason: unknown): void {
    const running = pool.find((each) => each.job === job);
    if (running !== undefined) {
      stop(running);
      job.reject(reason);
      dispatch();
      return;
    }
    const queued = queue.indexOf(job);
    if (queued === -1) return;
    queue.splice(queued, 1);
    job.signal?.removeEventListener('abort', job.onAbort);
    job.reject(reason);
  }

  for (let index = 0; index < threads; index++) start();

  return {
    extract(bytes, hints, extractOptions = {}) {
      if (closing !== undefined) return Promise.reject(closedError());
      const { signal } = extractOptions;
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      return new Promise<ExtractedDocument>((resolve, reject) => {
        const job: Job = {
          // A copy the pool owns: it is moved to the thread, and the caller keeps its bytes.
          request: {
            id: nextId++,
            bytes: new Uint8Array(bytes),
            // Only the two strings: anything else on the object need not survive postMessage.
            hints:
              hints === undefined
                ? undefined
                : {
                    ...(hints.mediaType === undefined ? {} : { mediaType: hints.mediaType }),
                    ...(hints.filename === undefined ? {} : { filename: hints.filename }),
                  },
            limits: extractOptions.limits ?? defaultDocumentLimits,
          },
          timeoutMs: extractOptions.timeoutMs ?? timeoutMs,
          signal,
          resolve,
          reject,
          onAbort: () => abort(job, signal?.reason),
        };
        queue.push(job);
        signal?.addEventListener('abort', job.onAbort, { once: true });
        dispatch();
      });
    },
    close() {
      closing ??= (async () => {
        const error = closedError();
        for (const job of queue.splice(0)) {
          job.signal?.removeEventListener('abort', job.onAbort);
          job.reject(error);
        }
        const threadsToEnd = pool.splice(0);
        for (const parser of threadsToEnd) {
          parser.isGone = true;
          const job = parser.job;
          release(parser);
          job?.reject(error);
        }
        await Promise.all(threadsToEnd.map((parser) => parser.worker.terminate()));
      })();
      return closing;
    },
  };
}
