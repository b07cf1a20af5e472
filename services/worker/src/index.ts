export { stagePolicies, startWorkers, type RuntimeOptions, type WorkerRuntime } from './runtime.js';
export { handlers } from './handlers.js';
export type { HandlerMap, WorkerDeps } from './context.js';
export { createSettlement, type Settlement } from './settlement/settlement.js';
export { createLlmDeps } from './llm/llm-deps.js';
export type { BackfillSettings } from './context.js';
export { defaultBackfillSettings } from './backfill/backfill.handler.js';
export { keepStartingBackfill, startBackfill } from './backfill/start-backfill.js';
