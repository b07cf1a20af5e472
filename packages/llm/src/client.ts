import { Agent, errors as undiciErrors, request as undiciRequest } from 'undici';
import { z } from 'zod';
import { abortedCallError, LlmProviderError } from './errors.js';
import { parseProviderRateLimit, retryAfterMs, type ProviderRateLimit } from './rate-limit.js';

/**
 * Who answers: Groq (`POST {baseURL}/openai/v1/chat/completions`, its model catalogue, rate-limit
 * headers and error codes), or any server speaking OpenAI's chat completions under a base URL
 * that already ends in `/v1` — llama.cpp's `llama-server`, Ollama, vLLM.
 */
export type LlmProvider = 'groq' | 'openai-compatible';

export const LLM_PROVIDERS = [
  'groq',
  'openai-compatible',
] as const satisfies readonly LlmProvider[];

/** Where and how to reach the provider. */
export interface LlmClientOptions {
  provider: LlmProvider;
  /**
   * Groq: the origin (`https://api.groq.com`); the client adds `/openai/v1/chat/completions`.
   * OpenAI-compatible: the API root, `/v1` included (`http://127.0.0.1:8080/v1`); the client adds
   * `/chat/completions`.
   */
  baseURL: string;
  /** Sent as a bearer token; a local server may need none. */
  apiKey?: string;
  /**
   * Deadline of one call, from sending to the parsed answer. It also sets the connection's own
   * connect, headers and body timeouts, which otherwise default to 300 s in undici (and so in
   * Node's fetch): a slow CPU model may take longer than that, and the setting must be the limit.
   */
  timeoutMs: number;
}

/** One chat message; extraction only ever sends a system and a user message. */
export interface LlmMessage {
  role: 'system' | 'user';
  content: string;
}

/** How the answer is constrained: strict structured output, or JSON mode. */
export type LlmResponseFormat =
  { type: 'json_schema'; name: string; schema: Record<string, unknown> } | { type: 'json_object' };

/** `reasoning_effort` of reasoning models (gpt-oss: low, medium, high). */
export type LlmReasoningEffort = 'low' | 'medium' | 'high';

/** One chat completion request. */
export interface LlmCompletionRequest {
  model: string;
  messages: LlmMessage[];
  /** Cap on the answer's tokens, reasoning included (`max_completion_tokens`). */
  maxTokens: number;
  /** Default JSON mode. */
  responseFormat?: LlmResponseFormat;
  /** Sent only when set: to reasoning models. */
  reasoningEffort?: LlmReasoningEffort;
  /** Aborts the HTTP request: a job cancelled or a worker shutting down. */
  signal?: AbortSignal;
}

/** Tokens of one call, as the provider counted them (the truth; estimates are not). */
export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** One answer: the model's content (meant to be a JSON object, unchecked) and its costs. */
export interface LlmCompletion {
  content: string;
  /** The model the provider says answered. */
  model: string;
  /**
   * `stop`, or `length` when the answer ran into `maxTokens` (its content is then cut short:
   * for a reasoning model, the reasoning may have used the room).
   */
  finishReason: string;
  usage: LlmUsage;
  /** Of the completion tokens, those the model spent reasoning (0 when not reported). */
  reasoningTokens: number;
  rateLimit: ProviderRateLimit;
}

/** What a model can be asked, as far as the request body goes. */
export interface LlmModelProfile {
  /** A reasoning model: takes `reasoning_effort`, and its reasoning counts against the cap. */
  reasoning: boolean;
  /** Supports `response_format: json_schema` with `strict: true` (constrained decoding). */
  strictJsonSchema: boolean;
}

/** The provider as extraction sees it: one call, one answer, typed errors, no retries. */
export interface LlmClient {
  readonly provider: LlmProvider;
  /** What the request body may ask of `model` with this provider. */
  profile(model: string): LlmModelProfile;
  /** Rejects with `LlmProviderError`, or with the signal's reason when that is an Error. */
  complete(request: LlmCompletionRequest): Promise<LlmCompletion>;
  /** Closes the connections; safe to call twice. */
  close(): Promise<void>;
}

/** OpenAI's open-weight reasoning models, however a server prefixes them (`openai/gpt-oss-20b`, `gpt-oss:20b`). */
const GPT_OSS = /(?:^|\/)gpt-oss[-:]/i;

