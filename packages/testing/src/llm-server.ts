/**
 * A chat-completions server on loopback that stands in for Groq in tests and benches: no test ever
 * calls a real provider. In `groq` flavour it behaves as Groq's API was documented and observed on
 * 2026-11-28 (docs/decisions/0017-llm-providers.md lists the pages): only `/openai/v1/...`, a model
 * catalogue where unknown and retired models answer `404 model_not_found`, JSON mode refused when
 * no message says "json", strict `json_schema` only on the models that support it (and only with
 * every key required and no other), `reasoning_effort` only on reasoning models, whose reasoning
 * tokens count against `max_completion_tokens` (an answer that runs out ends `finish_reason:
 * "length"`), content that is not JSON in a JSON mode answered `400 json_validate_failed` with its
 * `failed_generation`, usage with Groq's timing fields, and Groq's rate limits: the
 * `x-ratelimit-*-requests` headers count per day, the `-tokens` ones per minute, both always sent;
 * a silent per-minute request limit; `retry-after` in whole seconds, on 429s only; a request
 * larger than the token limit answered 413. Its token count is its own (a CJK character is a
 * token), so a client that estimates ceil(chars / 4) under-counts, as it would against Groq.
 * In `openai-compatible` flavour it is a local server (llama.cpp, Ollama, vLLM): only
 * `/v1/...`, any model, no key needed unless one is set, no limits or headers unless configured.
 *
 * Rate limits are rolling windows over the last `minuteMs` (and `1440 × minuteMs` for the day):
 * an admitted request counts for exactly that long from its arrival. Tokens count prompt tokens
 * plus `max_tokens` at admission (the provider must reserve room for the longest answer it may
 * give), replaced by prompt plus completion tokens once the answer is written: the same
 * accounting as the worker's provider gate (reserve the estimate, settle to actual usage).
 * `minuteMs` may be shortened to scale time in benches. Groq itself refills token buckets
 * continuously, which admits at least what the rolling window does.
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
  /** `reasoning_effort` as sent. */
  reasoningEffort: string | null;
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
  /**
   * Reasoning tokens a reasoning model spends before its answer (default by effort: low 64,
   * medium 256, high 1024). With the answer they must fit `max_completion_tokens`, or the answer
   * is cut and ends `finish_reason: "length"`.
   */
  reasoningTokens?: number;
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
  /** Groq's answer when the model's output was not valid JSON in a JSON mode. */
  jsonValidateFailed: (failedGeneration: string): LlmReply => ({
    status: 400,
    body: {
      error: {
        message:
          "Failed to generate JSON. Please adjust your prompt. See 'failed_generation' for more details.",
        type: 'invalid_request_error',
        code: 'json_validate_failed',
        failed_generation: failedGeneration,
      },
    },
  }),
  /** Groq's 422: well-formed, but the model could not follow it this time. */
  unprocessable: (): LlmReply => ({
    status: 422,
    body: {
      error: {
        message: 'The request could not be processed. Please try again.',
        type: 'invalid_request_error',
      },
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
  /**
   * Requests per day (Groq's `x-ratelimit-*-requests` headers count these). Groq flavour default
   * 14 400; ≤ 0: none.
   */
  requestsPerDay?: number;
  /** A per-minute request limit Groq enforces without a header of its own; ≤ 0 or absent: none. */
  requestsPerMinute?: number;
  /** Groq flavour default 1 000 000; ≤ 0: none. */
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
  reasoningEffort: string | null;
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
  /** Default `groq`. */
  flavour?: LlmServerFlavour;
  /**
   * The models served. Groq flavour default `GROQ_MODELS` (retired models refused as Groq
   * refuses them); openai-compatible default: any model name, as llama-server accepts.
   */
  models?: readonly LlmFixtureModel[];
  /** Groq flavour default: 14 400 requests a day, 1 000 000 tokens a minute; openai-compatible: none. */
  limits?: LlmRateLimits;
}

/** `groq`: Groq's API; `openai-compatible`: a local server on `/v1`. */
export type LlmServerFlavour = 'groq' | 'openai-compatible';

/** One model of the catalogue. */
export interface LlmFixtureModel {
  id: string;
  /** Takes `reasoning_effort`; spends reasoning tokens before its answer. */
  reasoning?: boolean;
  /** Takes `response_format: json_schema` with `strict: true`. */
  strictJsonSchema?: boolean;
  /**
   * Retired: requests are refused. `model_not_found` (404, what Groq answered for the models it
   * retired on 2026-08-16) or `model_decommissioned` (400, what it answered for earlier ones).
   */
  retired?: 'model_not_found' | 'model_decommissioned';
}

/** Groq's catalogue as of 2026-11-28 (console.groq.com/docs/models and /docs/deprecations). */
export const GROQ_MODELS: readonly LlmFixtureModel[] = [
  { id: 'openai/gpt-oss-20b', reasoning: true, strictJsonSchema: true },
  { id: 'openai/gpt-oss-120b', reasoning: true, strictJsonSchema: true },
  { id: 'openai/gpt-oss-safeguard-20b', reasoning: true },
  { id: 'qwen/qwen3.6-27b' },
  { id: 'llama-3.1-8b-instant', retired: 'model_not_found' },
  { id: 'llama-3.3-70b-versatile', retired: 'model_not_found' },
  { id: 'meta-llama/llama-4-scout-17b-16e-instruct', retired: 'model_not_found' },
  { id: 'qwen/qwen3-32b', retired: 'model_not_found' },
  { id: 'gemma2-9b-it', retired: 'model_decommissioned' },
  { id: 'llama3-70b-8192', retired: 'model_decommissioned' },
];

/** Groq's per-account defaults the fixture applies when none are given. */
const GROQ_DEFAULT_LIMITS: LlmRateLimits = { requestsPerDay: 14_400, tokensPerMinute: 1_000_000 };

export interface FixtureLlmServer {
  /**
   * What Gleaner's `GROQ_BASE_URL` / `LLM_BASE_URL` should be: the origin in Groq flavour (the
   * client appends `/openai/v1/...`), `${origin}/v1` in openai-compatible flavour.
   */
  baseURL: string;
  /** The origin, e.g. http://127.0.0.1:40123. */
  url: string;
  flavour: LlmServerFlavour;
  /** Requests received, oldest first (live array). */
  requests: LlmRecordedRequest[];
  stats(): LlmServerStats;
  /** Replaces the responder; undefined restores the default. */
  setResponder(responder: LlmResponder | undefined): void;
  /** Replaces the limits (and forgets the window); undefined restores the flavour's defaults. */
  setLimits(limits: LlmRateLimits | undefined): void;
  /** Stops listening and closes connections, dropping delayed answers; safe to call twice. */
  close(): Promise<void>;
}

/** The API root of each flavour: Groq serves only `/openai/v1`, a local server only `/v1`. */
const API_ROOT: Record<LlmServerFlavour, string> = {
  groq: '/openai/v1',
  'openai-compatible': '/v1',
};
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/**
 * The server's token count of a text: a quarter token per ASCII character, a whole one per CJK
 * character (Han, kana, hangul) and half a one per other character — like a real tokenizer, and
 * unlike ceil(chars / 4), which under-counts CJK text fourfold.
 */
export function llmTokenCount(text: string): number {
  let ascii = 0;
  let cjk = 0;
  let other = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code < 128) ascii += 1;
    else if (/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(char))
      cjk += 1;
    else other += 1;
  }
  return Math.ceil(ascii / 4 + cjk + other / 2);
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
  const totalMinutes = Math.floor(hundredths / 6000);
  const seconds = (hundredths - totalMinutes * 6000) / 100;
  const hours = Math.floor(totalMinutes / 60);
  const minutes = totalMinutes - hours * 60;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

// ---------------------------------------------------------------------------------------------
// Rate limits

interface WindowEntry {
  at: number;
  tokens: number;
}

interface Limits {
  requestsPerDay: number;
  requestsPerMinute: number;
  tokens: number;
  minuteMs: number;
}

type Admission =
  | { admitted: true; entry: WindowEntry }
  | {
      admitted: false;
      kind: 'requests-per-day' | 'requests-per-minute' | 'tokens';
      waitMs: number;
      tooLarge: boolean;
    };

/** Minutes in Groq's request day. */
const DAY_MINUTES = 1440;

function positive(value: number | undefined): number {
  return Math.max(0, Math.floor(value ?? 0));
}

function createLimiter() {
  let limits: Limits | undefined;
  /** Admitted requests of the last minute (requests and tokens), and of the last day. */
  let minute: WindowEntry[] = [];
  let day: number[] = [];

  const prune = (now: number) => {
    if (limits === undefined) return;
    const from = now - limits.minuteMs;
    if (minute.length > 0 && minute[0]!.at <= from) minute = minute.filter((e) => e.at > from);
    const dayFrom = now - limits.minuteMs * DAY_MINUTES;
    if (day.length > 0 && day[0]! <= dayFrom) day = day.filter((at) => at > dayFrom);
  };
  const usedTokens = () => minute.reduce((sum, entry) => sum + entry.tokens, 0);

  return {
    set(next: LlmRateLimits | undefined) {
      minute = [];
      day = [];
      if (next === undefined) {
        limits = undefined;
        return;
      }
      const minuteMs = next.minuteMs ?? 60_000;
      if (!Number.isFinite(minuteMs) || minuteMs <= 0)
        throw new RangeError(`LLM fixture: minuteMs must be > 0, got ${minuteMs}`);
      limits = {
        requestsPerDay: positive(next.requestsPerDay),
        requestsPerMinute: positive(next.requestsPerMinute),
        tokens: positive(next.tokensPerMinute),
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
      const dayMs = limits.minuteMs * DAY_MINUTES;
      if (limits.requestsPerDay > 0 && day.length + 1 > limits.requestsPerDay) {
        const freeing = day[day.length - limits.requestsPerDay]!;
        return {
          admitted: false,
          kind: 'requests-per-day',
          waitMs: freeing + dayMs - now,
          tooLarge: false,
        };
      }
      if (limits.requestsPerMinute > 0 && minute.length + 1 > limits.requestsPerMinute) {
        // The request fits once the oldest entries leave so that one slot frees.
        const freeing = minute[minute.length - limits.requestsPerMinute]!;
        return {
          admitted: false,
          kind: 'requests-per-minute',
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
          for (const old of minute) {
            excess -= old.tokens;
            waitMs = old.at + limits.minuteMs - now;
            if (excess <= 0) break;
          }
          return { admitted: false, kind: 'tokens', waitMs, tooLarge: false };
        }
      }
      minute.push(entry);
      day.push(now);
      return { admitted: true, entry };
    },
    /**
     * Groq's x-ratelimit-* headers: `-requests` for the day, `-tokens` for the minute; a kind
     * without a limit sends none.
     */
    headers(now: number): Record<string, string> {
      if (limits === undefined) return {};
      prune(now);
      const headers: Record<string, string> = {};
      if (limits.requestsPerDay > 0) {
        const dayMs = limits.minuteMs * DAY_MINUTES;
        headers['x-ratelimit-limit-requests'] = String(limits.requestsPerDay);
        headers['x-ratelimit-remaining-requests'] = String(
          Math.max(0, limits.requestsPerDay - day.length),
        );
        headers['x-ratelimit-reset-requests'] = formatGroqDuration(
          day.length > 0 ? day[0]! + dayMs - now : 0,
        );
      }
      if (limits.tokens > 0) {
        headers['x-ratelimit-limit-tokens'] = String(limits.tokens);
        headers['x-ratelimit-remaining-tokens'] = String(Math.max(0, limits.tokens - usedTokens()));
        headers['x-ratelimit-reset-tokens'] = formatGroqDuration(
          minute.length > 0 ? minute[0]!.at + limits.minuteMs - now : 0,
        );
      }
      return headers;
    },
    limits: () => limits,
    used: (now: number) => {
      prune(now);
      return { requestsPerDay: day.length, requestsPerMinute: minute.length, tokens: usedTokens() };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Server

class BadRequest extends Error {
  constructor(
    message: string,
    readonly param: string | null = null,
    readonly status = 400,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

interface ParsedBody {
  model: string;
  messages: LlmMessage[];
  maxTokens: number | null;
  responseFormat: unknown;
  reasoningEffort: string | null;
  includeReasoning: boolean | null;
  reasoningFormat: string | null;
}

const ROLES = ['system', 'user', 'assistant', 'developer', 'tool'];
const EFFORTS = ['low', 'medium', 'high'];
const REASONING_FORMATS = ['parsed', 'raw', 'hidden'];

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
    if (!ROLES.includes(item.role))
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
  const effort = record.reasoning_effort;
  if (effort !== undefined && effort !== null && !EFFORTS.includes(`${effort as string}`))
    throw new BadRequest(
      "'reasoning_effort' must be one of 'low', 'medium', 'high'",
      'reasoning_effort',
    );
  const include = record.include_reasoning;
  if (include !== undefined && include !== null && typeof include !== 'boolean')
    throw new BadRequest("'include_reasoning' must be a boolean", 'include_reasoning');
  const reasoningFormat = record.reasoning_format;
  if (
    reasoningFormat !== undefined &&
    reasoningFormat !== null &&
    !REASONING_FORMATS.includes(`${reasoningFormat as string}`)
  )
    throw new BadRequest(
      "'reasoning_format' must be one of 'parsed', 'raw', 'hidden'",
      'reasoning_format',
    );
  return {
    model: record.model,
    messages,
    maxTokens: maxTokens ?? null,
    responseFormat: format,
    reasoningEffort: (effort as string | undefined) ?? null,
    includeReasoning: (include as boolean | undefined) ?? null,
    reasoningFormat: (reasoningFormat as string | undefined) ?? null,
  };
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

/** What a JSON mode asks: none, JSON mode, or a (strict) schema. */
type JsonMode =
  { kind: 'text' } | { kind: 'json_object' } | { kind: 'json_schema'; strict: boolean };

/**
 * Groq's checks of `response_format` against the model and the messages: JSON mode needs the
 * word "json" in a message; a strict schema needs a model that supports it, and every object in
 * it to require all its properties and allow no other.
 */
function jsonModeOf(
  body: ParsedBody,
  model: LlmFixtureModel | undefined,
  isGroq: boolean,
): JsonMode {
  const format = body.responseFormat as { type?: string; json_schema?: unknown } | undefined;
  if (format === undefined || format === null || format.type === 'text') return { kind: 'text' };
  if (format.type === 'json_object') {
    if (isGroq && !body.messages.some((message) => /json/i.test(message.content)))
      throw new BadRequest(
        "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
        'messages',
      );
    return { kind: 'json_object' };
  }
  const spec = format.json_schema as
    { name?: unknown; strict?: unknown; schema?: unknown } | undefined;
  if (typeof spec !== 'object' || spec === null)
    throw new BadRequest("'response_format.json_schema' is required", 'response_format');
  if (typeof spec.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(spec.name))
    throw new BadRequest(
      "'response_format.json_schema.name' must be 1-64 letters, digits, '_' or '-'",
      'response_format',
    );
  if (typeof spec.schema !== 'object' || spec.schema === null || Array.isArray(spec.schema))
    throw new BadRequest(
      "'response_format.json_schema.schema' must be an object",
      'response_format',
    );
  const strict = spec.strict === true;
  if (strict && isGroq) {
    if (!model?.strictJsonSchema)
      throw new BadRequest(
        `model \`${body.model}\` does not support strict mode for response format \`json_schema\``,
        'response_format',
      );
    const problem = strictSchemaProblem(spec.schema, 'schema');
    if (problem !== undefined)
      throw new BadRequest(`invalid JSON schema for strict mode: ${problem}`, 'response_format');
  }
  return { kind: 'json_schema', strict };
}

/** Where a strict schema breaks the rules: an object not requiring all of its properties, or open. */
function strictSchemaProblem(node: unknown, path: string): string | undefined {
  if (typeof node !== 'object' || node === null) return undefined;
  if (Array.isArray(node)) {
    for (const [index, item] of node.entries()) {
      const problem = strictSchemaProblem(item, `${path}[${index}]`);
      if (problem) return problem;
    }
    return undefined;
  }
  const schema = node as Record<string, unknown>;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes('object') || schema.properties !== undefined) {
    if (schema.additionalProperties !== false)
      return `${path}: 'additionalProperties' must be false`;
    const properties = Object.keys((schema.properties as object | undefined) ?? {});
    const required = Array.isArray(schema.required) ? schema.required : [];
    const missing = properties.filter((key) => !required.includes(key));
    if (missing.length > 0)
      return `${path}: every property must be required (${missing.join(', ')})`;
  }
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties' && typeof value === 'object' && value !== null) {
      for (const [name, child] of Object.entries(value)) {
        const problem = strictSchemaProblem(child, `${path}.properties.${name}`);
        if (problem) return problem;
      }
    } else if (['items', 'anyOf', 'oneOf', 'allOf', '$defs', 'definitions'].includes(key)) {
      const problem = strictSchemaProblem(value, `${path}.${key}`);
      if (problem) return problem;
    }
  }
  return undefined;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Reasoning tokens by effort; Groq's default effort for gpt-oss is medium. */
const REASONING_TOKENS: Record<string, number> = { low: 64, medium: 256, high: 1024 };

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BadRequest('Request body too large.', null, 413));
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

/** Groq's answer for a model it does not serve (any more). */
function modelRefusal(model: string, retired: LlmFixtureModel['retired']): BadRequest {
  if (retired === 'model_decommissioned')
    return new BadRequest(
      `The model \`${model}\` has been decommissioned and is no longer supported. Please refer to https://console.groq.com/docs/deprecations for a recommendation on which model to use instead.`,
      null,
      400,
      { code: 'model_decommissioned' },
    );
  return new BadRequest(
    `The model \`${model}\` does not exist or you do not have access to it.`,
    null,
    404,
    { code: 'model_not_found' },
  );
}

/** Seconds with three decimals, as Groq reports its timings. */
const seconds = (ms: number) => Math.round(ms) / 1000;

export async function startLlmServer(options: LlmServerOptions = {}): Promise<FixtureLlmServer> {
  const flavour = options.flavour ?? 'groq';
  const isGroq = flavour === 'groq';
  const root = API_ROOT[flavour];
  const catalogue = options.models ?? (isGroq ? GROQ_MODELS : undefined);
  const modelsById = new Map((catalogue ?? []).map((model) => [model.id, model]));
  let responder: LlmResponder = options.responder ?? defaultLlmResponder;
  const limiter = createLimiter();
  /** Groq always has limits (and always sends their headers); a local server has none unless set. */
  const withDefaults = (limits: LlmRateLimits | undefined): LlmRateLimits | undefined =>
    isGroq ? { ...GROQ_DEFAULT_LIMITS, ...limits } : limits;
  limiter.set(withDefaults(options.limits));
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

  /** A 429's `retry-after`: whole seconds, rounded up, as Groq sends it. */
  const announceRetry = (now: number, waitMs: number): Record<string, string> => {
    const wait = Math.max(1, Math.ceil(waitMs / 1000));
    quietUntil = Math.max(quietUntil, now + wait * 1000);
    return { 'retry-after': String(wait) };
  };

  /** The model as the catalogue has it; refuses unknown and retired ones. */
  const modelFor = (id: string): LlmFixtureModel | undefined => {
    if (catalogue === undefined) return undefined;
    const model = modelsById.get(id);
    if (model === undefined) throw modelRefusal(id, 'model_not_found');
    if (model.retired) throw modelRefusal(id, model.retired);
    return model;
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
    const keyNeeded = isGroq || options.apiKey !== undefined;
    if (keyNeeded && (key === null || (options.apiKey !== undefined && key !== options.apiKey))) {
      send(
        response,
        401,
        errorBody('Invalid API Key', 'invalid_request_error', { code: 'invalid_api_key' }),
      );
      return 401;
    }
    const body = parseChatBody(raw);
    record.model = body.model;
    record.messages = body.messages;
    record.maxTokens = body.maxTokens;
    record.responseFormat = body.responseFormat;
    record.reasoningEffort = body.reasoningEffort;
    byModel[body.model] = (byModel[body.model] ?? 0) + 1;
    const model = modelFor(body.model);
    const reasoning = isGroq ? model?.reasoning === true : body.reasoningEffort !== null;
    if (isGroq) {
      if (body.reasoningEffort !== null && !reasoning)
        throw new BadRequest(
          '`reasoning_effort` is not supported with this model',
          'reasoning_effort',
        );
      if (body.includeReasoning !== null && body.reasoningFormat !== null)
        throw new BadRequest(
          '`include_reasoning` and `reasoning_format` are mutually exclusive',
          'include_reasoning',
        );
      if (body.reasoningFormat !== null && /gpt-oss/.test(body.model))
        throw new BadRequest(
          '`reasoning_format` is not supported with this model; use `include_reasoning`',
          'reasoning_format',
        );
    }
    const jsonMode = jsonModeOf(body, model, isGroq);
    if (isGroq && jsonMode.kind !== 'text' && body.reasoningFormat === 'raw')
      throw new BadRequest(
        '`reasoning_format` `raw` is not supported with JSON mode',
        'reasoning_format',
      );

    const promptTokens = llmPromptTokens(body.messages);
    const requested = promptTokens + (body.maxTokens ?? 0);
    const admission = limiter.admit(Date.now(), requested);
    if (!admission.admitted) {
      const now = Date.now();
      const limits = limiter.limits()!;
      const used = limiter.used(now);
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
      const what = {
        'requests-per-day': `requests per day (RPD): Limit ${limits.requestsPerDay}, Used ${used.requestsPerDay}, Requested 1`,
        'requests-per-minute': `requests per minute (RPM): Limit ${limits.requestsPerMinute}, Used ${used.requestsPerMinute}, Requested 1`,
        tokens: `tokens per minute (TPM): Limit ${limits.tokens}, Used ${used.tokens}, Requested ${requested}`,
      }[admission.kind];
      send(
        response,
        429,
        errorBody(
          `Rate limit reached for model \`${body.model}\` in organization \`org_fixture\` service tier \`on_demand\` on ${what}. Please try again in ${formatGroqDuration(admission.waitMs)}.`,
          admission.kind === 'tokens' ? 'tokens' : 'requests',
          { code: 'rate_limit_exceeded' },
        ),
        { ...limiter.headers(now), ...announceRetry(now, admission.waitMs) },
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
    const startedAt = Date.now();
    let answer: LlmReply;
    try {
      answer = await responder({
        model: body.model,
        messages: body.messages,
        maxTokens: body.maxTokens,
        responseFormat: body.responseFormat,
        reasoningEffort: body.reasoningEffort,
        systemText,
        userText,
        index: responderIndex++,
      });
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
        if (retryMs > 0) headers = { ...headers, ...announceRetry(now, retryMs) };
      } else if (answer.retryAfterSeconds !== undefined) {
        headers['retry-after'] = String(answer.retryAfterSeconds);
      }
      send(response, answer.status, answer.body ?? '', headers);
      return answer.status;
    }

    const written = 'json' in answer ? JSON.stringify(answer.json) : answer.content;
    const reasoningTokens = reasoning
      ? (answer.reasoningTokens ?? REASONING_TOKENS[body.reasoningEffort ?? 'medium']!)
      : 0;
    const room = body.maxTokens === null ? Number.POSITIVE_INFINITY : body.maxTokens;
    const contentRoom = Math.max(0, room - reasoningTokens);
    const cut = llmTokenCount(written) > contentRoom;
    // Cut at the room left: a quarter of ASCII text is a token, near enough for a cut.
    const content = cut ? written.slice(0, contentRoom * 4) : written;
    if (!cut && isGroq && jsonMode.kind !== 'text' && !isJson(content)) {
      admission.entry.tokens = promptTokens + reasoningTokens + llmTokenCount(content);
      send(
        response,
        400,
        errorBody(
          "Failed to generate JSON. Please adjust your prompt. See 'failed_generation' for more details.",
          'invalid_request_error',
          { code: 'json_validate_failed', failed_generation: content },
        ),
        limiter.headers(now),
      );
      return 400;
    }
    const contentTokens = cut
      ? Math.min(contentRoom, llmTokenCount(content))
      : llmTokenCount(content);
    const completionTokens =
      answer.usage?.completionTokens ?? Math.min(room, reasoningTokens + contentTokens);
    const usage = {
      queue_time: 0.012,
      prompt_tokens: answer.usage?.promptTokens ?? promptTokens,
      prompt_time: seconds(Math.max(1, promptTokens / 50)),
      completion_tokens: completionTokens,
      completion_time: seconds(Math.max(1, now - startedAt)),
      total_tokens: 0,
      total_time: 0,
      ...(reasoning ? { completion_tokens_details: { reasoning_tokens: reasoningTokens } } : {}),
    };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    usage.total_time = seconds((usage.prompt_time + usage.completion_time) * 1000);
    // The reservation of max_tokens is replaced by what the answer used.
    admission.entry.tokens = usage.total_tokens;
    counts.promptTokens += usage.prompt_tokens;
    counts.completionTokens += usage.completion_tokens;
    const showReasoning =
      reasoning &&
      (isGroq ? body.includeReasoning !== false && body.reasoningFormat !== 'hidden' : true);
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
            message: {
              role: 'assistant',
              content,
              ...(showReasoning
                ? {
                    [isGroq ? 'reasoning' : 'reasoning_content']:
                      'The document lists the fields; copy them as written.',
                  }
                : {}),
            },
            logprobs: null,
            finish_reason: cut ? 'length' : 'stop',
          },
        ],
        usage,
        system_fingerprint: 'fp_fixture',
        ...(isGroq ? { x_groq: { id: `req_${id}` } } : {}),
      },
      { ...limiter.headers(now), ...(isGroq ? { 'x-request-id': `req_${id}` } : {}) },
    );
    return 200;
  }

  /** `GET {root}/models` and `GET {root}/models/{id}`: the models served, retired ones left out. */
  function handleModels(path: string, response: ServerResponse): void {
    const describe = (model: LlmFixtureModel) => ({
      id: model.id,
      object: 'model',
      created: 1_754_006_400,
      owned_by: model.id.includes('/') ? model.id.split('/')[0] : 'fixture',
      active: true,
      context_window: 131_072,
    });
    const live = (catalogue ?? []).filter((model) => !model.retired);
    const id = decodeURIComponent(path.slice(`${root}/models/`.length));
    if (path === `${root}/models`) {
      send(response, 200, { object: 'list', data: live.map(describe) });
      return;
    }
    const model = live.find((candidate) => candidate.id === id);
    if (model) send(response, 200, describe(model));
    else {
      const refusal = modelRefusal(id, 'model_not_found');
      send(
        response,
        refusal.status,
        errorBody(refusal.message, 'invalid_request_error', refusal.extra),
      );
    }
  }

  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    if (
      request.method === 'GET' &&
      (path === `${root}/models` || path.startsWith(`${root}/models/`))
    ) {
      handleModels(path, response);
      return;
    }
    if (path !== `${root}/chat/completions`) {
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
    const record: LlmRecordedRequest = {
      at: Date.now(),
      path,
      apiKey: null,
      model: null,
      messages: [],
      maxTokens: null,
      responseFormat: undefined,
      reasoningEffort: null,
      status: 0,
    };
    requests.push(record);
    handleChat(request, response, record).then(
      (status) => {
        record.status = status;
      },
      (error: unknown) => {
        record.status = error instanceof BadRequest ? error.status : 500;
        send(
          response,
          record.status,
          error instanceof BadRequest
            ? errorBody(error.message, 'invalid_request_error', {
                param: error.param,
                ...error.extra,
              })
            : errorBody(`fixture failure: ${String(error)}`, 'internal_server_error'),
          limiter.headers(Date.now()),
        );
      },
    );
  });
  const url = await listenOrigin(server, options.port ?? 0, options.host ?? '127.0.0.1');

  let closing: Promise<void> | undefined;
  return {
    baseURL: isGroq ? url : `${url}${root}`,
    url,
    flavour,
    requests,
    stats: () => ({ ...counts, byModel: { ...byModel } }),
    setResponder: (next) => {
      responder = next ?? defaultLlmResponder;
    },
    setLimits: (limits) => {
      limiter.set(withDefaults(limits));
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
