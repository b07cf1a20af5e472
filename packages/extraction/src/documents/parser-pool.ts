import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { DocumentHints } from './detect-format.js';
import { DocumentExtractionError, type DocumentErrorType } from './errors.js';
import {
  defaultDocumentLimits,
  type DocumentLimits,
  type ExtractedDocument,
} from './extract-document.js';

/**
 * extractDocument in child processes that can be stopped. pdf.js and mammoth are synchronous for
 * long stretches and have no cancellation: a hostile or merely huge document would hold an event
 * loop for as long as it likes, and a promise race would only stop waiting for it. Here a
 * document that runs past its time, or whose job is cancelled, has its process killed and
 * replaced; a process that hits its heap cap, or crashes, dies alone, not the worker.
 *
 * Processes rather than worker threads: V8's heap flags are process-wide, and the worker runs
 * with `--max-old-space-size=1792` for its crawl pages (decision 0005). A thread inherits that
 * cap, and under 2 GB V8 grows a heap cautiously and collects it far more often: in a worker
 * started with it, `pnpm bench documents` spent 14–19 ms of worker CPU per document in threads
 * against 9 without the flag. A child process gets its own flags (and its own crash).
 *
 * Hand-written, like the page analyser's pool (services/worker/src/page-analysis). A process
 * parses one document at a time. When every process is busy, each is also sent the next
 * document ahead of time, which it starts the moment it answers the one before: a small parse
 * (milliseconds) would otherwise wait for the answer to cross the worker's event loop, busy with
 * its own jobs, and for the next request to come back. Further documents queue here.
 */
export interface DocumentParserPool {
  /**
   * Runs extractDocument in a parser process. At `timeoutMs` (counted from when a process takes
   * the document, not while it queues or waits sent ahead) the process is killed and replaced and the promise
   * rejects with DocumentExtractionError `timeout`; when `signal` aborts, likewise with the
   * signal's reason (a queued document is just dropped). A process that dies, e.g. at its heap
   * cap, rejects with `corruption` ("exceeded the parser's memory limit") or `unknown`, and is
   * replaced.
   */
  extract(
    bytes: Uint8Array,
    hints?: DocumentHints,
    options?: { signal?: AbortSignal; timeoutMs?: number; limits?: DocumentLimits },
  ): Promise<ExtractedDocument>;
  /** Kills the processes; documents queued or being parsed are rejected. Idempotent. */
  close(): Promise<void>;
}

export interface DocumentParserPoolOptions {
  /** Parser processes, each parsing one document at a time. */
  processes: number;
  /** Default time a process may spend on one document. */
  timeoutMs: number;
  /** Old-generation heap cap per process (`--max-old-space-size`); default 2048. */
  maxHeapMb?: number;
  /**
   * The processes' module, for tests that need a parser to misbehave on cue (spin, run out of
   * memory); it must answer ParseRequest with ParseReply over IPC. By default this package's
   * `parser.process`.
   */
  entry?: string | URL;
}

/** One document sent to a process (structured-cloned over the IPC channel). */
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

interface ParserProcess {
  child: ChildProcess;
  /** The document it is parsing (its timer runs). */
  job: Job | null;
  /** The document sent ahead, which it parses after `job`. */
  next: Job | null;
  /** `next` was given up on (its signal aborted): its answer is dropped when it comes. */
  nextAbandoned: boolean;
  timer: NodeJS.Timeout | undefined;
  /** `job` was given up on while it was sent ahead: its answer is dropped when it comes. */
  currentAbandoned: boolean;
  /** It has answered at least once: its module loads, so a replacement will too. */
  hasAnswered: boolean;
  isGone: boolean;
  /** The end of its stderr, to tell a heap exhaustion from another crash. */
  stderrTail: string;
}

/**
 * V8 sizes an old generation's growth by its heap cap: under 2 GB (64-bit) it grows the heap by
 * less than 4× per collection, down to 1.1× at 256 MB, and collects fully that much more often.
 * Capped at 512 MB, a parser did the bench's mixed resumes at 47–84 documents/s where the same
 * parsers uncapped did 148–167; capped at 2 GB, 134–166. The cap is for a document that runs
 * away; the byte counting of zips and PDF streams bounds the rest.
 */
