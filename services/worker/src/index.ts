export { startWorkers, type RuntimeOptions, type WorkerRuntime } from './runtime.js';
export { handlers, servedQueues, type ServedQueue } from './handlers/index.js';
export type { WorkerDeps } from './context.js';
export { createPostingStore, type PostingStore } from './posting-store.js';
