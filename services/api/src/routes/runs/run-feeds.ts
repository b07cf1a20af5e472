import { setTimeout as sleep } from 'node:timers/promises';
import {
  getRun,
  getSiteById,
  listRunWorkers,
  withProgress,
  type Database,
  type SiteRow,
} from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import {
  duplicateConnection,
  keySlot,
  readRunLogAfter,
  readRunLogTail,
  runLogEntriesOf,
  runLogKey,
  waitForRedis,
  type RedisClient,
  type RunLogLine,
} from '@gleaner/queue';
import { presentRunProgress, type RunProgress } from './run-progress.js';

/**
 * What the API's run pages follow, shared by every client of the same run in this process:
 * one poller per run reads its progress from Postgres (at most every `pollMs`), and one reader
 * on one Redis connection of its own follows every run log that has a client (XREAD BLOCK over
 * all of their streams). A hundred people watching ten runs cost ten pollers and one
 * connection. Both stop when their last client leaves, and `close()` stops everything.
 */

export interface RunLogEntry {
  /** The stream id: the SSE event id a client resumes from (`Last-Event-ID`). */
  id: string;
  line: RunLogLine;
}

export interface RunFeedClient {
  /** The run's progress changed (and once at the start). */
  progress(progress: RunProgress): void;
  /** Lines of the run's log, oldest first: first what the stream keeps, then new ones. */
  log(entries: RunLogEntry[]): void;
  /** The run is over: its last progress has been sent. */
  ended(progress: RunProgress): void;
  /** Progress could not be read for good (the run was deleted). */
  failed(error: Error): void;
}

export interface FollowOptions {
  /** The stream id the client saw last; without it, the last `tailLines` lines come first. */
  lastEventId: string | undefined;
}

export interface RunFeeds {
  /** Follows a run (its internal id and public id) for one client; call the result to stop. */
  follow(
    run: { id: string; runId: string },
    client: RunFeedClient,
    options: FollowOptions,
  ): () => void;
  /** What is followed now: runs polled, streams read, clients. */
  stats(): { runs: number; streams: number; clients: number };
  /** Stops every poller and the reader, and closes its connection. Idempotent. */
  close(): Promise<void>;
}

export interface RunFeedsOptions {
  db: Database;
  /** The API's producer connection: catch-up reads go through it, and the reader is its duplicate. */
  redis: RedisClient;
  prefix: string;
  logger: Logger;
  pollMs?: number;
  /** Lines sent to a client that arrives without `Last-Event-ID`. */
  tailLines?: number;
  /** Lines a resuming client may catch up on at most (a stream keeps 5,000). */
  maxCatchUpLines?: number;
  /** How long one XREAD waits for lines. */
  blockMs?: number;
}

/** Stream ids `<ms>-<seq>`, compared as numbers. */
function isAfter(id: string, than: string): boolean {
  const [ms = 0, seq = 0] = id.split('-').map(Number);
  const [thanMs = 0, thanSeq = 0] = than.split('-').map(Number);
  return ms > thanMs || (ms === thanMs && seq > thanSeq);
}

export function isStreamId(value: string): boolean {
  return /^\d{1,15}-\d{1,15}$/.test(value);
}

interface LogSubscriber {
  lastId: string;
  /** Catching up: lines the reader finds meanwhile wait here. */
  pending: RunLogEntry[] | undefined;
  deliver(entries: RunLogEntry[]): void;
}

interface FollowedStream {
  /** The last id the reader has read; unset until the first client has caught up. */
  cursor: string | undefined;
  subscribers: Set<LogSubscriber>;
}

/** On a cluster, the pause after a round of reads that found no new line (see `readLogs`). */
const CLUSTER_POLL_MS = 250;

interface PolledRun {
  clients: Set<RunFeedClient>;
  latest: RunProgress | undefined;
  json: string | undefined;
  stop: AbortController;
}