/**
 * Groq (checked 2026-11-28, console.groq.com/docs/structured-outputs and /docs/reasoning):
 * strict `json_schema` only on `openai/gpt-oss-20b` and `-120b`, which are also its reasoning
 * models taking `reasoning_effort`. Other servers: llama.cpp, Ollama (≥ 0.5) and vLLM all
 * constrain decoding to a `json_schema`; `reasoning_effort` goes to gpt-oss only, as servers
 * differ on what else takes it.
 */
export function modelProfile(provider: LlmProvider, model: string): LlmModelProfile {
  const reasoning = GPT_OSS.test(model);
  return { reasoning, strictJsonSchema: provider === 'openai-compatible' || reasoning };
}

/**
 * The undici options of the client's connections: connect, headers and body timeouts from the
 * call's deadline (undici's defaults are 10 s to connect and 300 s for headers and body).
 */
export function llmAgentOptions(timeoutMs: number): Agent.Options {
  return { connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs };
}

const completionSchema = z.object({
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish() }).loose(),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().nonnegative().optional(),
      completion_tokens: z.number().nonnegative().optional(),
      total_tokens: z.number().nonnegative().optional(),
      completion_tokens_details: z
        .object({ reasoning_tokens: z.number().nonnegative().nullish() })
        .loose()
        .nullish(),
    })
    .loose()
    .nullish(),
});

/**
 * A chat-completions client on one undici Agent, temperature 0, no tools, no retries of its own
 * (the queue retries: STYLE.md, "retry layers stacked on each other"). The deadline covers the
 * whole call, reading the body included. Reasoning stays out of the answer: Groq is told
 * `include_reasoning: false` for gpt-oss (its `reasoning_format` is for other models), and other
 * servers put reasoning in a field of its own (`reasoning_content`) that is never read.
 */
export function createLlmClient(options: LlmClientOptions): LlmClient {
  if (!Number.isSafeInteger(options.timeoutMs) || options.timeoutMs <= 0)
    throw new RangeError(
      `LLM client: timeoutMs must be a positive integer, got ${options.timeoutMs}`,
    );
  const base = new URL(options.baseURL);
  if (base.protocol !== 'http:' && base.protocol !== 'https:')
    throw new RangeError(`LLM client: baseURL must be http(s), got ${options.baseURL}`);
  const root = options.baseURL.replace(/\/+$/, '');
  const url =
    options.provider === 'groq' ? `${root}/openai/v1/chat/completions` : `${root}/chat/completions`;
  const agent = new Agent(llmAgentOptions(options.timeoutMs));
  let closing: Promise<void> | undefined;

  const body = (request: LlmCompletionRequest) => {
    const format = request.responseFormat ?? { type: 'json_object' };
    const reasoning = modelProfile(options.provider, request.model).reasoning;
    return {
      model: request.model,
      messages: request.messages,
      // llama.cpp and Ollama read max_tokens; Groq deprecated it for max_completion_tokens.
      ...(options.provider === 'groq'
        ? { max_completion_tokens: request.maxTokens }
        : { max_tokens: request.maxTokens }),
      temperature: 0,
      stream: false,
      response_format:
        format.type === 'json_schema'
          ? {
              type: 'json_schema',
              json_schema: { name: format.name, strict: true, schema: format.schema },
            }
          : { type: 'json_object' },
      ...(request.reasoningEffort === undefined
        ? {}
        : { reasoning_effort: request.reasoningEffort }),
      ...(options.provider === 'groq' && reasoning ? { include_reasoning: false } : {}),
    };
  };

  return {
    provider: options.provider,
    profile: (model) => modelProfile(options.provider, model),
    async complete(request) {
      const deadline = AbortSignal.timeout(options.timeoutMs);
      const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
      const timedOut = (cause: unknown) =>
        new LlmProviderError(
          'LLM_TIMEOUT',
          `${request.model} did not answer within ${options.timeoutMs} ms`,
          { cause },
        );
      let status: number;
      let headers: Record<string, string | string[] | undefined>;
      let text: string;
      try {
        const response = await undiciRequest(url, {
          method: 'POST',
          dispatcher: agent,
          signal,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
          },
          body: JSON.stringify(body(request)),
        });
        status = response.statusCode;
        headers = response.headers;
        text = await response.body.text();
      } catch (error) {
        if (request.signal?.aborted) throw abortedCallError(request.signal, request.model);
        if (
          deadline.aborted ||
          error instanceof undiciErrors.HeadersTimeoutError ||
          error instanceof undiciErrors.BodyTimeoutError ||
          error instanceof undiciErrors.ConnectTimeoutError
        )
          throw timedOut(error);
        const detail = error instanceof Error ? error.message : String(error);
        throw new LlmProviderError('LLM_UNAVAILABLE', `${request.model}: ${detail}`, {
          cause: error,
        });
      }
      const rateLimit = parseProviderRateLimit(headers);
      if (status < 200 || status > 299) throw providerError(request.model, status, headers, text);
      let parsed;
      try {
        parsed = completionSchema.safeParse(JSON.parse(text));
      } catch (error) {
        parsed = { success: false as const, error };
      }
      if (!parsed.success)
        // A 200 that is not a chat completion is the provider's trouble of the moment.
        throw new LlmProviderError(
          'LLM_UNAVAILABLE',
          `${request.model}: the answer is not a chat completion`,
          { status, rateLimit, cause: parsed.error },
        );
      const data = parsed.data;
      const choice = data.choices[0]!;
      const promptTokens = data.usage?.prompt_tokens ?? 0;
      const completionTokens = data.usage?.completion_tokens ?? 0;
      return {
        content: choice.message.content ?? '',
        model: data.model ?? request.model,
        finishReason: choice.finish_reason ?? 'stop',
        usage: {
          promptTokens,
          completionTokens,
          totalTokens: data.usage?.total_tokens ?? promptTokens + completionTokens,
        },
        reasoningTokens: data.usage?.completion_tokens_details?.reasoning_tokens ?? 0,
        rateLimit,
      };
    },
    close() {
      closing ??= agent.close();
      return closing;
    },
  };
}

