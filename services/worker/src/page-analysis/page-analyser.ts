import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  type FieldExtractor,
  type PageAnalysis,
  type PageInput,
  type PageReading,
  type StoredPageInput,
} from './analyse-page.js';
import { extractBodyFields } from './body-fields.js';
import { runAnalysisTask } from './run-task.js';
import type { SiteTemplate } from '@gleaner/extraction';
import type {
  TemplateLabelInput,
  TemplateLabelResult,
  TemplateLearnInput,
} from './template-tasks.js';
import { ExtractError, LISTING_CONTENT_TYPE } from './page-fields.js';
import {
  IDLE,
  PROGRESS_PAGE,
  PROGRESS_SEQUENCE,
  type AnalyserThreadData,
  type AnalysisKind,
  type AnalysisReply,
  type AnalysisRequest,
  type AnalysisTasks,
} from './thread-protocol.js';

/**
 * Reads pages (decoding, fingerprints, extraction, visible text: most of a crawl's CPU, and all
 * of the extract and LLM stages') in threads of its own, where a page that runs too long can be
 * stopped: the event loop goes on with fetches, queue and database traffic, and a second core is
 * used.
 *
 * Hand-written rather than piscina: on `pnpm bench pipeline` piscina's per-task messaging cost
 * more than the work it moved (a page's analysis is ~0.3 ms), and the pipeline got slower. Here
 * the pages a turn of the event loop asks for travel to a thread as one message and come back
 * as one: about 20 µs of the event loop's time per page.
 *
 * A page is stopped by ending its thread (a parse cannot be interrupted otherwise), and bounded
 * twice:
 * - by its job's signal (its timeout, its run's cancellation);
 * - by its own time budget (`pageBudgetMs`): past it the page fails with `EXTRACT_PAGE_TOO_SLOW`,
 *   permanent, since the same bytes would take as long again. A page of unclosed tags can take
 *   minutes in a scanner that is quadratic on it (4 MB of `<meta ` took 38 s here), and every
 *   other site's pages sent to the same thread would wait behind it.
 * So that they do not, a page still running after `slowPageMs` leaves the pool with its thread
 * (the slow lane, as many threads as the pool at most; beyond that it waits its turn and starts
 * over in a fresh one), and a new thread takes its place and the pages that were waiting behind
 * it. Pages of real sites take a few milliseconds, a 4 MB one under a second.
 */
export interface PageAnalyser {
  /**
   * A fetched page's fingerprints, unchanged check and extraction, for the crawl. Rejects with
   * `EXTRACT_THREAD_FAILED` (transient) when the page's thread died, or on close; with
   * `EXTRACT_PAGE_TOO_SLOW` (permanent) past the page's budget; and with `signal`'s reason when
   * it fires first. On the event loop (no threads) an analysis cannot be interrupted: the signal
   * is only checked before it starts, and there is no budget.
   */
  analyse(input: PageInput, signal?: AbortSignal): Promise<PageAnalysis>;
  /** A stored page's fields and, when asked, its visible text: the extract and LLM stages. */
  read(input: StoredPageInput, signal?: AbortSignal): Promise<PageReading>;
  /** A site's template learned from its stored pages (decision 0028), under one page's budget. */
  learn(
    input: TemplateLearnInput,
    signal?: AbortSignal,
  ): Promise<{ template: SiteTemplate | null }>;
  /** A model's labels for one page grounded in the site's template. */
  label(input: TemplateLabelInput, signal?: AbortSignal): Promise<TemplateLabelResult>;
  /** Ends the threads; pages still being analysed are rejected. Idempotent. */
  close(): Promise<void>;
}

