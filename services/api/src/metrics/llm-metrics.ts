import { listTenantsWithLlmWork } from '@gleaner/db';
import { getMany, readLlmAlerts, readLlmCounts, tenantTokensKey } from '@gleaner/queue';
import { Counter, Gauge } from 'prom-client';
import { MAX_LABELLED_TENANTS, type CollectorFactory } from './collector.js';

/**
 * The LLM stage: provider calls, tokens, fallbacks and grounded values as the workers counted
 * them in Redis, and what is left of the daily token budget of each tenant that has extractions
 * waiting (the tenants the budget can hold back now; a posting's tenant is `site:<site id>`).
 */
export const llmMetrics: CollectorFactory = (
  registry,
  { db, redis, prefix, tenantDailyTokens },
) => {
  const registers = [registry];
  const requests = new Counter({
    name: 'gleaner_llm_requests_total',
    help: 'Calls to the LLM provider by model and outcome (ok, or the error code).',
    labelNames: ['model', 'outcome'] as const,
    registers,
  });
  const tokens = new Counter({
    name: 'gleaner_llm_tokens_total',
    help: 'Tokens the LLM provider counted, by model and kind (prompt or completion).',
    labelNames: ['model', 'kind'] as const,
    registers,
  });
  const fallbacks = new Counter({
    name: 'gleaner_llm_fallbacks_total',
    help: "Extractions answered by the fallback model, by why the primary's answer was not kept.",
    labelNames: ['reason'] as const,
    registers,
  });
  const grounding = new Counter({
    name: 'gleaner_llm_grounding_values_total',
    help: 'Values of accepted LLM answers by extraction kind (source: resume, posting) and whether grounding kept them or dropped them as not in the text (outcome); dropped / (kept + dropped) is the drop rate.',
    labelNames: ['source', 'outcome'] as const,
    registers,
  });
  const budget = new Gauge({
    name: 'gleaner_llm_tenant_daily_budget_tokens',
    help: 'Tokens each tenant may spend per UTC day (EXTRACTION_TENANT_DAILY_TOKENS; 0: no limit).',
    registers,
  });
  const remaining = new Gauge({
    name: 'gleaner_llm_tenant_budget_remaining_tokens',
    help: `Tokens left today for each tenant with extractions waiting (first ${MAX_LABELLED_TENANTS}); absent with no limit.`,
    labelNames: ['tenant'] as const,
    registers,
  });
  const alerts = new Gauge({
    name: 'gleaner_llm_provider_alert',
    help: 'What only an operator can fix, 1 while it lasts: a model the provider does not serve (kind model_unavailable) or a refused API key (kind unauthorized: calls are paused).',
    labelNames: ['kind', 'model'] as const,
    registers,
  });
  const families = [requests, tokens, fallbacks, grounding, budget, remaining, alerts];

  async function readRemaining(): Promise<[string, number][]> {
    if (tenantDailyTokens <= 0) return [];
    const tenants = await listTenantsWithLlmWork(db, MAX_LABELLED_TENANTS);
    if (tenants.length === 0) return [];
    const now = Date.now();
    const used = await getMany(
      redis,
      tenants.map((tenant) => tenantTokensKey(prefix, tenant, now)),
    );
    return tenants.map((tenant, index) => [
      tenant,
      Math.max(0, tenantDailyTokens - Number(used[index] ?? 0)),
    ]);
  }

  return {
    name: 'llm',
    async collect(signal) {
      const [counts, left, raised] = await Promise.all([
        readLlmCounts(redis, prefix),
        readRemaining(),
        readLlmAlerts(redis, prefix),
      ]);
      signal.throwIfAborted();
      for (const family of families) family.reset();
      for (const { model, outcome, count } of counts.requests)
        requests.inc({ model, outcome }, count);
      for (const { model, kind, count } of counts.tokens) tokens.inc({ model, kind }, count);
      for (const { reason, count } of counts.fallbacks) fallbacks.inc({ reason }, count);
      for (const { source, outcome, count } of counts.grounding)
        grounding.inc({ source, outcome }, count);
      budget.set(Math.max(0, tenantDailyTokens));
      for (const [tenant, tokensLeft] of left) remaining.set({ tenant }, tokensLeft);
      for (const alert of raised) alerts.set({ kind: alert.kind, model: alert.model ?? '' }, 1);
    },
    clear() {
      for (const family of families) family.reset();
    },
  };
};
