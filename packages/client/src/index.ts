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
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
