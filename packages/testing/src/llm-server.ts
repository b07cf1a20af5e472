/**
 * An OpenAI-compatible chat-completions server on loopback that stands in for Groq in tests and
 * benches: no test ever calls a real provider. It speaks the real protocol (groq-sdk's
 * `POST /openai/v1/chat/completions`, and `/v1/chat/completions` for plain OpenAI clients),
 * checks the bearer key and the body like the real API, answers what a per-test responder says
 * (by default a deterministic resume extractor, see llm-resume.ts), and enforces Groq-like rate
 * limits with Groq's headers and 429 bodies.
 *
 * Rate limits are a rolling window over the last `minuteMs`: an admitted request counts for
 * exactly `minuteMs` from its arrival. Tokens count prompt tokens plus `max_tokens` at admission
 * (the provider must reserve room for the longest answer it may give), replaced by prompt plus
 * completion tokens once the answer is written: the same accounting as the worker's provider
 * gate (reserve the estimate, settle to actual usage). `minuteMs` may be shortened to scale time
 * in benches. Groq itself refills token buckets continuously, which admits at least what the
 * rolling window does: a client that keeps within the window keeps within Groq's limits.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { postingFieldKeys, snakeCase } from '@gleaner/db/posting-fields';
import { fixtureResumeFields } from './llm-resume.js';
import { listenOrigin } from './listen.js';

export interface LlmMessage {
  role: string;
  /** Text parts of an array content are joined with newlines. */
  content: string;
}

/** A chat-completions request as the responder sees it. */
export interface LlmRequest {
  model: string;
  messages: LlmMessage[];
  /** `max_completion_tokens` or `max_tokens`; null when neither was sent. */
  maxTokens: number | null;
  /** The body's `response_format`, as sent (undefined when absent). */
  responseFormat: unknown;
  /** Contents of the system messages, joined by newlines. */
  systemText: string;
  /** Contents of the user messages, joined by newlines. */
  userText: string;
  /** 0 for the first request that reached a responder, then 1, 2, … */
  index: number;
}

interface ReplyOptions {
  /** Wait this long before answering (a slow model). */
  delayMs?: number;
  /** Overrides the usage reported (and counted towards the token limit). */
  usage?: { promptTokens?: number; completionTokens?: number };
}

/**
 * What the server answers: a completion whose message content is `json` serialised or the raw
 * `content` (e.g. invalid JSON), or an error status with an optional body and headers
 * (`retryAfterSeconds` sets `retry-after`).
 */
export type LlmReply = ReplyOptions &
  (
    | { json: unknown }
    | { content: string }
    | {
        status: number;
        body?: unknown;
        headers?: Record<string, string>;
        retryAfterSeconds?: number;
      }
  );

export type LlmResponder = (request: LlmRequest) => LlmReply | Promise<LlmReply>;

/** Replies for responders. */
export const reply = {
  json: (value: unknown): LlmReply => ({ json: value }),
  content: (content: string): LlmReply => ({ content }),
  /** A completion whose content is cut off mid-object: what a model that ran out of tokens sends. */
  invalidJson: (): LlmReply => ({ content: '{"primary_skills": ["TypeScript", "Pyth' }),
  status: (status: number, body?: unknown): LlmReply => ({
    status,
    body: body ?? {
      error: { message: `fixture error ${status}`, type: 'internal_server_error' },
    },
  }),
  /** A 429 like Groq's, with `retry-after` in whole seconds. */
  rateLimited: (retryAfterSeconds: number): LlmReply => ({
    status: 429,
    retryAfterSeconds,
    body: {
      error: {
        message: `Rate limit reached (fixture). Please try again in ${retryAfterSeconds}s.`,
        type: 'requests',
        code: 'rate_limit_exceeded',
      },
    },
  }),
  slow: (delayMs: number, inner: LlmReply): LlmReply => ({ ...inner, delayMs }),
};

export interface LlmRateLimits {
  /** ≤ 0 or absent: no request limit. */
  requestsPerMinute?: number;
  /** ≤ 0 or absent: no token limit. */
  tokensPerMinute?: number;
  /** The window's length; shorter than 60 000 to scale time in benches. Default 60 000. */
  minuteMs?: number;
}

export interface LlmRecordedRequest {
  /** Epoch ms of arrival. */
  at: number;
  path: string;
  /** The bearer key sent, if any. */
  apiKey: string | null;
  /** Null when the body could not be read as a chat-completions request. */
  model: string | null;
  messages: LlmMessage[];
  maxTokens: number | null;
  responseFormat: unknown;
  /** The status answered; 0 while the answer is pending. */
  status: number;
}

