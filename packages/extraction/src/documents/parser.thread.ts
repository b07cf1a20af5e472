/**
 * A document parser thread (parser-pool.ts starts it): runs extractDocument on each request
 * and answers with the document or the error, one request at a time.
 */
import { parentPort } from 'node:worker_threads';
import { extractDocument } from './extract-document.js';
import { isDocumentErrorType } from './errors.js';
import type { ParseReply, ParseRequest } from './parser-pool.js';

if (!parentPort) throw new Error('parser.thread.js runs only as a worker thread');
const port = parentPort;

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
