import Groq, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'groq-sdk';
import { abortedCallError, LlmProviderError } from './errors.js';
import {
  parseProviderRateLimit,
  retryAfterMs,
  type HeaderSource,
  type ProviderRateLimit,
} from './rate-limit.js';

/** Where and how to reach the provider (an OpenAI-compatible Groq endpoint). */
export interface LlmClientOptions {
  /** Without the API path: `https://api.groq.com`; the SDK appends `/openai/v1/...`. */
  baseURL: string;
  apiKey: string;
  /** Deadline of one call, from sending to the parsed answer. */
  timeoutMs: number;
}

/** One chat message; extraction only ever sends a system and a user message. */
export interface LlmMessage {
  role: 'system' | 'user';
  content: string;
}

/** One JSON-mode chat completion request. */
export interface LlmCompletionRequest {
  model: string;
  messages: LlmMessage[];
  /** Cap on the answer's tokens. */
  maxTokens: number;
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
  usage: LlmUsage;
  rateLimit: ProviderRateLimit;
}

/** The provider as extraction sees it: one call, one answer, typed errors, no retries. */
export interface LlmClient {
  /** Rejects with `LlmProviderError`, or with the signal's reason when that is an Error. */
  complete(request: LlmCompletionRequest): Promise<LlmCompletion>;
}

/**
 * A client for Groq's chat completions in JSON mode (`response_format: json_object`),
 * temperature 0, no tools. The SDK's retries are off (`maxRetries: 0`): the queue retries.
 * The deadline covers the whole call, reading the body included (the SDK's own `timeout`
 * stops once headers arrive).
 */
export function createLlmClient(options: LlmClientOptions): LlmClient {
  const groq = new Groq({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    timeout: options.timeoutMs,
    maxRetries: 0,
  });

  return {
    async complete(request) {
      const deadline = AbortSignal.timeout(options.timeoutMs);
      const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
      try {
        const { data, response } = await groq.chat.completions
          .create(
            {
              model: request.model,
              messages: request.messages,
              max_completion_tokens: request.maxTokens,
              temperature: 0,
              response_format: { type: 'json_object' },
              stream: false,
            },
            { signal },
          )
          .withResponse();
        return {
          content: data.choices[0]?.message.content ?? '',
          model: data.model,
          usage: {
            promptTokens: data.usage?.prompt_tokens ?? 0,
            completionTokens: data.usage?.completion_tokens ?? 0,
            totalTokens: data.usage?.total_tokens ?? 0,
          },
          rateLimit: parseProviderRateLimit(response.headers),
        };
      } catch (error) {
        if (request.signal?.aborted) throw abortedCallError(request.signal, request.model);
        if (deadline.aborted || error instanceof APIConnectionTimeoutError) {
          throw new LlmProviderError(
            'LLM_TIMEOUT',
            `${request.model} did not answer within ${options.timeoutMs} ms`,
            { cause: error },
          );
        }
        throw providerError(error, request.model);
      }
    },
  };
}

/** The provider's own error code in an OpenAI-style body: `{ error: { code } }`. */
function bodyErrorCode(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const inner = (body as { error?: unknown }).error;
  if (typeof inner !== 'object' || inner === null) return undefined;
  const code = (inner as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

function providerError(error: unknown, model: string): LlmProviderError {
  if (error instanceof APIError && typeof error.status === 'number' && error.headers) {
    const status = error.status;
    const headers = error.headers as HeaderSource;
    const rateLimit = parseProviderRateLimit(headers);
    const details = { status, rateLimit, providerCode: bodyErrorCode(error.error), cause: error };
    const message = `${model}: ${error.message}`;
    if (status === 429) {
      return new LlmProviderError('LLM_RATE_LIMITED', message, {
        ...details,
        retryAfterMs: retryAfterMs(headers, rateLimit),
      });
    }
    if (status === 408) return new LlmProviderError('LLM_TIMEOUT', message, details);
    // 498: Groq's flex tier is out of capacity for now, a 5xx in all but number.
    if (status >= 500 || status === 498) {
      return new LlmProviderError('LLM_UNAVAILABLE', message, details);
    }
    return new LlmProviderError('LLM_REJECTED', message, details);
  }
  if (error instanceof APIConnectionError) {
    return new LlmProviderError('LLM_UNAVAILABLE', `${model}: ${error.message}`, { cause: error });
  }
  // Anything else (an answer whose body is not JSON, a reset mid-body) is the provider's
  // trouble of the moment rather than a verdict on the request.
  const detail = error instanceof Error ? error.message : String(error);
  return new LlmProviderError('LLM_UNAVAILABLE', `${model}: ${detail}`, { cause: error });
}
