import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extractionFragment, fragmentDefaults } from '@gleaner/config';
import type { WorkQueueName } from '@gleaner/queue';
import type { FixtureLlmServer } from '@gleaner/testing';
import { createLlmDeps } from '@gleaner/worker';
import type { InProcessSystemOptions } from './in-process-system.js';

/**
 * Postings that reach the LLM stage: career pages without structured data (the rules read no
 * company, location or description from them), crawled through a site registered with
 * `llm_extraction: true`, by in-process worker replicas that also serve `llm-extract` against the
 * fixture model.
 */

export interface PlainPage {
  title: string;
  /** The page's body HTML. */
  body: string;
}

export interface PlainPagesSite {
  /** Its origin; `${url}/jobs` lists every page (a career-site `listingUrl`). */
  url: string;
  /** The whole HTML of the page at `path`. */
  page(path: string): string;
  close(): Promise<void>;
}

/** Serves `pages` (by path) on loopback, with a listing at `/jobs` linking each of them. */
export async function startPlainPagesSite(
  pages: Record<string, PlainPage>,
): Promise<PlainPagesSite> {
  const page = (path: string) => {
    const { title, body } = pages[path]!;
    return `<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`;
  };
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    if (path === '/jobs') {
      const links = Object.keys(pages)
        .map((href) => `<li><a href="${href}">${pages[href]!.title}</a></li>`)
        .join('');
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(`<!doctype html><html><body><ul>${links}</ul></body></html>`);
    } else if (pages[path]) {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(page(path));
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    page,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The prompt version the replicas queue extractions under. */
export const LLM_VERSION = '1.0.0';
/** Attempts of an extraction job, retried at once: a failing model fails it for good quickly. */
export const LLM_MAX_ATTEMPTS = 2;

/**
 * `startInProcessSystem`'s `more`: each replica serves `queues` too (`llm-extract` by default), with extraction on, no
 * provider limits and no model settings (Groq's defaults, `openai/gpt-oss-20b` then `-120b`),
 * against `llm` through the real client.
 */
export function llmStage(
  llm: FixtureLlmServer,
  queues: WorkQueueName[] = ['llm-extract'],
): NonNullable<InProcessSystemOptions['more']> {
  return (producer, prefix) => ({
    deps: {
      extraction: { version: LLM_VERSION, maxAttempts: LLM_MAX_ATTEMPTS, retryBaseMs: 0 },
      llm: createLlmDeps(
        {
          ...fragmentDefaults(extractionFragment),
          EXTRACTION_ENABLED: true,
          EXTRACTION_RATE_LIMIT_RPM: 0,
          EXTRACTION_RATE_LIMIT_TPM: 0,
          QUEUE_PREFIX: prefix,
          GROQ_API_KEY: 'test-key',
          GROQ_BASE_URL: llm.baseURL,
        },
        producer,
      ),
    },
    queues,
    concurrency: { 'llm-extract': 2 },
  });
}