export function createRunFeeds(options: RunFeedsOptions): RunFeeds {
  const {
    db,
    redis,
    prefix,
    logger,
    pollMs = 500,
    tailLines = 500,
    maxCatchUpLines = 5000,
    blockMs = 1000,
  } = options;
  const closing = new AbortController();
  const polled = new Map<string, PolledRun>();
  const streams = new Map<string, FollowedStream>();
  let reader: RedisClient | undefined;
  let readerLoop: Promise<void> | undefined;
  let wakeReader: (() => void) | undefined;

  // --- progress: one poller per run --------------------------------------------------------

  /** The run's progress now; undefined once the run is gone (its site was deleted). */
  async function readProgress(
    id: string,
    sites: Map<string, SiteRow | undefined>,
  ): Promise<RunProgress | undefined> {
    const run = await getRun(db, id);
    if (!run) return undefined;
    if (!sites.has(run.siteScheduleId))
      sites.set(run.siteScheduleId, await getSiteById(db, run.siteScheduleId));
    const [[withCounts], workers] = await Promise.all([
      withProgress(db, [run]),
      listRunWorkers(db, run.id),
    ]);
    return presentRunProgress(withCounts!, sites.get(run.siteScheduleId), workers);
  }

  async function pollRun(id: string, entry: PolledRun): Promise<void> {
    const sites = new Map<string, SiteRow | undefined>();
    const finish = (tell: (client: RunFeedClient) => void) => {
      for (const client of entry.clients) tell(client);
      entry.stop.abort();
      if (polled.get(id) === entry) polled.delete(id);
    };
    let failing = false;
    while (!entry.stop.signal.aborted) {
      try {
        const progress = await readProgress(id, sites);
        failing = false;
        if (entry.stop.signal.aborted) return;
        if (!progress) return finish((client) => client.failed(new Error('the run is gone')));
        const json = JSON.stringify(progress);
        if (json !== entry.json) {
          entry.latest = progress;
          entry.json = json;
          for (const client of entry.clients) client.progress(progress);
        }
        if (progress.ended) return finish((client) => client.ended(progress));
      } catch (error) {
        // Postgres away: keep trying; each client keeps its stream (and its heartbeats).
        if (!failing) logger.warn({ err: error, runId: id }, 'run page: progress not read');
        failing = true;
      }
      await sleep(pollMs, undefined, { signal: entry.stop.signal }).catch(() => undefined);
    }
  }

  function followProgress(id: string, client: RunFeedClient): () => void {
    let entry = polled.get(id);
    if (!entry) {
      entry = {
        clients: new Set(),
        latest: undefined,
        json: undefined,
        stop: new AbortController(),
      };
      polled.set(id, entry);
      void pollRun(id, entry);
    } else if (entry.latest) {
      client.progress(entry.latest);
    }
    entry.clients.add(client);
    const followed = entry;
    return () => {
      followed.clients.delete(client);
      if (followed.clients.size === 0) {
        followed.stop.abort();
        if (polled.get(id) === followed) polled.delete(id);
      }
    };
  }

  // --- logs: one reader for every followed stream -------------------------------------------

  async function readStreams(connection: RedisClient): Promise<void> {
    let failing = false;
    while (!closing.signal.aborted) {
      const ready = [...streams].filter(([, stream]) => stream.cursor !== undefined);
      if (ready.length === 0) {
        await new Promise<void>((resolve) => {
          wakeReader = resolve;
        });
        wakeReader = undefined;
        continue;
      }
      try {
        await waitForRedis(connection, 5000);
        const reply = await readLogs(connection, ready);
        failing = false;
        for (const [key, raw] of reply) {
          const stream = streams.get(key);
          const entries = runLogEntriesOf(raw);
          if (!stream || entries.length === 0) continue;
          stream.cursor = entries.at(-1)!.id;
          for (const subscriber of stream.subscribers) offer(subscriber, entries);
        }
      } catch (error) {
        if (closing.signal.aborted) return;
        if (!failing) logger.warn({ err: error }, 'run page: run logs not read; retrying');
        failing = true;
        await sleep(1000, undefined, { signal: closing.signal }).catch(() => undefined);
      }
    }
  }

  /**
   * New lines of the ready streams: one blocking XREAD of them all on one Redis. On a cluster an
   * XREAD keeps to one slot, so streams of several slots are read slot by slot without blocking,
   * and an empty round waits `CLUSTER_POLL_MS` before the next.
   */
  async function readLogs(
    connection: RedisClient,
    ready: [key: string, stream: FollowedStream][],
  ): Promise<[key: string, entries: [id: string, fields: string[]][]][]> {
    const read = async (group: typeof ready, block: boolean) => {
      const keys = group.map(([key]) => key);
      const cursors = group.map(([, stream]) => stream.cursor!);
      const reply = block
        ? await connection.xread('COUNT', 500, 'BLOCK', blockMs, 'STREAMS', ...keys, ...cursors)
        : await connection.xread('COUNT', 500, 'STREAMS', ...keys, ...cursors);
      return reply ?? [];
    };
    const bySlot = new Map<number, typeof ready>();
    for (const entry of ready) {
      const slot = connection.isCluster ? keySlot(entry[0]) : 0;
      const group = bySlot.get(slot);
      if (group) group.push(entry);
      else bySlot.set(slot, [entry]);
    }
    const groups = [...bySlot.values()];
    if (groups.length === 1) return read(groups[0]!, true);
    const replies = (await Promise.all(groups.map((group) => read(group, false)))).flat();
    if (replies.length === 0)
      await sleep(CLUSTER_POLL_MS, undefined, { signal: closing.signal }).catch(() => undefined);
    return replies;
  }

  function offer(subscriber: LogSubscriber, entries: RunLogEntry[]): void {
    if (subscriber.pending) {
      subscriber.pending.push(...entries);
      return;
    }
    const fresh = entries.filter((entry) => isAfter(entry.id, subscriber.lastId));
    if (fresh.length === 0) return;
    subscriber.lastId = fresh.at(-1)!.id;
    subscriber.deliver(fresh);
  }

  /** What the stream keeps for a client: after its last id, or its last lines. */
  async function catchUp(key: string, lastEventId: string | undefined): Promise<RunLogEntry[]> {
    if (lastEventId === undefined) return readRunLogTail(redis, key, tailLines);
    const entries: RunLogEntry[] = [];
    let after = lastEventId;
    while (entries.length < maxCatchUpLines) {
      const page = await readRunLogAfter(redis, key, after, Math.min(500, maxCatchUpLines));
      entries.push(...page);
      if (page.length < 500) break;
      after = page.at(-1)!.id;
    }
    return entries;
  }

  /** Follows a run's log for a client; `caughtUp` settles once what the stream kept was sent. */
  function followLog(
    runId: string,
    client: RunFeedClient,
    lastEventId: string | undefined,
  ): { stop: () => void; caughtUp: Promise<void> } {
    const key = runLogKey(prefix, runId);
    let stream = streams.get(key);
    if (!stream) {
      stream = { cursor: undefined, subscribers: new Set() };
      streams.set(key, stream);
    }
    const subscriber: LogSubscriber = {
      lastId: lastEventId ?? '0-0',
      pending: [],
      deliver: (entries) => client.log(entries),
    };
    // Subscribed before catching up, so nothing the reader finds meanwhile is missed.
    stream.subscribers.add(subscriber);
    const followed = stream;
    let stopped = false;
    const caughtUp = catchUp(key, lastEventId)
      .then((entries) => {
        if (stopped) return;
        if (entries.length > 0) {
          subscriber.lastId = entries.at(-1)!.id;
          client.log(entries);
        }
        const pending = subscriber.pending ?? [];
        subscriber.pending = undefined;
        offer(subscriber, pending);
        if (followed.cursor === undefined) {
          followed.cursor = subscriber.lastId;
          startReader();
          wakeReader?.();
        }
      })
      .catch((error: unknown) => {
        if (stopped) return;
        logger.warn({ err: error, runId }, 'run page: run log not read');
        subscriber.pending = undefined;
        // Still follow it: the reader catches up from the client's last id once Redis answers.
        followed.cursor ??= subscriber.lastId;
        startReader();
        wakeReader?.();
      });
    return {
      caughtUp,
      stop() {
        stopped = true;
        followed.subscribers.delete(subscriber);
        if (followed.subscribers.size === 0 && streams.get(key) === followed) streams.delete(key);
      },
    };
  }

  function startReader(): void {
    if (readerLoop || closing.signal.aborted) return;
    const connection = duplicateConnection(redis, { connectionName: 'gleaner-run-log-reader' });
    connection.on('error', () => {
      // Reported by the read loop, once per outage.
    });
    reader = connection;
    readerLoop = readStreams(connection);
  }

  return {
    follow(run, client, { lastEventId }) {
      if (closing.signal.aborted) throw new Error('run feeds are closed');
      const log = followLog(run.runId, client, lastEventId);
      // A run that is over ends its clients' feeds only once they have its log's lines.
      const stopProgress = followProgress(run.id, {
        progress: (progress) => client.progress(progress),
        ended: (progress) => void log.caughtUp.then(() => client.ended(progress)),
        failed: (error) => client.failed(error),
        log: () => {},
      });
      return () => {
        stopProgress();
        log.stop();
      };
    },
    stats() {
      let clients = 0;
      for (const entry of polled.values()) clients += entry.clients.size;
      return { runs: polled.size, streams: streams.size, clients };
    },
    async close() {
      if (closing.signal.aborted) return;
      closing.abort();
      for (const entry of polled.values()) entry.stop.abort();
      polled.clear();
      streams.clear();
      wakeReader?.();
      reader?.disconnect();
      await readerLoop;
    },
  };
}