export interface PageAnalyserOptions {
  /**
   * Threads; 0 analyses every page on the caller's event loop, where nothing can stop it: for
   * tests and tools only (a worker's configuration refuses 0).
   */
  threads: number;
  /** How long one page's analysis may take (ms). Default `DEFAULT_PAGE_BUDGET_MS`. */
  pageBudgetMs?: number;
  /**
   * After how long a page leaves the pool for the slow lane (ms). Default the lesser of 1 s and
   * half the budget: 4 MB pages of real markup took 0.3–0.6 s here on a loaded machine.
   */
  slowPageMs?: number;
  /** The threads' module; by default the build's `analyse-page.thread.js`. */
  threadEntry?: string;
}

/**
 * A page's budget by default: several times what the largest page under the body cap takes when
 * the scanners are linear, and short enough that a site of hostile pages ends its run in a
 * minute rather than holding crawl jobs to their two-minute timeout.
 */
export const DEFAULT_PAGE_BUDGET_MS = 5000;

type Result = AnalysisTasks[AnalysisKind]['result'];

interface Task {
  /** The caller's request: what is sent again when the page moves to another thread. */
  request: AnalysisRequest;
  resolve(result: Result): void;
  reject(error: Error): void;
  /** The thread holding it; undefined while it waits for a place in the slow lane. */
  thread: AnalyserThread | undefined;
}

