export * from './schema.js';
export * from './errors.js';
export {
  createDb,
  defaultMigrationsFolder,
  pingDb,
  pendingMigrations,
  runMigrations,
  type Database,
  type DbHandle,
} from './client.js';
export * from './repositories/sites.js';
export * from './repositories/runs.js';
export * from './repositories/alerts.js';
export * from './repositories/cadence.js';
export * from './repositories/changes.js';
export * from './repositories/postings.js';
export * from './repositories/posting-lists.js';
export * from './repositories/postings-backfill.js';
export { CursorInvalidError } from './repositories/cursor.js';
export * from './repositories/bodies.js';
export * from './repositories/posting-work.js';
export * from './repositories/schedules.js';
export * from './repositories/reconcile.js';
export * from './posting-fields.js';
export * from './cadence.js';
export * from './repositories/documents.js';
export * from './repositories/document-workers.js';
export * from './repositories/llm-extractions.js';
export * from './repositories/llm-reextractions.js';
export * from './repositories/api-keys.js';
export * from './repositories/dead-letters.js';
export * from './repositories/metrics.js';
export * from './repositories/storage.js';
export * from './repositories/webhooks.js';
export * from './repositories/worker-heartbeats.js';
export * from './repositories/posting-sync.js';
export * from './repositories/listing-posts.js';
export * from './repositories/cross-source.js';
export * from './repositories/site-templates.js';
