import type { RedisClient } from '@gleaner/queue';
import type { ExtractionConfig, QueueConfig } from '@gleaner/config';
import { createLlmClient } from '@gleaner/llm';
import type { LlmDeps } from '../context.js';
import { createProviderGate, type ProviderGate } from './provider-gate.js';
import { createTenantTokenBudget } from './tenant-budget.js';

/** A gate wait longer than this parks the job in delayed rather than holding a slot. */
const MAX_GATE_WAIT_MS = 5_000;

/** Groq's free-tier limits for one model, the gate's own when none are configured (decision 0009). */
const GROQ_DEFAULT_RPM = 30;
const GROQ_DEFAULT_TPM = 6_000;

/**
 * What a worker serving `llm-extract` needs, from its settings: the provider's client (Groq with
 * GROQ_API_KEY, or an OpenAI-compatible server at LLM_BASE_URL), seed 002's extraction settings,
 * and the provider gate and tenant budgets it shares with every replica through Redis. A setting
 * missing for the chosen provider stops the worker with one line naming it.
 */
export function createLlmDeps(config: ExtractionConfig & QueueConfig, redis: RedisClient): LlmDeps {
  const isGroq = config.LLM_PROVIDER === 'groq';
  if (isGroq && !config.GROQ_API_KEY)
    throw new Error(
      'GROQ_API_KEY is required to serve llm-extract with LLM_PROVIDER=groq while EXTRACTION_ENABLED is on',
    );
  if (!isGroq && !config.LLM_BASE_URL)
    throw new Error(
      'LLM_BASE_URL is required with LLM_PROVIDER=openai-compatible (e.g. http://127.0.0.1:8080/v1)',
    );
  // A local server has no limits unless the operator sets some; Groq always has.
  const requestsPerMinute = config.EXTRACTION_RATE_LIMIT_RPM ?? (isGroq ? GROQ_DEFAULT_RPM : 0);
  const tokensPerMinute = config.EXTRACTION_RATE_LIMIT_TPM ?? (isGroq ? GROQ_DEFAULT_TPM : 0);
  // One gate per model: Groq limits each model on its own; both use the configured limits until
  // the provider's headers say otherwise.
  const gates = new Map<string, ProviderGate>();
  return {
    client: createLlmClient(
      isGroq
        ? {
            provider: 'groq',
            baseURL: config.GROQ_BASE_URL,
            apiKey: config.GROQ_API_KEY,
            timeoutMs: config.EXTRACTION_REQUEST_TIMEOUT_MS,
          }
        : {
            provider: 'openai-compatible',
            baseURL: config.LLM_BASE_URL!,
            apiKey: config.LLM_API_KEY,
            timeoutMs: config.EXTRACTION_REQUEST_TIMEOUT_MS,
          },
    ),
    version: config.EXTRACTION_VERSION,
    settings: {
      primaryModel: config.EXTRACTION_PRIMARY_MODEL,
      fallbackModel: config.EXTRACTION_FALLBACK_MODEL,
      confidenceThreshold: config.EXTRACTION_CONFIDENCE_THRESHOLD,
      maxTokens: config.EXTRACTION_MAX_TOKENS,
      maxInputChars: config.EXTRACTION_MAX_INPUT_CHARS,
      reasoningEffort: config.EXTRACTION_REASONING_EFFORT,
      reasoningTokens: config.EXTRACTION_REASONING_TOKENS,
      responseFormat: config.EXTRACTION_RESPONSE_FORMAT,
      maxCalls: config.EXTRACTION_MAX_ATTEMPTS,
      caps: {
        primarySkills: config.EXTRACTION_MAX_PRIMARY_SKILLS,
        recentTitles: config.EXTRACTION_MAX_RECENT_TITLES,
        certifications: config.EXTRACTION_MAX_CERTIFICATIONS,
        industries: config.EXTRACTION_MAX_INDUSTRIES,
      },
    },
    gateFor(model) {
      let gate = gates.get(model);
      if (!gate) {
        gate = createProviderGate({
          redis,
          prefix: config.QUEUE_PREFIX,
          name: model,
          requestsPerMinute,
          tokensPerMinute,
          minuteMs: config.EXTRACTION_RATE_WINDOW_MS,
        });
        gates.set(model, gate);
      }
      return gate;
    },
    budget: createTenantTokenBudget({
      redis,
      prefix: config.QUEUE_PREFIX,
      dailyTokens: config.EXTRACTION_TENANT_DAILY_TOKENS,
    }),
    redis,
    prefix: config.QUEUE_PREFIX,
    maxGateWaitMs: MAX_GATE_WAIT_MS,
  };
}
