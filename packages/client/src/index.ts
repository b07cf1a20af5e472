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

export type UntypedResult<T> =
  | { data: T; error?: never; response: Response }
  | { data?: never; error: Problem | string | undefined; response: Response };

/**
 * Calls a route the committed document does not describe yet, with the same base URL and key,
 * answering in the typed client's shape; the caller names the type it expects back. Meant for
 * routes being built alongside a client release: once they are in `openapi.json`, use the typed
 * client instead.
 */
export async function callUntyped<T>(
  options: GleanerClientOptions,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  init: { query?: Record<string, string | number | boolean | undefined>; body?: unknown } = {},
): Promise<UntypedResult<T>> {
  const url = new URL(options.baseUrl.replace(/\/+$/, '') + path);
  for (const [name, value] of Object.entries(init.query ?? {})) {
    if (value !== undefined) url.searchParams.set(name, String(value));
  }
  const headers: Record<string, string> = { ...headersFor(options.apiKey) };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const request = new Request(url, {
    method,
    headers,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const response = await (options.fetch ?? fetch)(request);
  const text = await response.text();
  let body: unknown = text === '' ? undefined : text;
  try {
    if (text !== '') body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's error page): handed on as text.
  }
  return response.ok
    ? { data: body as T, response }
    : { error: body as Problem | string | undefined, response };
}
