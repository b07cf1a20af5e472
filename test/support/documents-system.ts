import { createHash } from 'node:crypto';
import {
  createDb,
  getDocument,
  insertDocuments,
  type DbHandle,
  type DocumentView,
  type NewDocument,
} from '@gleaner/db';
import {
  createDocumentParserPool,
  defaultDocumentLimits,
  type DocumentParserPool,
} from '@gleaner/extraction/documents';
import { createFetcher, type Fetcher } from '@gleaner/http';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  enqueueDocuments,
  type Queues,
  type RedisClient,
} from '@gleaner/queue';
import {
  createTestDatabase,
  createTestRedisNamespace,
  waitFor,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import { startWorkers, type WorkerRuntime } from '@gleaner/worker';
import { testWorkerDeps } from './in-process-system.js';

export const MAX_RETRIES = 3;

/** A worker replica serving only `documents`, as main.ts builds one, with its own connections. */
export interface DocumentReplica {
  runtime: WorkerRuntime;
  parser: DocumentParserPool;
  /** Stops taking jobs, waits `graceMs`, lets the rest go; then closes its parser and connections. */
  close(graceMs?: number): Promise<void>;
}

export interface DocumentsSystem {
  database: TestDatabase;
  namespace: TestRedisNamespace;
  handle: DbHandle;
  /** The producer side: what the API would use. */
  queues: Queues;
  redis: RedisClient;
  startReplica(options?: {
    concurrency?: number;
    /** The job's deadline and the parser's timeout (DOCUMENT_EXTRACTION_TIMEOUT_MS). */
    timeoutMs?: number;
    heartbeatIntervalMs?: number;
  }): DocumentReplica;
  /** Stores documents and queues the new ones, as the API does. */
  submit(documents: NewDocument[], maxRetries?: number): Promise<string[]>;
  /** Waits until the document's status is one of `statuses`. */
  waitForStatus(id: string, statuses: string[], timeoutMs?: number): Promise<DocumentView>;
  close(): Promise<void>;
}

let counter = 0;
/** Unique bytes per call, so that no two test documents are the same document. */
export function uniqueText(text: string): Buffer {
  counter += 1;
  return Buffer.from(`${text}\n(${counter} ${createHash('sha1').update(text).digest('hex')})`);
}

export async function startDocumentsSystem(label: string): Promise<DocumentsSystem> {
  const database = await createTestDatabase(label);
  const namespace = createTestRedisNamespace(label);
  const handle = createDb({ url: database.url, poolMax: 12 });
  const redis = createRedisConnection(namespace.target, 'producer');
  const queues = createQueues(redis, namespace.prefix);
  const fetcher: Fetcher = createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: 5000,
    maxBodyBytes: 1 << 20,
    maxRedirects: 0,
    allowPrivateNetworks: false,
  });
  const replicas = new Set<DocumentReplica>();

  return {
    database,
    namespace,
    handle,
    queues,
    redis,
    startReplica({ concurrency = 1, timeoutMs = 30_000, heartbeatIntervalMs = 200 } = {}) {
      const producer = createRedisConnection(namespace.target, 'producer');
      const worker = createRedisConnection(namespace.target, 'worker');
      const replicaQueues = createQueues(producer, namespace.prefix);
      const parser = createDocumentParserPool({ processes: 1, timeoutMs });
      const runtime = startWorkers(
        {
          ...testWorkerDeps({
            db: handle.db,
            queues: replicaQueues,
            fetcher,
            producer,
            prefix: namespace.prefix,
          }),
          documents: {
            parser,
            limits: defaultDocumentLimits,
            redis: producer,
            heartbeatIntervalMs,
          },
        },
        {
          connection: worker,
          prefix: namespace.prefix,
          queues: ['documents'],
          policies: { documents: { concurrency, timeoutMs } },
        },
      );
      let closing: Promise<void> | undefined;
      const replica: DocumentReplica = {
        runtime,
        parser,
        close(graceMs = 5_000) {
          closing ??= (async () => {
            await runtime.close(graceMs);
            await parser.close();
            await closeQueues(replicaQueues);
            producer.disconnect();
            worker.disconnect();
            replicas.delete(replica);
          })();
          return closing;
        },
      };
      replicas.add(replica);
      return replica;
    },
    async submit(documents, maxRetries = MAX_RETRIES) {
      const stored = await insertDocuments(handle.db, documents);
      const fresh = stored.filter((entry) => !entry.duplicate).map((entry) => entry.document);
      await enqueueDocuments(queues, fresh, { maxRetries });
      return stored.map((entry) => entry.document.id);
    },
    waitForStatus(id, statuses, timeoutMs = 30_000) {
      return waitFor(
        async () => {
          const document = await getDocument(handle.db, id);
          return document && statuses.includes(document.status) ? document : undefined;
        },
        { timeoutMs, intervalMs: 50, what: `document ${id} to be ${statuses.join(' or ')}` },
      );
    },
    async close() {
      await Promise.all([...replicas].map((replica) => replica.close()));
      await closeQueues(queues);
      redis.disconnect();
      await fetcher.close();
      await handle.close();
      await namespace.cleanup();
      await database.drop();
    },
  };
}
