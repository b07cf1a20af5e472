import type { RedisClient } from './connection.js';

/**
 * What an operator must fix for the LLM stage to work: a model the provider no longer serves
 * (the fallback answers meanwhile), or a key the provider refuses (the stage pauses: every
 * replica's calls wait instead of failing the backlog one job at a time). Workers raise and clear
 * them in one Redis hash (`<prefix>:llm:alerts`, a field per kind and model); the API shows them
 * in `/admin/extraction/status` and as `gleaner_llm_provider_alert` in `/metrics`.
 */
export type LlmAlertKind = 'model_unavailable' | 'unauthorized';

export interface LlmAlert {
  kind: LlmAlertKind;
  /** The model concerned; null when the alert is about the provider (a refused key). */
  model: string | null;
  /** The provider's own words. */
  message: string;
  /** When it was first raised, and last seen (ISO). */
  since: string;
  lastSeen: string;
}

const alertsKey = (prefix: string) => `${prefix}:llm:alerts`;
const pauseKey = (prefix: string) => `${prefix}:llm:paused`;
const field = (kind: LlmAlertKind, model: string | null) => `${kind}:${model ?? '*'}`;

/** Raises (or refreshes) an alert, keeping when it was first raised. */
export async function raiseLlmAlert(
  redis: RedisClient,
  prefix: string,
  alert: { kind: LlmAlertKind; model: string | null; message: string },
  now = new Date(),
): Promise<void> {
  const key = alertsKey(prefix);
  const name = field(alert.kind, alert.model);
  const previous = await redis.hget(key, name);
  const since = previous ? (JSON.parse(previous) as LlmAlert).since : now.toISOString();
  const value: LlmAlert = { ...alert, since, lastSeen: now.toISOString() };
  await redis.hset(key, name, JSON.stringify(value));
}

/** Clears an alert once the call it was about succeeds; true when there was one. */
export async function clearLlmAlert(
  redis: RedisClient,
  prefix: string,
  kind: LlmAlertKind,
  model: string | null,
): Promise<boolean> {
  return (await redis.hdel(alertsKey(prefix), field(kind, model))) > 0;
}

/** Every alert raised and not cleared, oldest first. */
export async function readLlmAlerts(redis: RedisClient, prefix: string): Promise<LlmAlert[]> {
  const entries = Object.values(await redis.hgetall(alertsKey(prefix)));
  return entries
    .map((value) => JSON.parse(value) as LlmAlert)
    .sort((a, b) => a.since.localeCompare(b.since));
}

/** Pauses every replica's provider calls for `ms` (a refused key); the latest pause wins. */
export async function pauseLlmCalls(redis: RedisClient, prefix: string, ms: number): Promise<void> {
  await redis.set(pauseKey(prefix), '1', 'PX', Math.max(1, Math.ceil(ms)));
}

/** How long provider calls stay paused, in ms; 0 when they are not. */
export async function llmCallsPausedForMs(redis: RedisClient, prefix: string): Promise<number> {
  return Math.max(0, await redis.pttl(pauseKey(prefix)));
}
