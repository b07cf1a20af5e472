import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths };

/** An RFC 9457 problem, as every error of the API is answered. */
export type Problem = components['schemas']['Problem'];
export type Site = components['schemas']['Site'];
export type Run = components['schemas']['Run'];
export type Posting = components['schemas']['Posting'];

export interface GleanerClientOptions {
  /** The API's origin, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** Another fetch (a test's, or one with a proxy); the global fetch by default. */
  fetch?: (input: Request) => Promise<Response>;
  /**
   * How often a request refused before the API acted on it is sent again after the `Retry-After`
   * it names: a `429` (a rate limit, the uploads in flight per key) or a `503` with `Retry-After`
   * (the API shedding load). 2 by default; 0 answers the refusal at once.
   */
  retriesWhenBusy?: number;
}

/** The longest `Retry-After` waited for; a longer one is answered to the caller. */
const MAX_RETRY_AFTER_MS = 10_000;

/** Sends a refused request again after its `Retry-After`, at most `retries` times. */
function retryingWhenBusy(
  send: (input: Request) => Promise<Response>,
  retries: number,
): (input: Request) => Promise<Response> {
  return async (input) => {
    for (let attempt = 0; ; attempt++) {
      // The body can be read once: the next attempt sends a copy taken before this one.
      const spare = attempt < retries ? input.clone() : undefined;
      const response = await send(input);
      const retryAfter = response.headers.get('retry-after');
      // Seconds only: the API never answers an HTTP date here.
      const waitMs =
        retryAfter !== null && /^\d+$/.test(retryAfter.trim())
          ? Number(retryAfter) * 1000
          : undefined;
      if (
        spare === undefined ||
        (response.status !== 429 && response.status !== 503) ||
        waitMs === undefined ||
        waitMs > MAX_RETRY_AFTER_MS
      )
        return response;
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      input = spare;
    }
  };
}

export type GleanerClient = Client<paths>;

function headersFor(apiKey: string | undefined): Record<string, string> {
  return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
}

/**
 * A typed client of Gleaner's API: every path, parameter, body and answer typed from the
 * OpenAPI document (`openapi.json`, regenerated with `pnpm openapi`). Calls answer
 * `{ data }` on success and `{ error }` (a `Problem`) otherwise, as openapi-fetch does.
 *
 *   const api = createGleanerClient({ baseUrl: 'http://127.0.0.1:8000', apiKey });
 *   const { data, error } = await api.GET('/sites/{site}', { params: { path: { site: 'acme' } } });
 */
export function createGleanerClient(options: GleanerClientOptions): GleanerClient {
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: headersFor(options.apiKey),
    fetch: retryingWhenBusy(
      options.fetch ?? ((input) => globalThis.fetch(input)),
      options.retriesWhenBusy ?? 2,
    ),
  });
}