interface AnalyserThread {
  worker: Worker;
  /** `pool` takes new pages; `slow` left the pool with one page that ran past `slowPageMs`. */
  lane: 'pool' | 'slow';
  /** Ids of the tasks it holds. */
  tasks: Set<number>;
  /** Its module loaded (it said so): a replacement's will too. */
  isReady: boolean;
  /** Ended on purpose, its tasks moved or settled first: its exit is no failure. */
  isRetired: boolean;
  /** Requests waiting for the end of the current turn of the event loop. */
  outbox: AnalysisRequest[];
  /** What the thread writes as it goes (thread-protocol.ts). */
  progress: Int32Array;
  /** The page sequence the watchdog last saw, and when it first saw it (performance.now()). */
  seen: { sequence: number; at: number };
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
const extractAny: FieldExtractor = (input, body, html, onTemplateFit) =>
  extractBodyFields({ ...input, body, ...(html === undefined ? {} : { html }) }, onTemplateFit);

function threadFailed(message: string): ExtractError {
  return new ExtractError(message, 'EXTRACT_THREAD_FAILED', 'transient');
}

function runInline(request: AnalysisRequest): Result {
  return runAnalysisTask(request, extractAny);
}

export function createPageAnalyser({
  threads,
  pageBudgetMs = DEFAULT_PAGE_BUDGET_MS,
  slowPageMs = Math.min(1000, Math.floor(pageBudgetMs / 2)),
  threadEntry = defaultThreadEntry(),
}: PageAnalyserOptions): PageAnalyser {
  if (!Number.isInteger(threads) || threads < 0)
    throw new RangeError(`page analyser threads must be an integer >= 0, got ${threads}`);
  if (!(pageBudgetMs > 0 && slowPageMs > 0))
    throw new RangeError(
      `page analyser budgets must be > 0, got ${pageBudgetMs} and ${slowPageMs} ms`,
    );

  let closing: Promise<void> | undefined;
  let nextId = 0;
  const analyseInline = (request: AnalysisRequest, signal?: AbortSignal) =>
    Promise.resolve().then(() => {
      signal?.throwIfAborted();
      return runInline(request);
    });
  const submitInline = <K extends AnalysisKind>(
    kind: K,
    input: AnalysisTasks[K]['input'],
    signal?: AbortSignal,
  ) =>
    analyseInline({ id: -1, kind, input } as AnalysisRequest, signal) as Promise<
      AnalysisTasks[K]['result']
    >;
  if (threads === 0)
    return {
      analyse: (input, signal) => submitInline('crawl', input, signal),
      read: (input, signal) => submitInline('read', input, signal),
      learn: (input, signal) => submitInline('learn', input, signal),
      label: (input, signal) => submitInline('label', input, signal),
      close: () => Promise.resolve(),
    };

  const tasks = new Map<number, Task>();
  /** Pages that ran past `slowPageMs` while the slow lane was full, waiting for a place in it. */
  const slowQueue: number[] = [];
  const slowLane = new Set<AnalyserThread>();
  let flushScheduled = false;
  /** Why the last thread that never loaded its module did not: a pool without threads says so. */
  let loadFailure = 'no thread started';
  /**
   * A thread loaded ahead while pages are being set aside, so that the next pool thread to leave
   * is replaced at once: a new thread answers its first page after 1.1–1.5 s on a loaded 2-core
   * machine (its module loads the extraction package), and the pages behind a slow one would
   * wait that long. Ended when the slow lane empties.
   */
  let spare: AnalyserThread | undefined;

  function start(lane: AnalyserThread['lane']): AnalyserThread {
    const progress = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
    progress[PROGRESS_PAGE] = IDLE;
    const workerData: AnalyserThreadData = { progress: progress.buffer };
    const worker = new Worker(threadEntry, {
      workerData,
      // None of the process's own options: V8 flags (`--max-semi-space-size`, the worker's launcher
      // gives it one) are refused in a thread, and a resolution condition for the process's loader
      // (tests resolve workspace packages to TypeScript sources) would point the build at
      // files it cannot load. The thread's heap is set here instead.
      execArgv: [],
      // Young generation capped at 8 MB (V8's default grows to 48): pages die young here, and
      // a larger one raised the worker's peak RSS on `pnpm bench pipeline` (decision 0005).
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
    });
    const thread: AnalyserThread = {
      worker,
      lane,
      tasks: new Set(),
      isReady: false,
      isRetired: false,
      outbox: [],
      progress,
      seen: { sequence: 0, at: performance.now() },
    };
    worker.on('message', (message: 'ready' | AnalysisReply[]) => {
      thread.isReady = true;
      if (message === 'ready') return;
      for (const reply of message) {
        const task = tasks.get(reply.id);
        // Abandoned by its job, or moved to another thread since: its answer is not wanted here.
        if (task?.thread !== thread) continue;
        tasks.delete(reply.id);
        thread.tasks.delete(reply.id);
        if ('result' in reply) task.resolve(reply.result);
        else task.reject(threadFailed(`page analysis failed: ${reply.error}`));
      }
      // A slow lane thread holds one page: once it is answered, the thread makes room.
      if (thread.lane === 'slow' && thread.tasks.size === 0) retire(thread);
    });
    // A thread that dies fails the pages it held (their jobs are retried) and is replaced. One
    // whose module never loaded is not: a broken build fails every page, loudly, rather than
    // reading pages on the event loop where nothing could stop them.
    const onGone = (reason: string) => {
      if (thread.isRetired) return;
      thread.isRetired = true;
      if (!thread.isReady) loadFailure = `page analyser thread ${reason}`;
      if (thread === spare) spare = undefined;
      for (const id of thread.tasks) {
        const task = tasks.get(id);
        tasks.delete(id);
        task?.reject(threadFailed(`page analyser thread ${reason}`));
      }
      thread.tasks.clear();
      leave(thread, thread.isReady);
    };
    worker.on('error', (error) => onGone(`failed: ${error.message}`));
    worker.on('exit', (code) => onGone(`exited with code ${code}`));
    return thread;
  }

  const pool: AnalyserThread[] = Array.from({ length: threads }, () => start('pool'));

  /** Takes a thread out of its lane: a pool thread's slot gets a new one; a slow lane's place the next slow page. */
  function leave(thread: AnalyserThread, shouldReplace: boolean): void {
    if (thread.lane === 'slow') {
      slowLane.delete(thread);
      startSlowPages();
      if (slowLane.size === 0 && spare !== undefined) {
        void spare.worker.terminate();
        spare.isRetired = true;
        spare = undefined;
      }
      return;
    }
    const index = pool.indexOf(thread);
    if (index === -1) return;
    if (closing === undefined && shouldReplace) {
      pool[index] = spare ?? start('pool');
      spare = undefined;
    } else {
      pool.splice(index, 1);
    }
  }

  /** The least busy pool thread; ties go to the first. */
  function poolThread(): AnalyserThread | undefined {
    let chosen = pool[0];
    for (const candidate of pool)
      if (chosen && candidate.tasks.size < chosen.tasks.size) chosen = candidate;
    return chosen;
  }

  function assign(id: number, task: Task, thread: AnalyserThread): void {
    task.thread = thread;
    thread.tasks.add(id);
    // The thread gets its own copy of the bytes, moved rather than cloned: the caller keeps
    // the body to store it, and cloning a view would copy its whole underlying buffer.
    const { request } = task;
    thread.outbox.push({
      ...request,
      input: { ...request.input, body: new Uint8Array(request.input.body) },
    } as AnalysisRequest);
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  }

  /** Hands tasks to the pool, or fails them when there is no pool left. */
  function reassign(ids: Iterable<number>): void {
    for (const id of ids) {
      const task = tasks.get(id);
      if (!task) continue;
      const thread = closing === undefined ? poolThread() : undefined;
      if (thread) {
        assign(id, task, thread);
      } else {
        tasks.delete(id);
        task.reject(threadFailed(closing ? 'page analyser is closed' : loadFailure));
      }
    }
  }

  /**
   * Ends a thread on purpose (a page it runs is over its time, or nobody wants it any more). The
   * pages waiting behind that page go to the pool, whose new thread starts at once: they were
   * waiting, not failing.
   */
  function retire(thread: AnalyserThread): void {
    if (thread.isRetired) return;
    thread.isRetired = true;
    const waiting = [...thread.tasks];
    thread.tasks.clear();
    thread.outbox = [];
    leave(thread, true);
    reassign(waiting);
    void thread.worker.terminate();
  }

  /**
   * A pool thread's page ran past `slowPageMs`: the thread takes it to the slow lane and a new one
   * takes its place, or, with the slow lane full, the page waits for a place there.
   */
  function setAside(thread: AnalyserThread, id: number, task: Task): void {
    thread.tasks.delete(id);
    if (slowLane.size < threads) {
      const waiting = [...thread.tasks];
      thread.tasks = new Set([id]);
      thread.outbox = [];
      leave(thread, true);
      thread.lane = 'slow';
      slowLane.add(thread);
      reassign(waiting);
    } else {
      task.thread = undefined;
      slowQueue.push(id);
      retire(thread);
    }
    spare ??= start('pool');
  }

  /** Starts waiting slow pages, each in a fresh thread of its own, while the slow lane has room. */
  function startSlowPages(): void {
    while (closing === undefined && slowLane.size < threads && slowQueue.length > 0) {
      const id = slowQueue.shift()!;
      const task = tasks.get(id);
      if (!task) continue;
      const thread = start('slow');
      slowLane.add(thread);
      assign(id, task, thread);
    }
  }

  function flush(): void {
    flushScheduled = false;
    for (const thread of [...pool, ...slowLane]) {
      if (thread.outbox.length === 0) continue;
      const batch = thread.outbox;
      thread.outbox = [];
      thread.worker.postMessage(
        batch,
        batch.map((request) => request.input.body.buffer as ArrayBuffer),
      );
    }
  }

  /**
   * Watches what each thread is analysing, from the progress it writes: no message per page. A
   * page counts from when its sequence number was first seen, at most a tick after it began.
   */
  function watch(): void {
    const now = performance.now();
    for (const thread of [...pool, ...slowLane]) {
      if (thread.isRetired) continue;
      // The page before the sequence: the thread writes them the other way round.
      const page = Atomics.load(thread.progress, PROGRESS_PAGE);
      const sequence = Atomics.load(thread.progress, PROGRESS_SEQUENCE);
      if (sequence !== thread.seen.sequence) {
        thread.seen = { sequence, at: now };
        continue;
      }
      if (page === IDLE) continue;
      const elapsed = now - thread.seen.at;
      const task = tasks.get(page);
      const held = task?.thread === thread ? task : undefined;
      if (thread.lane === 'pool') {
        if (elapsed < slowPageMs) continue;
        if (held) setAside(thread, page, held);
        else retire(thread);
      } else if (elapsed >= pageBudgetMs) {
        if (held) {
          tasks.delete(page);
          thread.tasks.delete(page);
          held.reject(
            new ExtractError(
              `page analysis took longer than ${pageBudgetMs} ms`,
              'EXTRACT_PAGE_TOO_SLOW',
              'permanent',
            ),
          );
        }
        retire(thread);
      }
    }
  }
  const watchdog = setInterval(watch, Math.max(10, Math.min(100, slowPageMs / 5)));
  watchdog.unref();

  /** Gives up on page `id` for its job: wherever it is, it stops taking time. */
  function abandon(id: number): void {
    const task = tasks.get(id);
    if (!task) return;
    tasks.delete(id);
    const { thread } = task;
    if (thread === undefined) {
      const queued = slowQueue.indexOf(id);
      if (queued !== -1) slowQueue.splice(queued, 1);
      return;
    }
    thread.tasks.delete(id);
    const queued = thread.outbox.findIndex((request) => request.id === id);
    if (queued !== -1) thread.outbox.splice(queued, 1);
    // Being analysed: end its thread. Still waiting in the thread's batch, it is left there and
    // its answer dropped: the watchdog ends the thread if it then runs too long.
    else if (Atomics.load(thread.progress, PROGRESS_PAGE) === id) retire(thread);
    if (thread.lane === 'slow' && thread.tasks.size === 0) retire(thread);
  }

  function submit<K extends AnalysisKind>(
    kind: K,
    input: AnalysisTasks[K]['input'],
    signal: AbortSignal | undefined,
  ): Promise<AnalysisTasks[K]['result']> {
    if (closing !== undefined) return Promise.reject(threadFailed('page analyser is closed'));
    // ATS payloads are mapped by their site's adapter: small JSON, and threads stay free of
    // the adapters' modules.
    if (input.contentType === LISTING_CONTENT_TYPE) return submitInline(kind, input, signal);
    const thread = poolThread();
    if (thread === undefined) return Promise.reject(threadFailed(loadFailure));
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    const id = nextId;
    // Ids are written by threads as 32-bit integers.
    nextId = (nextId + 1) % 0x7fff_ffff;
    return new Promise<AnalysisTasks[K]['result']>((resolve, reject) => {
      const onAbort = () => {
        abandon(id);
        reject(signal!.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const settled = () => signal?.removeEventListener('abort', onAbort);
      const task: Task = {
        request: { id, kind, input } as AnalysisRequest,
        resolve(result) {
          settled();
          resolve(result);
        },
        reject(error) {
          settled();
          reject(error);
        },
        thread: undefined,
      };
      tasks.set(id, task);
      assign(id, task, thread);
    });
  }

  return {
    analyse: (input, signal) => submit('crawl', input, signal),
    read: (input, signal) => submit('read', input, signal),
    learn: (input, signal) => submit('learn', input, signal),
    label: (input, signal) => submit('label', input, signal),
    close() {
      closing ??= (async () => {
        clearInterval(watchdog);
        for (const id of slowQueue.splice(0)) {
          const task = tasks.get(id);
          tasks.delete(id);
          task?.reject(threadFailed('page analyser is closed'));
        }
        const running = [...pool, ...slowLane, ...(spare ? [spare] : [])];
        await Promise.all(running.map((thread) => thread.worker.terminate()));
      })();
      return closing;
    },
  };
}
