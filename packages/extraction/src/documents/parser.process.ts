/**
 * A document parser process (parser-pool.ts forks it): runs extractDocument on each request
 * and answers with the document or the error, one request at a time and in the order sent, over
 * the IPC channel.
 */
import { getResolvedPDFJS } from 'unpdf';
import { extractDocument } from './extract-document.js';
import { isDocumentErrorType } from './errors.js';
import type { ParseReply, ParseRequest } from './parser-pool.js';

const send = process.send?.bind(process);
if (!send) throw new Error('parser.process.js runs only as a forked child with an IPC channel');

// The pool that forked this process is gone (stopped, or killed with its worker): so is the work.
process.on('disconnect', () => process.exit(0));

// pdf.js (1.7 MB) loads on first use: load it now, while the process waits for work, so that a
// replacement's first PDF does not spend its time budget on it. If it fails to load, the same
// import fails again in the first PDF's parse, which reports it.
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

// The pool sends the next document ahead while this one parses: it waits its turn, so that only
// one parse runs at a time and the pool's timer, started at the previous answer, is this one's.
let turn: Promise<void> = Promise.resolve();
process.on('message', (request: ParseRequest) => {
  turn = turn
    .then(async () => {
      send(await answer(request));
    })
    // A reply that cannot be sent: the pool is gone, and 'disconnect' ends this process.
    .catch(() => undefined);
});
