import type { Database } from '@gleaner/db';
import type { DocumentLimits, DocumentParserPool } from '@gleaner/extraction/documents';
import type { Fetcher, RobotsCache, SiteGate } from '@gleaner/http';
import type { SourceCredentials } from '@gleaner/sources';
import type { Logger } from '@gleaner/logger';
import type { ExtractionSettings, LlmClient } from '@gleaner/llm';
import type {
  Counters,
  JobPayload,
  LlmQueueSettings,
  Queues,
  WorkQueueName,
  RedisClient,
} from '@gleaner/queue';
import type { Job } from 'bullmq';
import type { DocumentWorker } from './documents/document-worker.js';
import type { RunLogDeps } from './job-loggers.js';
import type { ProviderGate } from './llm/provider-gate.js';
import type { TenantTokenBudget } from './llm/tenant-budget.js';
import type { PageAnalyser } from './page-analysis/page-analyser.js';
import type { Settlement } from './settlement/settlement.js';

/** What every handler gets: built once in main.ts and passed in. */
export interface WorkerDeps {
  db: Database;
  queues: Queues;
  fetcher: Fetcher;
  /** Per-site politeness shared by every replica (rate, pauses, concurrency, cooldowns). */
  gate: SiteGate;
  robots: RobotsCache;
  logger: Logger;
  /**
   * Where job lines about runs are copied (the run page's log), from which level; unset
   * (RUN_LOG_LEVEL=silent) copies none. Built and closed by main.ts.
   */
  runLog?: RunLogDeps;
  /** Jobs, site requests and LLM calls, counted in Redis for `GET /metrics`. */
  counters: Counters;
  /** Required by a worker that serves `documents`, built in main.ts only for one that does. */
  documents?: DocumentDeps;
  /**
   * Set while EXTRACTION_ENABLED is on: how resumes whose text is ready and pages the rules
   * cannot read are handed to the LLM stage.
   */
  extraction?: LlmQueueSettings;
  /** Required by a worker that serves `llm-extract`, built in main.ts only for one that does. */
  llm?: LlmDeps;
  /** How the `backfill` queue re-extracts stored postings; its defaults when absent. */
  backfill?: BackfillSettings;
  /** Required by a worker that serves `webhooks`, built in main.ts only for one that does. */
  webhooks?: WebhookDeps;
  /** Keys of the job-search APIs (ADZUNA_*, USAJOBS_*), handed to the search-driven adapters. */
  sourceCredentials?: SourceCredentials;
}

/** What sending webhook messages needs (decision 0023). */
export interface WebhookDeps {
  /** The SSRF-safe fetcher, following no redirect, with the attempt's deadline. */
  fetcher: Fetcher;
  /** The waits between a message's attempts (`WEBHOOK_RETRY_SCHEDULE`). */
  schedule: readonly number[];
}

/** An extractor backfill's settings (decision 0013). */
export interface BackfillSettings {
  /** The version this worker's extractor writes (`EXTRACTOR_VERSION`; a test gives another). */
  version: string;
  /** Postings per batch job (`BACKFILL_BATCH_SIZE`). */
  batchSize: number;
  /** Postings per second at most, across the backfill (`BACKFILL_RATE_PER_SECOND`). */
  ratePerSecond: number;
}

/** What extracting with the LLM needs beside the common dependencies. */
export interface LlmDeps {
  client: LlmClient;
  settings: ExtractionSettings;
  /**
   * The prompt version this worker's prompts and settings are (`EXTRACTION_VERSION`): it runs
   * jobs of this version only.
   */
  version: string;
  /** The provider's limits for one model (Groq's are per model), shared by every replica. */
  gateFor(model: string): ProviderGate;
  /** Each tenant's daily tokens. */
  budget: TenantTokenBudget;
  /** Where completion events are published (the producer connection), and under which prefix. */
  redis: RedisClient;
  prefix: string;
  /** Longest wait for the gate inside a job; a longer one parks the job in delayed. */
  maxGateWaitMs: number;
}

/** What extracting documents needs beside the common dependencies. */
export interface DocumentDeps {
  /** Parser processes (`WORKER_DOCUMENT_PARSERS`), closed by main.ts at shutdown. */
  parser: DocumentParserPool;
  limits: DocumentLimits;
  /** Where completion events are published (the producer connection). */
  redis: RedisClient;
  /** `DOCUMENT_HEARTBEAT_INTERVAL_MS`. */
  heartbeatIntervalMs: number;
}

export interface HandlerContext extends WorkerDeps {
  /** Batched posting reads and settles, and the one way runs close (built in runtime.ts). */
  settlement: Settlement;
  /**
   * Where pages are read (fingerprints, extraction, visible text): in threads, under the job's
   * signal and a time budget per page (built in runtime.ts).
   */
  analyser: PageAnalyser;
  job: Job;
  log: Logger;
  /**
   * Aborts the job's work: BullMQ's signal (a lost lock, a forced close), its queue's timeout or
   * its run's cancellation (job-signal.ts). Undefined only for a job settled after stalling.
   */
  signal: AbortSignal | undefined;
  /** The job's lock token: needed to move it back to delayed while it is active. */
  token: string | undefined;
  /** This process's document worker (heartbeat, counters): set when it serves `documents`. */
  documentWorker: DocumentWorker | undefined;
}

/**
 * A stage's work: what a job does when it runs. What a job that will not run again does to its
 * row, and how a claimed row is let go, are the stage's ledger's (`@gleaner/queue`'s `ledgers`),
 * which the runtime calls, as the reconciler does.
 */
export interface JobHandler<Q extends WorkQueueName> {
  run(payload: JobPayload<Q>, context: HandlerContext): Promise<unknown>;
}

/** One handler for every queue the catalogue gives workers. */
export type HandlerMap = { [Q in WorkQueueName]: JobHandler<Q> };
