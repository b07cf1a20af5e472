/**
 * A page analyser thread (page-analyser.ts starts this file's build): analyses each batch of
 * pages the event loop sends and answers with one message per batch.
 */
import { parentPort } from 'node:worker_threads';
import { analysePage, type FieldExtractor } from './analyse-page.js';
import type { AnalysisReply, AnalysisRequest } from './page-analyser.js';
import { extractPageFields } from './page-fields.js';

if (!parentPort) throw new Error('analyse-page.thread.js runs only as a worker thread');
const port = parentPort;

/** Threads get HTML pages only (page-analyser.ts keeps ATS payloads on the event loop). */
const extractHtml: FieldExtractor = (input, _body, html) => {
  if (html === undefined) throw new Error('an ATS payload reached a page analyser thread');
  return extractPageFields(input.url, html);
};

port.on('message', (batch: AnalysisRequest[]) => {
  const replies: AnalysisReply[] = batch.map(({ id, input }) => {
    try {
      return { id, analysis: analysePage(input, extractHtml) };
    } catch (error) {
      return { id, error: error instanceof Error ? error.message : String(error) };
    }
  });
  port.postMessage(replies);
});
