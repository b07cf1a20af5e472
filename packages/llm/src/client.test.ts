import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createLlmClient,
  llmAgentOptions,
  modelProfile,
  type LlmCompletionRequest,
} from './client.js';
import { LlmProviderError } from './errors.js';
import {
  chatCompletion,
  errorAnswer,
  startFakeGroq,
  type FakeGroq,
} from './groq-server.test-support.js';

let groq: FakeGroq;

beforeEach(async () => {
  groq = await startFakeGroq();
});

afterEach(async () => {
  await groq.close();
});

const request: LlmCompletionRequest = {
  model: 'openai/gpt-oss-20b',
  messages: [
    { role: 'system', content: 'Answer with a JSON object.' },
    { role: 'user', content: 'Hello' },
  ],
  maxTokens: 256,
};

function client(timeoutMs = 5000) {
  return createLlmClient({
    provider: 'groq',
    baseURL: groq.baseURL,
    apiKey: 'test-key',
    timeoutMs,
  });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('createLlmClient', () => {
  it('sends one JSON-mode chat completion at temperature 0 and reads content, usage and limits', async () => {
    groq.answer(chatCompletion('{"ok":true}', { promptTokens: 40, completionTokens: 5 }));

    const completion = await client().complete(request);

    expect(completion).toEqual({
      content: '{"ok":true}',
      model: 'openai/gpt-oss-20b',
      finishReason: 'stop',
      reasoningTokens: 0,
      usage: { promptTokens: 40, completionTokens: 5, totalTokens: 45 },
      rateLimit: {
        limitRequests: 14400,
        remainingRequests: 14370,
        resetRequestsMs: 179_560,
        limitTokens: 6000,
        remainingTokens: 5997,
        resetTokensMs: 30,
      },
    });
    expect(groq.requests).toHaveLength(1);
    const [sent] = groq.requests;
    expect(sent?.path).toBe('/openai/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer test-key');
    expect(sent?.body).toMatchObject({
      model: 'openai/gpt-oss-20b',
      messages: request.messages,
      max_completion_tokens: 256,
      temperature: 0,
      response_format: { type: 'json_object' },
    });
    expect(sent?.body).not.toHaveProperty('tools');
  });

  it('maps a 429 to LLM_RATE_LIMITED with retry-after, once, without retrying', async () => {
    groq.answer(
      errorAnswer(
        429,
        { message: 'Rate limit reached', type: 'tokens', code: 'rate_limit_exceeded' },
        { 'retry-after': '7', 'x-ratelimit-remaining-tokens': '0' },
      ),
    );

    const error = await rejection(client().complete(request));

    expect(error).toBeInstanceOf(LlmProviderError);
    expect(error).toMatchObject({
      code: 'LLM_RATE_LIMITED',
      status: 429,
      retryAfterMs: 7000,
      retryable: true,
      retryClass: 'transient',
      providerCode: 'rate_limit_exceeded',
      rateLimit: { remainingTokens: 0, resetTokensMs: 30 },
    });
    expect(groq.requests).toHaveLength(1);
  });

  it('takes a 429 wait from the exhausted window when there is no retry-after', async () => {
    groq.answer(
      errorAnswer(
        429,
        { message: 'Rate limit reached' },
        {
          'x-ratelimit-remaining-requests': '0',
          'x-ratelimit-reset-requests': '7.66s',
        },
      ),
      errorAnswer(
        429,
        { message: 'Rate limit reached' },
        {
          'x-ratelimit-reset-requests': 'soon',
          'x-ratelimit-reset-tokens': 'soon',
        },
      ),
    );

    await expect(client().complete(request)).rejects.toMatchObject({ retryAfterMs: 7660 });
    await expect(client().complete(request)).rejects.toMatchObject({ retryAfterMs: 1000 });
  });

  it('maps a 5xx to LLM_UNAVAILABLE, retryable, and does not retry it', async () => {
    groq.answer(
      errorAnswer(500, { message: 'Internal Server Error', type: 'internal_server_error' }),
    );

    await expect(client().complete(request)).rejects.toMatchObject({
      name: 'LlmProviderError',
      code: 'LLM_UNAVAILABLE',
      status: 500,
      retryable: true,
    });
    expect(groq.requests).toHaveLength(1);
  });

  it('maps another 4xx to LLM_REJECTED, permanent, keeping the provider code', async () => {
    groq.answer(
      errorAnswer(400, {
        message:
          "Failed to generate JSON. Please adjust your prompt. See 'failed_generation' for more details.",
        code: 'json_validate_failed',
      }),
    );

    await expect(client().complete(request)).rejects.toMatchObject({
      code: 'LLM_REJECTED',
      status: 400,
      retryable: false,
      retryClass: 'permanent',
      providerCode: 'json_validate_failed',
    });
  });

  it('maps a refused connection to LLM_UNAVAILABLE', async () => {
    const baseURL = groq.baseURL;
    await groq.close();
    const closedClient = createLlmClient({
      provider: 'groq',
      baseURL,
      apiKey: 'k',
      timeoutMs: 2000,
    });

    await expect(closedClient.complete(request)).rejects.toMatchObject({
      code: 'LLM_UNAVAILABLE',
      retryable: true,
    });
    groq = await startFakeGroq();
  });

  it('gives up on a slow answer at the deadline with LLM_TIMEOUT and closes the request', async () => {
    groq.answer({ ...chatCompletion('{}'), delayMs: 5000 });
    const started = Date.now();

    const error = await rejection(client(200).complete(request));

    expect(error).toBeInstanceOf(LlmProviderError);
    expect(error).toMatchObject({ code: 'LLM_TIMEOUT', retryable: true });
    expect(Date.now() - started).toBeLessThan(2000);
    await expect.poll(() => groq.closedConnections()).toBe(1);
  });

  it('gives up at the deadline on an answer whose body stalls after its headers', async () => {
    // The deadline covers the whole call, headers and body: undici's headersTimeout ends once
    // the headers arrive, and its bodyTimeout counts only the wait between two chunks.
    groq.answer({ ...chatCompletion('{}'), stallBody: true });

    await expect(client(300).complete(request)).rejects.toMatchObject({ code: 'LLM_TIMEOUT' });
  });

  it("aborts the request when the caller's signal aborts, rejecting with its reason", async () => {
    groq.answer({ ...chatCompletion('{}'), delayMs: 5000 });
    const controller = new AbortController();
    const shutdown = new Error('worker shutting down');
    setTimeout(() => controller.abort(shutdown), 100);

    const error = await rejection(client().complete({ ...request, signal: controller.signal }));

    expect(error).toBe(shutdown);
    await expect.poll(() => groq.closedConnections()).toBe(1);
  });

  it('rejects with LLM_TIMEOUT when the signal aborts with a reason that is not an Error', async () => {
    groq.answer({ ...chatCompletion('{}'), delayMs: 5000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort('job cancelled'), 100);

    await expect(
      client().complete({ ...request, signal: controller.signal }),
    ).rejects.toMatchObject({ code: 'LLM_TIMEOUT', retryable: true });
  });

  it('sends nothing when the signal has already aborted', async () => {
    const reason = new Error('cancelled before start');

    await expect(client().complete({ ...request, signal: AbortSignal.abort(reason) })).rejects.toBe(
      reason,
    );
    expect(groq.requests).toHaveLength(0);
  });
});

describe('createLlmClient against reasoning models and other servers', () => {
  const gptOss: LlmCompletionRequest = {
    ...request,
    model: 'openai/gpt-oss-20b',
    maxTokens: 1280,
    reasoningEffort: 'low',
    responseFormat: { type: 'json_schema', name: 'resume_fields', schema: { type: 'object' } },
  };

  it('asks gpt-oss on Groq for low effort, no reasoning in the answer, a strict schema', async () => {
    groq.answer({
      ...chatCompletion('{"ok":true}', { model: 'openai/gpt-oss-20b' }),
    });
    await client().complete(gptOss);
    expect(groq.requests[0]?.body).toMatchObject({
      model: 'openai/gpt-oss-20b',
      max_completion_tokens: 1280,
      reasoning_effort: 'low',
      include_reasoning: false,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'resume_fields', strict: true, schema: { type: 'object' } },
      },
    });
    expect(groq.requests[0]?.body).not.toHaveProperty('reasoning_format');
  });

  it('reads finish_reason length and the reasoning tokens', async () => {
    const answer = chatCompletion('{"primary_sk', { model: 'openai/gpt-oss-20b' });
    const body = answer.body as {
      choices: { finish_reason: string }[];
      usage: Record<string, unknown>;
    };
    body.choices[0]!.finish_reason = 'length';
    body.usage.completion_tokens_details = { reasoning_tokens: 15 };
    groq.answer(answer);
    await expect(client().complete(gptOss)).resolves.toMatchObject({
      finishReason: 'length',
      reasoningTokens: 15,
    });
  });

  it.each([
    [404, 'model_not_found', 'LLM_MODEL_UNAVAILABLE', true],
    [400, 'model_decommissioned', 'LLM_MODEL_UNAVAILABLE', true],
    [401, 'invalid_api_key', 'LLM_UNAUTHORIZED', true],
    [422, undefined, 'LLM_UNPROCESSABLE', true],
    [413, 'rate_limit_exceeded', 'LLM_REJECTED', false],
  ] as const)('maps %s %s to %s', async (status, code, expected, retryable) => {
    groq.answer(errorAnswer(status, { message: `refused ${status}`, ...(code ? { code } : {}) }));
    await expect(client().complete(request)).rejects.toMatchObject({
      code: expected,
      retryable,
      status,
    });
  });

  it("keeps json_validate_failed's failed_generation", async () => {
    groq.answer({
      status: 400,
      body: {
        error: {
          message: 'Failed to generate JSON.',
          type: 'invalid_request_error',
          code: 'json_validate_failed',
          failed_generation: '```json\n{"ok":true}\n```',
        },
      },
    });
    await expect(client().complete(request)).rejects.toMatchObject({
      providerCode: 'json_validate_failed',
      failedGeneration: '```json\n{"ok":true}\n```',
    });
  });

  it("honours a 503's retry-after", async () => {
    groq.answer(errorAnswer(503, { message: 'over capacity' }, { 'retry-after': '7' }));
    await expect(client().complete(request)).rejects.toMatchObject({
      code: 'LLM_UNAVAILABLE',
      retryAfterMs: 7000,
    });
  });

  it('sets the connections’ own timeouts from the deadline, above undici’s 300 s defaults', () => {
    expect(llmAgentOptions(900_000)).toEqual({
      connectTimeout: 900_000,
      headersTimeout: 900_000,
      bodyTimeout: 900_000,
    });
  });

  it('refuses a base URL that is not http(s) and a deadline that is not positive', () => {
    expect(() =>
      createLlmClient({ provider: 'groq', baseURL: 'ftp://x', timeoutMs: 1000 }),
    ).toThrow(/baseURL must be http/);
    expect(() => createLlmClient({ provider: 'groq', baseURL: 'http://x', timeoutMs: 0 })).toThrow(
      /timeoutMs must be a positive integer/,
    );
  });

  it('profiles models: strict schemas and reasoning for gpt-oss on Groq, schemas everywhere else', () => {
    expect(modelProfile('groq', 'openai/gpt-oss-120b')).toEqual({
      reasoning: true,
      strictJsonSchema: true,
    });
    expect(modelProfile('groq', 'qwen/qwen3.6-27b')).toEqual({
      reasoning: false,
      strictJsonSchema: false,
    });
    expect(modelProfile('openai-compatible', 'gpt-oss:20b')).toEqual({
      reasoning: true,
      strictJsonSchema: true,
    });
    expect(modelProfile('openai-compatible', 'qwen2.5-7b-instruct')).toEqual({
      reasoning: false,
      strictJsonSchema: true,
    });
  });
});