export interface LlmServerStats {
  /** Chat-completions requests received, whatever was answered. */
  requests: number;
  /** Requests the rate limits admitted (they reached the responder). */
  allowed: number;
  /** 429s answered, by the limits or by a responder. */
  rateLimited: number;
  /**
   * Requests that arrived while an earlier 429's announced wait (`retry-after-ms` when sent,
   * else `retry-after` seconds) had not passed. A client that honours retry-after across all
   * its replicas makes this 0.
   */
  requestsBeforeRetryAfter: number;
  /** Well-formed requests per model. */
  byModel: Record<string, number>;
  /** Usage reported in successful answers. */
  promptTokens: number;
  completionTokens: number;
}

export interface LlmServerOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** When set, only this bearer key is accepted; otherwise any non-empty key. */
  apiKey?: string;
  /** Default `defaultLlmResponder`. */
  responder?: LlmResponder;
  /** Default none. */
  limits?: LlmRateLimits;
}

export interface FixtureLlmServer {
  /** What groq-sdk's `baseURL` should be set to (it appends `/openai/v1/...`). */
  baseURL: string;
  /** The origin, e.g. http://127.0.0.1:40123; an OpenAI client's base URL is `${url}/v1`. */
  url: string;
  /** Requests received, oldest first (live array). */
  requests: LlmRecordedRequest[];
  stats(): LlmServerStats;
  /** Replaces the responder; undefined restores the default. */
  setResponder(responder: LlmResponder | undefined): void;
  /** Replaces the limits (and forgets the window); undefined removes them. */
  setLimits(limits: LlmRateLimits | undefined): void;
  /** Stops listening and closes connections, dropping delayed answers; safe to call twice. */
  close(): Promise<void>;
}

