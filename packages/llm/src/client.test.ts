import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLlmClient, type LlmCompletionRequest } from './client.js';
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
  model: 'llama-3.1-8b-instant',
  messages: [
    { role: 'system', content: 'Answer with a JSON object.' },
    { role: 'user', content: 'Hello' },
  ],
  maxTokens: 256,
};

function client(timeoutMs = 5000) {
  return createLlmClient({ baseURL: groq.baseURL, apiKey: 'test-key', timeoutMs });
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
      model: 'llama-3.1-8b-instant',
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
      model: 'llama-3.1-8b-instant',
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
    const closedClient = createLlmClient({ baseURL, apiKey: 'k', timeoutMs: 2000 });

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

  it('gives up on an answer whose body stalls, which the SDK timeout alone would not', async () => {
    // groq-sdk clears its timeout once headers arrive; the client's deadline covers the body.
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
