export { createSchedulerLoop, type SchedulerLoop, type SchedulerLoopOptions } from './loop.js';
export { createSchedulePass, type SchedulePass, type SchedulePassOptions } from './pass.js';
export { createReconciler, type Reconciler, type ReconcilerOptions } from './reconciler.js';
export { createSiteLocks, type SiteLocks } from './locks.js';
export { startForcedPasses } from './forced-passes.js';
export { createBackfillResumer, type BackfillResumer } from './backfill.js';
export { createBodySweeper, type BodySweeper, type BodySweeperOptions } from './body-sweeper.js';
export {
  createLlmReextractor,
  type LlmReextractor,
  type LlmReextractorOptions,
} from './llm-reextraction.js';
export {
  createWebhookDispatcher,
  type WebhookDispatcher,
  type WebhookDispatcherOptions,
} from './webhook-dispatcher.js';