const CHAT_PATHS = new Set(['/openai/v1/chat/completions', '/v1/chat/completions']);
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** The server's token count of a text: ceil(chars / 4). */
export function llmTokenCount(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Prompt tokens as the server counts them: ceil(total chars of message contents / 4). */
export function llmPromptTokens(messages: readonly { content: string }[]): number {
  return llmTokenCount(messages.map((message) => message.content).join(''));
}

/**
 * A resume extractor: the resume fields of the user text found in the fixture vocabularies
 * (`fixtureResumeFields`). The resume is the text between the first pair of delimiters of the
 * user messages — `<resume>…</resume>` (or `<document>`, `<text>`, `<input>`), `"""…"""`,
 * ```` ```…``` ````, `<<<…>>>` or `---BEGIN …--- … ---END` lines — or the whole user text when
 * there is none. A system prompt mentioning a posting gets every posting field null and
 * confidence 0: tests script postings themselves.
 */
export function defaultLlmResponder(request: LlmRequest): LlmReply {
  if (/posting/i.test(request.systemText)) {
    return reply.json({
      ...Object.fromEntries(postingFieldKeys.map((key) => [snakeCase(key), null])),
      confidence: 0,
    });
  }
  return reply.json(fixtureResumeFields(delimitedText(request.userText)));
}

const DELIMITED = [
  /<(resume|document|text|input)>([\s\S]*?)<\/\1>/i,
  /"""([\s\S]*?)"""/,
  /```[a-z]*\n?([\s\S]*?)```/,
  /<<<([\s\S]*?)>>>/,
  /^-{3,}\s*BEGIN[^\n]*\n([\s\S]*?)\n-{3,}\s*END/im,
];

function delimitedText(userText: string): string {
  for (const pattern of DELIMITED) {
    const match = pattern.exec(userText);
    if (match !== null) return match[match.length - 1] ?? '';
  }
  return userText;
}

/** Groq's duration format: `450ms`, `7.66s`, `2m59.56s`. */
export function formatGroqDuration(ms: number): string {
  const rounded = Math.max(0, Math.ceil(ms));
  if (rounded < 1000) return `${rounded}ms`;
  // To hundredths of a second before splitting off the minutes: 59,996 ms is `1m0s`, not `60s`.
  const hundredths = Math.round(rounded / 10);
  const minutes = Math.floor(hundredths / 6000);
  const seconds = (hundredths - minutes * 6000) / 100;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

// ---------------------------------------------------------------------------------------------
// Rate limits

interface WindowEntry {
  at: number;
  tokens: number;
}

interface Limits {
  requests: number;
  tokens: number;
  minuteMs: number;
}

type Admission =
  | { admitted: true; entry: WindowEntry }
  | { admitted: false; kind: 'requests' | 'tokens'; waitMs: number; tooLarge: boolean };

function createLimiter() {
  let limits: Limits | undefined;
  let entries: WindowEntry[] = [];

  const prune = (now: number) => {
    if (limits === undefined) return;
    const from = now - limits.minuteMs;
    if (entries.length > 0 && entries[0]!.at <= from)
      entries = entries.filter((entry) => entry.at > from);
  };
  const usedTokens = () => entries.reduce((sum, entry) => sum + entry.tokens, 0);

  return {
    set(next: LlmRateLimits | undefined) {
      entries = [];
      if (next === undefined) {
        limits = undefined;
        return;
      }
      const minuteMs = next.minuteMs ?? 60_000;
      if (!Number.isFinite(minuteMs) || minuteMs <= 0)
        throw new RangeError(`LLM fixture: minuteMs must be > 0, got ${minuteMs}`);
      limits = {
        requests: Math.max(0, Math.floor(next.requestsPerMinute ?? 0)),
        tokens: Math.max(0, Math.floor(next.tokensPerMinute ?? 0)),
        minuteMs,
      };
    },
    get minuteMs() {
      return limits?.minuteMs;
    },
    admit(now: number, tokens: number): Admission {
      const entry = { at: now, tokens };
      if (limits === undefined) return { admitted: true, entry };
      prune(now);
      if (limits.requests > 0 && entries.length + 1 > limits.requests) {
        // The request fits once the oldest entries leave so that one slot frees.
        const freeing = entries[entries.length - limits.requests]!;
        return {
          admitted: false,
          kind: 'requests',
          waitMs: freeing.at + limits.minuteMs - now,
          tooLarge: false,
        };
      }
      if (limits.tokens > 0) {
        if (tokens > limits.tokens)
          return { admitted: false, kind: 'tokens', waitMs: 0, tooLarge: true };
        let excess = usedTokens() + tokens - limits.tokens;
        if (excess > 0) {
          let waitMs = 0;
          for (const old of entries) {
            excess -= old.tokens;
            waitMs = old.at + limits.minuteMs - now;
            if (excess <= 0) break;
          }
          return { admitted: false, kind: 'tokens', waitMs, tooLarge: false };
        }
      }
      entries.push(entry);
      return { admitted: true, entry };
    },
    /** Groq's x-ratelimit-* headers; a kind without a limit sends none. */
    headers(now: number): Record<string, string> {
      if (limits === undefined) return {};
      prune(now);
      const headers: Record<string, string> = {};
      const oldestResetMs = entries.length > 0 ? entries[0]!.at + limits.minuteMs - now : 0;
      if (limits.requests > 0) {
        headers['x-ratelimit-limit-requests'] = String(limits.requests);
        headers['x-ratelimit-remaining-requests'] = String(
          Math.max(0, limits.requests - entries.length),
        );
        headers['x-ratelimit-reset-requests'] = formatGroqDuration(oldestResetMs);
      }
      if (limits.tokens > 0) {
        headers['x-ratelimit-limit-tokens'] = String(limits.tokens);
        headers['x-ratelimit-remaining-tokens'] = String(Math.max(0, limits.tokens - usedTokens()));
        headers['x-ratelimit-reset-tokens'] = formatGroqDuration(oldestResetMs);
      }
      return headers;
    },
    limits: () => limits,
    used: (now: number) => {
      prune(now);
      return { requests: entries.length, tokens: usedTokens() };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Server

class BadRequest extends Error {
  constructor(
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

interface ParsedBody {
  model: string;
  messages: LlmMessage[];
  maxTokens: number | null;
  responseFormat: unknown;
}

function parseChatBody(raw: string): ParsedBody {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new BadRequest(
      'We could not parse the JSON body of your request. The body must be valid JSON.',
    );
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new BadRequest('The request body must be a JSON object.');
  const record = body as Record<string, unknown>;
  if (typeof record.model !== 'string' || record.model === '')
    throw new BadRequest("'model' is a required property and must be a non-empty string", 'model');
  if (!Array.isArray(record.messages) || record.messages.length === 0)
    throw new BadRequest("'messages' must be a non-empty array", 'messages');
  const messages = record.messages.map((message: unknown, index): LlmMessage => {
    const item = message as Record<string, unknown> | null;
    if (typeof item !== 'object' || item === null || typeof item.role !== 'string')
      throw new BadRequest(`'messages.${index}' must be an object with a 'role'`, 'messages');
    if (!['system', 'user', 'assistant', 'developer', 'tool'].includes(item.role))
      throw new BadRequest(`'messages.${index}.role' is not a valid role`, 'messages');
    return { role: item.role, content: contentOf(item.content, index) };
  });
  const maxTokens = record.max_completion_tokens ?? record.max_tokens;
  if (
    maxTokens !== undefined &&
    maxTokens !== null &&
    !(typeof maxTokens === 'number' && Number.isSafeInteger(maxTokens) && maxTokens > 0)
  )
    throw new BadRequest("'max_tokens' must be a positive integer", 'max_tokens');
  const format = record.response_format;
  if (format !== undefined && format !== null) {
    const type = (format as { type?: unknown }).type;
    if (
      typeof format !== 'object' ||
      !['text', 'json_object', 'json_schema'].includes(`${type as string}`)
    )
      throw new BadRequest(
        "'response_format.type' must be one of 'text', 'json_object', 'json_schema'",
        'response_format',
      );
  }
  return { model: record.model, messages, maxTokens: maxTokens ?? null, responseFormat: format };
}

function contentOf(content: unknown, index: number): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) => {
        const text = (part as { text?: unknown } | null)?.text;
        if (typeof text !== 'string')
          throw new BadRequest(`'messages.${index}.content' parts must carry text`, 'messages');
        return text;
      })
      .join('\n');
  }
  throw new BadRequest(`'messages.${index}.content' must be a string or an array`, 'messages');
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BadRequest('Request body too large.'));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function send(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (response.destroyed || response.headersSent) return;
  const payload = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': payload.length,
  });
  response.end(payload);
}

function errorBody(message: string, type: string, extra: Record<string, unknown> = {}) {
  return { error: { message, type, ...extra } };
}

export async function startLlmServer(options: LlmServerOptions = {}): Promise<FixtureLlmServer> {
  let responder: LlmResponder = options.responder ?? defaultLlmResponder;
  const limiter = createLimiter();
  limiter.set(options.limits);
  const requests: LlmRecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const counts = {
    requests: 0,
    allowed: 0,
    rateLimited: 0,
    requestsBeforeRetryAfter: 0,
    promptTokens: 0,
    completionTokens: 0,
  };
  const byModel: Record<string, number> = {};
  /** Epoch ms until which the latest 429s asked clients to wait. */
  let quietUntil = 0;
  let responderIndex = 0;

  const delay = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  /** Records a 429's announced wait; returns the retry headers. */
  const announceRetry = (now: number, waitMs: number, exact: boolean): Record<string, string> => {
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    const headers: Record<string, string> = { 'retry-after': String(seconds) };
    // Scaled time: whole seconds would make a 3-second bench minute useless.
    const scaled = exact && (limiter.minuteMs ?? 60_000) < 60_000;
    if (scaled) headers['retry-after-ms'] = String(Math.max(1, Math.ceil(waitMs)));
    quietUntil = Math.max(
      quietUntil,
      now + (scaled ? Math.max(1, Math.ceil(waitMs)) : seconds * 1000),
    );
    return headers;
  };

  async function handleChat(
    request: IncomingMessage,
    response: ServerResponse,
    record: LlmRecordedRequest,
  ): Promise<number> {
    const arrivedAt = record.at;
    counts.requests += 1;
    if (arrivedAt < quietUntil) counts.requestsBeforeRetryAfter += 1;

    const authorization = request.headers.authorization ?? '';
    const key = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1] ?? null;
    record.apiKey = key;
    const raw = await readBody(request);
    if (key === null || (options.apiKey !== undefined && key !== options.apiKey)) {
      send(
        response,
        401,
        errorBody('Invalid API Key', 'invalid_request_error', { code: 'invalid_api_key' }),
      );
      return 401;
    }
    const body = parseChatBody(raw);
    Object.assign(record, body);
    byModel[body.model] = (byModel[body.model] ?? 0) + 1;

    const promptTokens = llmPromptTokens(body.messages);
    const admission = limiter.admit(Date.now(), promptTokens + (body.maxTokens ?? 0));
    if (!admission.admitted) {
      const now = Date.now();
      const limits = limiter.limits()!;
      const used = limiter.used(now);
      const requested = promptTokens + (body.maxTokens ?? 0);
      if (admission.tooLarge) {
        send(
          response,
          413,
          errorBody(
            `Request too large for model \`${body.model}\` in organization \`org_fixture\` service tier \`on_demand\` on tokens per minute (TPM): Limit ${limits.tokens}, Requested ${requested}, please reduce your message size and try again.`,
            'tokens',
            { code: 'rate_limit_exceeded' },
          ),
          limiter.headers(now),
        );
        return 413;
      }
      counts.rateLimited += 1;
      const what =
        admission.kind === 'requests'
          ? `requests per minute (RPM): Limit ${limits.requests}, Used ${used.requests}, Requested 1`
          : `tokens per minute (TPM): Limit ${limits.tokens}, Used ${used.tokens}, Requested ${requested}`;
      send(
        response,
        429,
        errorBody(
          `Rate limit reached for model \`${body.model}\` in organization \`org_fixture\` service tier \`on_demand\` on ${what}. Please try again in ${formatGroqDuration(admission.waitMs)}.`,
          admission.kind,
          { code: 'rate_limit_exceeded' },
        ),
        { ...limiter.headers(now), ...announceRetry(now, admission.waitMs, true) },
      );
      return 429;
    }
    counts.allowed += 1;

    const systemText = body.messages
      .filter((message) => message.role === 'system' || message.role === 'developer')
      .map((message) => message.content)
      .join('\n');
    const userText = body.messages
      .filter((message) => message.role === 'user')
      .map((message) => message.content)
      .join('\n');
    let answer: LlmReply;
    try {
      answer = await responder({ ...body, systemText, userText, index: responderIndex++ });
    } catch (error) {
      admission.entry.tokens = promptTokens;
      send(
        response,
        500,
        errorBody(`fixture responder failed: ${String(error)}`, 'internal_server_error'),
        limiter.headers(Date.now()),
      );
      return 500;
    }
    if (answer.delayMs !== undefined && answer.delayMs > 0) await delay(answer.delayMs);
    if (response.destroyed) return 0;
    const now = Date.now();

    if ('status' in answer) {
      admission.entry.tokens = answer.usage?.promptTokens ?? promptTokens;
      let headers = { ...limiter.headers(now), ...answer.headers };
      if (answer.status === 429) {
        counts.rateLimited += 1;
        const retryMs =
          answer.retryAfterSeconds !== undefined
            ? answer.retryAfterSeconds * 1000
            : Number(answer.headers?.['retry-after'] ?? 0) * 1000;
        if (retryMs > 0) headers = { ...headers, ...announceRetry(now, retryMs, false) };
      } else if (answer.retryAfterSeconds !== undefined) {
        headers['retry-after'] = String(answer.retryAfterSeconds);
      }
      send(response, answer.status, answer.body ?? '', headers);
      return answer.status;
    }

    const content = 'json' in answer ? JSON.stringify(answer.json) : answer.content;
    const usage = {
      prompt_tokens: answer.usage?.promptTokens ?? promptTokens,
      completion_tokens: answer.usage?.completionTokens ?? llmTokenCount(content),
      total_tokens: 0,
    };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    // The reservation of max_tokens is replaced by what the answer used.
    admission.entry.tokens = usage.total_tokens;
    counts.promptTokens += usage.prompt_tokens;
    counts.completionTokens += usage.completion_tokens;
    const id = randomBytes(12).toString('hex');
    send(
      response,
      200,
      {
        id: `chatcmpl-${id}`,
        object: 'chat.completion',
        created: Math.floor(now / 1000),
        model: body.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage,
        system_fingerprint: 'fp_fixture',
        x_groq: { id: `req_${id}` },
      },
      { ...limiter.headers(now), 'x-request-id': `req_${id}` },
    );
    return 200;
  }

  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const record: LlmRecordedRequest = {
      at: Date.now(),
      path,
      apiKey: null,
      model: null,
      messages: [],
      maxTokens: null,
      responseFormat: undefined,
      status: 0,
    };
    if (!CHAT_PATHS.has(path)) {
      send(
        response,
        404,
        errorBody(`Unknown request URL: ${request.method} ${path}.`, 'invalid_request_error', {
          code: 'unknown_url',
        }),
      );
      return;
    }
    if (request.method !== 'POST') {
      send(response, 405, errorBody('Method not allowed.', 'invalid_request_error'), {
        allow: 'POST',
      });
      return;
    }
    requests.push(record);
    handleChat(request, response, record).then(
      (status) => {
        record.status = status;
      },
      (error: unknown) => {
        record.status = error instanceof BadRequest ? 400 : 500;
        send(
          response,
          record.status,
          error instanceof BadRequest
            ? errorBody(error.message, 'invalid_request_error', { param: error.param })
            : errorBody(`fixture failure: ${String(error)}`, 'internal_server_error'),
          limiter.headers(Date.now()),
        );
      },
    );
  });
  const url = await listenOrigin(server, options.port ?? 0, options.host ?? '127.0.0.1');

  let closing: Promise<void> | undefined;
  return {
    baseURL: url,
    url,
    requests,
    stats: () => ({ ...counts, byModel: { ...byModel } }),
    setResponder: (next) => {
      responder = next ?? defaultLlmResponder;
    },
    setLimits: (limits) => {
      limiter.set(limits);
      quietUntil = 0;
    },
    close: () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        // Delayed answers are dropped with their connections rather than holding close() open.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