const DEFAULT_MAX_HEAP_MB = 2048;

/**
 * V8 flags that keep a parser's memory near its live heap (about 20 MB of pdf.js, mammoth and
 * one document) at about the same CPU per document, so that two parsers and their worker fit where
 * one did. Under its 2 GB cap V8 lets the old generation grow 4× past what survives a collection,
 * and a parser's peak RSS wandered between 128 and 165 MB with where the last collection fell.
 * - `--heap-growing-percent=150` grows it 2.5× instead. Less costs CPU: at 100 % a parse took
 *   5.8–5.9 ms where it takes 4.8–5.2 at 150, for 112–121 MB of peak RSS against 121–129; at 50 %
 *   three times the CPU (and under a smaller cap, see above).
 * - `--max-semi-space-size=4`: a young generation of 2 × 4 MB rather than 2 × 8 (the default at
 *   this cap is 16). At 8 a parse cost more, not less (6.9–7.4 ms at 100 %, 134–145 MB); at 2 it
 *   saved 6 MB for 0.1–0.9 ms more.
 * - `--v8-pool-size=1`: one GC helper thread, not one per core. A parser shares the machine
 *   with its worker and the other parsers, so more helpers only contend for the same cores.
 * Measured on a pool of two parsers alone, fed the mixed resumes of `pnpm bench documents` after
 * a warm-up of 600 each, two runs of each setting, alternating. Without any of these flags a parser peaked at 167–179 MB.
 */
const PARSER_V8_FLAGS = [
  '--heap-growing-percent=150',
  '--max-semi-space-size=4',
  '--v8-pool-size=1',
] as const;

/** V8's last words when a heap cap is reached. */
const OUT_OF_MEMORY = /heap out of memory|Allocation failed|Reached heap limit/;

/**
 * How to start a parser. From the build, `parser.process.js` beside this file. From the sources
 * (vitest, tsx: this file is `.ts`), with tsx's loader and workspace packages resolved to their
 * sources, as in the tests. Never with the worker's own execArgv (its heap flags, see above):
 * the pool gives the parser its heap cap on the command line, which also wins over any
 * `--max-old-space-size` in NODE_OPTIONS.
 */
function defaultEntry(): { entry: string; execArgv: string[] } {
  const self = import.meta.url;
  if (!self.endsWith('.ts'))
    return { entry: fileURLToPath(new URL('./parser.process.js', self)), execArgv: [] };
  const tsx = pathToFileURL(createRequire(self).resolve('tsx/esm')).href;
  return {
    entry: fileURLToPath(new URL('./parser.process.ts', self)),
    execArgv: [`--import=${tsx}`, '--conditions=@gleaner/source'],
  };
}

function closedError(): DocumentExtractionError {
  return new DocumentExtractionError('unknown', 'the document parser pool is closed', {
    code: 'DOCUMENT_PARSER_CLOSED',
  });
}

