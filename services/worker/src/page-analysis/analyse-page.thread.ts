/**
 * A page analyser thread (page-analyser.ts starts this file's build): analyses each batch of
 * pages the event loop sends and answers with one message per batch. Before each page it writes
 * the page's id to the shared progress array, so that the event loop can tell a page that runs
 * too long and the thread that holds it without a message per page.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { FieldExtractor } from './analyse-page.js';
import {
  IDLE,
  PROGRESS_PAGE,
  PROGRESS_SEQUENCE,
  type AnalyserThreadData,
  type AnalysisReply,
  type AnalysisRequest,
} from './thread-protocol.js';
import { extractPageFields } from './page-fields.js';
import { runAnalysisTask } from './run-task.js';

if (!parentPort) throw new Error('analyse-page.thread.js runs only as a worker thread');
const port = parentPort;
const progress = new Int32Array((workerData as AnalyserThreadData).progress);

/** Threads get HTML pages only (page-analyser.ts keeps ATS payloads on the event loop). */
const extractHtml: FieldExtractor = (input, _body, html, onTemplateFit) => {
  if (html === undefined) throw new Error('an ATS payload reached a page analyser thread');
  return extractPageFields(input.url, html, input.template, onTemplateFit);
};

function run(request: AnalysisRequest): AnalysisReply {
  // The sequence first, then the page: the event loop reads them the other way round, so it never
  // pairs a new page with the time an older one started.
  Atomics.add(progress, PROGRESS_SEQUENCE, 1);
  Atomics.store(progress, PROGRESS_PAGE, request.id);
  try {
    return { id: request.id, result: runAnalysisTask(request, extractHtml) };
  } catch (error) {
    return { id: request.id, error: error instanceof Error ? error.message : String(error) };
  } finally {
    Atomics.store(progress, PROGRESS_PAGE, IDLE);
  }
}

/**
 * Pages over this size are analysed after the rest of their batch, whose answers go first: a
 * career page is 30–150 KB, and one of several MB is the likeliest to be slow (4 MB of unclosed
 * tags), or to be stopped with its thread and take the answers held with it along.
 */
const LARGE_PAGE_BYTES = 256 * 1024;
/**
 * After a page this slow, the answers so far go at once rather than with the rest of the batch:
 * a slow page's answer (one the event loop moved to the slow lane) does not wait for the pages
 * behind it, which the event loop has sent to another thread meanwhile.
 */
const SLOW_PAGE_MS = 50;

port.on('message', (batch: AnalysisRequest[]) => {
  const isLarge = (request: AnalysisRequest) => request.input.body.byteLength > LARGE_PAGE_BYTES;
  let replies: AnalysisReply[] = [];
  const send = () => {
    if (replies.length === 0) return;
    port.postMessage(replies);
    replies = [];
  };
  for (const request of [...batch.filter((each) => !isLarge(each)), ...batch.filter(isLarge)]) {
    if (isLarge(request)) send();
    const started = performance.now();
    replies.push(run(request));
    if (performance.now() - started > SLOW_PAGE_MS) send();
  }
  send();
});
// Loaded: a thread that dies from now on is replaced (one that never gets here is a broken build).
port.postMessage('ready');
