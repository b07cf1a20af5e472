/**
 * A document parser thread (parser-pool.ts starts it): runs extractDocument on each request
 * and answers with the document or the error, one request at a time.
 */
import { parentPort } from 'node:worker_threads';
import { getResolvedPDFJS } from 'unpdf';
import { extractDocument } from './extract-document.js';
import { isDocumentErrorType } from './errors.js';
import type { ParseReply, ParseRequest } from './parser-pool.js';

if (!parentPort) throw new Error('parser.thread.js runs only as a worker thread');
const port = parentPort;

// pdf.js (1.7 MB) loads on first use: load it now, while the thread waits for work, so that a
// replacement thread's first PDF does not spend its time budget on it. If it fails to load,
// the same import fails again in the first PDF's parse, which reports it.
getResolvedPDFJS().catch(() => undefined);

async function answer({ id, bytes, hints, limits }: ParseRequest): Promise<ParseReply> {
  try {
    return { id, document: await extractDocument(bytes, hints, limits) };
  } catch (error) {
    const errorType = (error as { errorType?: unknown } | null)?.errorType;
    const code = (error as { code?: unknown } | null)?.code;
    return {
      id,
      error: {
        errorType: isDocumentErrorType(errorType) ? errorType : 'unknown',
        code: typeof code === 'string' ? code : undefined,
        message: error instanceof Error ? error.message : String(error),
      },
    };
  }
}

port.on('message', (request: ParseRequest) => {
  void answer(request).then((reply) => port.postMessage(reply));
});