/** The provider's error body: `{ error: { message, type, code, failed_generation } }`. */
const errorBodySchema = z.object({
  error: z
    .object({
      message: z.string().optional(),
      code: z.union([z.string(), z.number()]).nullish(),
      failed_generation: z.string().optional(),
    })
    .loose(),
});

/** Codes by which Groq says a model cannot be used (a 404, or a 400 for older retirements). */
const MODEL_GONE = new Set(['model_not_found', 'model_decommissioned']);

function providerError(
  model: string,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  text: string,
): LlmProviderError {
  let body: z.infer<typeof errorBodySchema> | undefined;
  try {
    const parsed = errorBodySchema.safeParse(JSON.parse(text));
    body = parsed.success ? parsed.data : undefined;
  } catch {
    body = undefined;
  }
  const rawCode = body?.error.code;
  const providerCode = typeof rawCode === 'string' ? rawCode : undefined;
  const rateLimit = parseProviderRateLimit(headers);
  const details = {
    status,
    rateLimit,
    providerCode,
    failedGeneration: body?.error.failed_generation,
  };
  const message = `${model}: ${status} ${body?.error.message ?? text.slice(0, 200)}`;
  if (status === 429)
    return new LlmProviderError('LLM_RATE_LIMITED', message, {
      ...details,
      retryAfterMs: retryAfterMs(headers, rateLimit),
    });
  if (status === 401 || status === 403)
    return new LlmProviderError('LLM_UNAUTHORIZED', message, details);
  if (
    (providerCode !== undefined && MODEL_GONE.has(providerCode)) ||
    // Ollama: 404 `model "x" not found, try pulling it first`.
    (status === 404 && /model/i.test(body?.error.message ?? ''))
  )
    return new LlmProviderError('LLM_MODEL_UNAVAILABLE', message, details);
  if (status === 408) return new LlmProviderError('LLM_TIMEOUT', message, details);
  // Groq: "well-formed, but could not be followed due to semantic errors or model hallucinations".
  if (status === 422) return new LlmProviderError('LLM_UNPROCESSABLE', message, details);
  // 498: Groq's flex tier is out of capacity for now, a 5xx in all but number.
  if (status >= 500 || status === 498) {
    const explicit = explicitRetryAfterMs(headers);
    return new LlmProviderError('LLM_UNAVAILABLE', message, {
      ...details,
      ...(explicit === undefined ? {} : { retryAfterMs: explicit }),
    });
  }
  return new LlmProviderError('LLM_REJECTED', message, details);
}

/** A `retry-after` the server sent itself (seconds or an HTTP date), without defaults. */
function explicitRetryAfterMs(
  headers: Record<string, string | string[] | undefined>,
): number | undefined {
  const value = headers['retry-after'];
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (text === undefined || text === '') return undefined;
  return retryAfterMs({ 'retry-after': text }, {});
}
