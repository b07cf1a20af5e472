import type { LlmClient, LlmResponseFormat, LlmUsage } from './client.js';
import { abortedCallError, LlmOutputError, LlmProviderError } from './errors.js';
import { estimateTokens, type ExtractionHooks } from './extract.js';

/**
 * One call whose answer must be a JSON object, for the LLM's other readers (a run's sync, pages
 * read in passes): `hooks` around it as around an extraction's calls (a failed generation counts
 * as answered), strict `json_schema` where the model supports it, JSON mode otherwise, room for a
 * reasoning model's reasoning, fences tolerated. An answer that is not JSON is an
 * `LlmOutputError`; provider errors are the client's.
 */
export async function askForJson(
  client: LlmClient,
  options: {
    model: string;
    maxTokens: number;
    signal?: AbortSignal;
    hooks?: ExtractionHooks;
    system: string;
    user: string;
    schemaName: string;
    schema: Record<string, unknown>;
  },
): Promise<{ value: unknown; usage: LlmUsage }> {
  const { model, signal, hooks } = options;
  const messages = [
    { role: 'system' as const, content: options.system },
    { role: 'user' as const, content: options.user },
  ];
  const profile = client.profile(model);
  const responseFormat: LlmResponseFormat = profile.strictJsonSchema
    ? { type: 'json_schema', name: options.schemaName, schema: options.schema }
    : { type: 'json_object' };
  const maxTokens = options.maxTokens + (profile.reasoning ? 1024 : 0);
  if (signal?.aborted) throw abortedCallError(signal, model);
  await hooks?.beforeCall?.({
    model,
    estimatedTokens: estimateTokens(options.system + options.user) + maxTokens,
  });
  let content: string;
  let usage: LlmUsage;
  try {
    const completion = await client.complete({
      model,
      messages,
      maxTokens,
      responseFormat,
      ...(profile.reasoning ? { reasoningEffort: 'low' as const } : {}),
      signal,
    });
    await hooks?.afterCall?.({
      model,
      answered: true,
      usage: completion.usage,
      rateLimit: completion.rateLimit,
    });
    content = completion.content;
    usage = completion.usage;
  } catch (error) {
    const answered =
      error instanceof LlmProviderError && error.providerCode === 'json_validate_failed';
    await hooks?.afterCall?.({
      model,
      answered,
      rateLimit: error instanceof LlmProviderError ? error.rateLimit : undefined,
      error,
    });
    throw error;
  }
  try {
    return { value: JSON.parse(content.trim().replace(/^```(?:json)?\s*|\s*```$/g, '')), usage };
  } catch {
    throw new LlmOutputError([
      { model, problem: 'invalid_json', detail: 'the answer is not JSON' },
    ]);
  }
}
