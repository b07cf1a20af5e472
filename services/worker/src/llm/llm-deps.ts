import type { ExtractionConfig, QueueConfig } from '@gleaner/config';
import { createLlmClient } from '@gleaner/llm';
import type { Redis } from 'ioredis';
import type { LlmDeps } from '../context.js';
import { createProviderGate, type ProviderGate } from './provider-gate.js';
import { createTenantTokenBudget } from './tenant-budget.js';

/** A gate wait longer than this parks the job in delayed rather than holding a slot. */
const MAX_GATE_WAIT_MS = 5_000;

/**
 * What a worker serving `llm-extract` needs, from its settings: the provider's client (GROQ_API_KEY
 * is required), seed 002's extraction settings, and the provider gate and tenant budgets it
 * shares with every replica through Redis.
 */
export function createLlmDeps(config: ExtractionConfig & QueueConfig, redis: Redis): LlmDeps {
  if (!config.GROQ_API_KEY)
    throw new Error('GROQ_API_KEY is required to serve llm-extract while EXTRACTION_ENABLED is on');
  // One gate per model: Groq limits each model on its own; both use the configured limits until
  // the provider's headers say otherwise.
  const gates = new Map<string, ProviderGate>();
  return {
    client: createLlmClient({
      baseURL: config.GROQ_BASE_URL,
      apiKey: config.GROQ_API_KEY,
      timeoutMs: config.EXTRACTION_REQUEST_TIMEOUT_MS,
    }),
    settings: {
      primaryModel: config.EXTRACTION_PRIMARY_MODEL,
      fallbackModel: config.EXTRACTION_FALLBACK_MODEL,
      confidenceThreshold: config.EXTRACTION_CONFIDENCE_THRESHOLD,
      maxTokens: config.EXTRACTION_MAX_TOKENS,
      maxInputChars: config.EXTRACTION_MAX_INPUT_CHARS,
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
          requestsPerMinute: config.EXTRACTION_RATE_LIMIT_RPM,
          tokensPerMinute: config.EXTRACTION_RATE_LIMIT_TPM,
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