export function createDocumentParserPool(options: DocumentParserPoolOptions): DocumentParserPool {
  const { processes, timeoutMs, maxHeapMb = DEFAULT_MAX_HEAP_MB } = options;
  if (!Number.isInteger(processes) || processes < 1)
    throw new RangeError(`document parser processes must be an integer >= 1, got ${processes}`);
  if (!(timeoutMs > 0)) throw new RangeError(`timeoutMs must be > 0, got ${timeoutMs}`);
  const program =
    options.entry === undefined
      ? defaultEntry()
      : {
          entry: options.entry instanceof URL ? fileURLToPath(options.entry) : options.entry,
          execArgv: [],
        };

  const pool: ParserProcess[] = [];
  const queue: Job[] = [];
  let nextId = 0;
  let closing: Promise<void> | undefined;

  function start(): ParserProcess {
    const child = fork(program.entry, [], {
      execArgv: [...program.execArgv, `--max-old-space-size=${maxHeapMb}`, ...PARSER_V8_FLAGS],
      // Uint8Array over IPC; pdf.js's console warnings are not the worker's log lines.
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    const parser: ParserProcess = {
      child,
      job: null,
      next: null,
      nextAbandoned: false,
      currentAbandoned: false,
      timer: undefined,
      hasAnswered: false,
      isGone: false,
      stderrTail: '',
    };
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      parser.stderrTail = (parser.stderrTail + chunk).slice(-4096);
    });
    child.on('message', (reply: ParseReply) => {
      parser.hasAnswered = true;
      const job = parser.job;
      if (job === null || job.request.id !== reply.id) return;
      const abandoned = release(parser);
      advance(parser);
      if (abandoned) {
        // Already rejected when its signal aborted.
      } else if ('document' in reply) job.resolve(reply.document);
      else
        job.reject(
          new DocumentExtractionError(reply.error.errorType, reply.error.message, {
            ...(reply.error.code === undefined ? {} : { code: reply.error.code }),
          }),
        );
      dispatch();
    });
    child.on('error', (error) => {
      gone(
        parser,
        new DocumentExtractionError('unknown', `a parser process failed: ${error.message}`, {
          cause: error,
        }),
      );
    });
    // 'close', not 'exit': stderr has been read to its end, so heap exhaustion can be told.
    child.on('close', (code, signal) => {
      gone(
        parser,
        OUT_OF_MEMORY.test(parser.stderrTail)
          ? new DocumentExtractionError(
              'corruption',
              `the document exceeded the parser's memory limit (${maxHeapMb} MB of heap)`,
            )
          : new DocumentExtractionError(
              'unknown',
              `a parser process exited with ${signal ?? `code ${code}`}`,
            ),
      );
    });
    pool.push(parser);
    return parser;
  }

  /**
   * The process is done with its job (answered, timed out or given up on). True when the job
   * had been abandoned while sent ahead, and so is settled already.
   */
  function release(parser: ParserProcess): boolean {
    clearTimeout(parser.timer);
    parser.timer = undefined;
    const job = parser.job;
    parser.job = null;
    job?.signal?.removeEventListener('abort', job.onAbort);
    const abandoned = parser.currentAbandoned;
    parser.currentAbandoned = false;
    return abandoned;
  }

  /** The process has moved on to the document sent ahead: its time starts now. */
  function advance(parser: ParserProcess): void {
    const next = parser.next;
    if (next === null) return;
    parser.next = null;
    parser.currentAbandoned = parser.nextAbandoned;
    parser.nextAbandoned = false;
    run(parser, next);
  }

  /**
   * The document sent ahead to a process that is going away: queued again at the front, to
   * be parsed by another (it has not started: the process was busy with the one before).
   */
  function takeBackNext(parser: ParserProcess): void {
    const next = parser.next;
    parser.next = null;
    const abandoned = parser.nextAbandoned;
    parser.nextAbandoned = false;
    if (next !== null && !abandoned) queue.unshift(next);
  }

  /** Starts the clock on `job`, the document `parser` is now parsing. */
  function run(parser: ParserProcess, job: Job): void {
    parser.job = job;
    parser.timer = setTimeout(() => {
      const abandoned = parser.currentAbandoned;
      stop(parser);
      if (!abandoned)
        job.reject(
          new DocumentExtractionError(
            'timeout',
            `parsing the document took longer than ${job.timeoutMs} ms`,
          ),
        );
      dispatch();
    }, job.timeoutMs);
  }

  /** Sends `job` to the process, to parse now or after the one it is parsing. */
  function send(parser: ParserProcess, job: Job): void {
    parser.child.send(job.request, (error) => {
      if (!error || parser.isGone) return;
      if (parser.job !== job && parser.next !== job) return;
      // The channel is broken: nothing sent to this process will be answered.
      const failure = new DocumentExtractionError(
        'unknown',
        `could not reach a parser: ${error.message}`,
      );
      const rejected: Job[] = [];
      if (parser.next !== null && !parser.nextAbandoned) rejected.push(parser.next);
      parser.next = null;
      parser.nextAbandoned = false;
      if (parser.job !== null && !parser.currentAbandoned) rejected.push(parser.job);
      stop(parser);
      for (const each of rejected) {
        each.signal?.removeEventListener('abort', each.onAbort);
        each.reject(failure);
      }
      dispatch();
    });
  }

  /**
   * A process that died by itself: its document fails with `error`. It is replaced at once if
   * it had worked before; one that never answered (its module does not load) is replaced only
   * when a document needs a parser, so a broken build fails documents instead of looping.
   */
  function gone(parser: ParserProcess, error: DocumentExtractionError): void {
    if (parser.isGone) return;
    parser.isGone = true;
    pool.splice(pool.indexOf(parser), 1);
    const job = parser.job;
    takeBackNext(parser);
    if (!release(parser)) job?.reject(error);
    if (closing !== undefined) return;
    if (parser.hasAnswered) start();
    dispatch();
  }

  /**
   * Ends a process that is still parsing a document we gave up on, and starts another; the
   * document sent ahead to it goes back to the queue.
   */
  function stop(parser: ParserProcess): void {
    parser.isGone = true;
    pool.splice(pool.indexOf(parser), 1);
    takeBackNext(parser);
    release(parser);
    parser.child.kill('SIGKILL');
    if (closing === undefined) start();
  }

  function dispatch(): void {
    while (queue.length > 0 && closing === undefined) {
      let parser = pool.find((each) => each.job === null);
      if (parser === undefined && pool.length < processes) parser = start();
      if (parser !== undefined) {
        const job = queue.shift()!;
        run(parser, job);
        send(parser, job);
        continue;
      }
      // Every process is busy: one with nothing sent ahead gets the next document now.
      const ahead = pool.find((each) => each.next === null);
      if (ahead === undefined) return;
      const job = queue.shift()!;
      ahead.next = job;
      send(ahead, job);
    }
  }

  /**
   * The job's signal fired: a queued job is dropped, a running one has its process stopped,
   * one sent ahead is rejected now and its answer dropped when it comes.
   */
  function abort(job: Job, reason: unknown): void {
    const running = pool.find((each) => each.job === job);
    if (running !== undefined) {
      const abandoned = running.currentAbandoned;
      stop(running);
      if (!abandoned) job.reject(reason);
      dispatch();
      return;
    }
    const sentAhead = pool.find((each) => each.next === job);
    if (sentAhead !== undefined) {
      if (sentAhead.nextAbandoned) return;
      sentAhead.nextAbandoned = true;
      job.signal?.removeEventListener('abort', job.onAbort);
      job.reject(reason);
      return;
    }
    const queued = queue.indexOf(job);
    if (queued === -1) return;
    queue.splice(queued, 1);
    job.signal?.removeEventListener('abort', job.onAbort);
    job.reject(reason);
  }

  for (let index = 0; index < processes; index++) start();

  return {
    extract(bytes, hints, extractOptions = {}) {
      if (closing !== undefined) return Promise.reject(closedError());
      const { signal } = extractOptions;
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      return new Promise<ExtractedDocument>((resolve, reject) => {
        const job: Job = {
          request: {
            id: nextId++,
            bytes,
            // Only the two strings: anything else on the object need not survive the clone.
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
        const ending = pool.splice(0);
        for (const parser of ending) {
          parser.isGone = true;
          const job = parser.job;
          const next = parser.nextAbandoned ? null : parser.next;
          parser.next = null;
          next?.signal?.removeEventListener('abort', next.onAbort);
          next?.reject(error);
          if (!release(parser)) job?.reject(error);
        }
        await Promise.all(
          ending.map(
            (parser) =>
              new Promise<void>((resolve) => {
                if (parser.child.exitCode !== null || parser.child.signalCode !== null)
                  return resolve();
                parser.child.once('exit', () => resolve());
                parser.child.kill('SIGKILL');
              }),
          ),
        );
      })();
      return closing;
    },
  };
}
