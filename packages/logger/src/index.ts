import { format } from 'node:util';
import { isSpanContextValid, trace } from '@opentelemetry/api';
import { pino, type Bindings, type Level, type LogFn, type Logger, type LoggerOptions } from 'pino';

export type { Level, Logger } from 'pino';

export interface CreateLoggerOptions {
  /** Service name stamped on every line (`api`, `worker`, `scheduler`). */
  service: string;
  level?: LoggerOptions['level'];
  /** Pretty output for people; JSON otherwise. `auto` means "stdout is a terminal". */
  pretty?: boolean | 'auto';
  /** A writable stream for tests; defaults to stdout. */
  destination?: NodeJS.WritableStream;
}

/**
 * Names whose values are never written to logs, wherever they stand on a line's object or a
 * child's bindings: at the top or one level down (`{ password }`, `{ config: { apiKey } }`).
 */
export const secretKeys: readonly string[] = [
  'password',
  'apiKey',
  'GROQ_API_KEY',
  'ADMIN_API_KEY',
];

/** Exact paths of secrets never written to logs, redacted by pino. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'config.DATABASE_URL',
  'config.REDIS_URL',
];

const CENSOR = '[redacted]';

function holdsSecret(value: object): boolean {
  return secretKeys.some((key) => Object.hasOwn(value, key));
}

/**
 * A copy of `value` without secrets: its prototype and its own properties' values, read from
 * `value` itself, so that an Error stays one and keeps its stack (on Node 22 `stack` is an
 * accessor that answers only for the error it belongs to).
 */
function censored<T extends object>(value: T): T {
  const copy = Object.create(Object.getPrototypeOf(value) as object | null) as T;
  for (const key of Reflect.ownKeys(value)) {
    Object.defineProperty(copy, key, {
      value:
        typeof key === 'string' && secretKeys.includes(key)
          ? CENSOR
          : (value as Record<PropertyKey, unknown>)[key],
      enumerable: Object.prototype.propertyIsEnumerable.call(value, key),
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/**
 * `object` with `secretKeys` censored at its top and one level down; the object itself when it
 * holds none (the common case, which allocates nothing). pino's own wildcard paths (`*.password`)
 * did the level below only, and cost every line and every child a redaction pass over each value:
 * a job's child logger took 10–13 µs with them and takes 3–4 without.
 */
export function withoutSecrets<T extends object>(object: T): T {
  const fields = object as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key in fields) {
    if (!Object.hasOwn(fields, key)) continue;
    const value = fields[key];
    if (secretKeys.includes(key)) (copy ??= { ...fields })[key] = CENSOR;
    else if (typeof value === 'object' && value !== null && holdsSecret(value))
      (copy ??= { ...fields })[key] = censored(value);
  }
  return (copy as T | undefined) ?? object;
}

/** The active span's ids, so a log line can be found from its trace and the other way round. */
function traceFields(): { trace_id?: string; span_id?: string } {
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}

/**
 * One logger per process; call `child()` per request and per job. Secrets are left out of every
 * line (`withoutSecrets`, pino's `redactPaths`) and of every child's bindings; not out of
 * objects interpolated into a message (`%j`): give fields as the line's object.
 */
export function createLogger(options: CreateLoggerOptions): Logger {
  return withSecretFreeChildren(createPinoLogger(options));
}

/**
 * Children inherit their parent's methods, so every descendant's bindings pass here too (pino
 * applies `formatters.bindings` to the root's `base` only).
 */
function withSecretFreeChildren(logger: Logger): Logger {
  // pino's own method, called with the logger it is asked of (`this`), so that a child of a
  // child keeps both's bindings.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const child = logger.child;
  logger.child = function (this: Logger, bindings, childOptions) {
    return child.call(this, withoutSecrets(bindings), childOptions);
  } as Logger['child'];
  return logger;
}

function createPinoLogger(options: CreateLoggerOptions): Logger {
  const pretty =
    options.pretty === 'auto' || options.pretty === undefined
      ? Boolean(process.stdout.isTTY)
      : options.pretty;
  const base: LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: options.service, pid: process.pid },
    redact: { paths: redactPaths, censor: CENSOR },
    formatters: { log: withoutSecrets },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: pino.stdSerializers.err },
    hooks: { logMethod: teeingLogMethod },
    mixin: traceFields,
  };
  if (options.destination) return pino(base, options.destination);
  if (pretty) {
    return pino({
      ...base,
      transport: {
        target: 'pino-pretty',
        options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' },
      },
    });
  }
  return pino(base);
}

/** What a job's lines carry: queue, job id, attempt and the run/correlation ids of its payload. */
export function jobBindings(job: {
  queueName: string;
  id?: string | undefined;
  attemptsMade: number;
  data: unknown;
}): Bindings {
  const data = (job.data ?? {}) as Record<string, unknown>;
  const bindings: Bindings = {
    queue: job.queueName,
    jobId: job.id,
    attempt: job.attemptsMade + 1,
  };
  for (const key of ['runId', 'postingId', 'siteId', 'correlationId'] as const) {
    if (typeof data[key] === 'string') bindings[key] = data[key];
  }
  return bindings;
}

/** Child logger for one job, with its `jobBindings`. */
export function jobLogger(logger: Logger, job: Parameters<typeof jobBindings>[0]): Logger {
  return logger.child(jobBindings(job));
}

/** One line as a tee receives it: what was logged, flattened for a person to read. */
export interface TeeLine {
  level: Level;
  /** Epoch milliseconds. */
  time: number;
  msg: string;
  /** The message of the error the line carries, when it is not the message itself. */
  err?: string;
  /** The line's own fields that hold a plain value (`listed: 20`); secrets left out. */
  fields?: Record<string, string | number | boolean>;
}

/** Where a teed logger's lines go as well as to its stream. */
export interface LogTee {
  /** The lowest level handed to `write`; it may be below the logger's own level. */
  level: Level;
  /** Called synchronously inside the log call: buffer, never block or throw. */
  write(line: TeeLine): void;
}

const teeSym = Symbol('gleaner.logger.tee');
const printFromSym = Symbol('gleaner.logger.printFrom');

interface TeedLogger {
  [teeSym]?: { from: number; write: LogTee['write'] };
  /** The level value from which lines still reach the stream (the parent's level). */
  [printFromSym]?: number;
}

/**
 * A child logger whose lines, its children's included, also go to `tee` from `tee.level` up,
 * while its stream keeps to the parent's level: a run's log takes its jobs' debug lines and
 * stdout stays at LOG_LEVEL. Only loggers made by `createLogger` hand lines to a tee (its
 * `logMethod` hook does).
 */
export function teeLogger(logger: Logger, bindings: Bindings, tee: LogTee): Logger {
  const values = logger.levels.values;
  const from = values[tee.level]!;
  const printFrom = logger.levelVal;
  const child = logger.child(bindings, {
    level: from < printFrom ? tee.level : logger.level,
  }) as Logger & TeedLogger;
  child[teeSym] = { from, write: (line) => tee.write(line) };
  child[printFromSym] = printFrom;
  return child;
}

/** Field names never handed to a tee: `secretKeys` and the last segments of `redactPaths`. */
const secretFields = new Set([
  ...secretKeys,
  ...redactPaths.map((path) => path.split('.').at(-1)!),
]);
const MAX_TEE_FIELDS = 12;
const MAX_TEE_FIELD_CHARS = 200;

function teeLineOf(args: unknown[], level: number, labels: Record<number, string>): TeeLine {
  const [first, ...rest] = args;
  const merge = typeof first === 'object' && first !== null ? first : undefined;
  const messageArgs = merge ? rest : args;
  const error =
    merge instanceof Error
      ? merge
      : (merge as { err?: unknown } | undefined)?.err instanceof Error
        ? (merge as { err: Error }).err
        : undefined;
  const msg = messageArgs.length > 0 ? format(...messageArgs) : (error?.message ?? '');
  const line: TeeLine = { level: labels[level] as Level, time: Date.now(), msg };
  if (error && error.message !== msg) line.err = error.message;
  if (merge && !(merge instanceof Error)) {
    const fields: Record<string, string | number | boolean> = {};
    let count = 0;
    for (const [key, value] of Object.entries(merge)) {
      if (count >= MAX_TEE_FIELDS) break;
      if (key === 'err' || secretFields.has(key)) continue;
      if (typeof value === 'string') fields[key] = value.slice(0, MAX_TEE_FIELD_CHARS);
      else if (typeof value === 'number' || typeof value === 'boolean') fields[key] = value;
      else continue;
      count += 1;
    }
    if (count > 0) line.fields = fields;
  }
  return line;
}

/** pino's hook on every enabled log call: hands a teed logger's lines to its tee. */
function teeingLogMethod(
  this: Logger & TeedLogger,
  args: Parameters<LogFn>,
  method: LogFn,
  level: number,
): void {
  const tee = this[teeSym];
  if (tee !== undefined) {
    if (level >= tee.from) tee.write(teeLineOf(args, level, this.levels.labels));
    if (level < (this[printFromSym] ?? 0)) return;
  }
  method.apply(this, args);
}

/** Parses the `LOG_PRETTY` setting. */
export function prettyFromSetting(setting: string): boolean | 'auto' {
  if (setting === 'auto') return 'auto';
  return setting === 'true' || setting === '1';
}

/**
 * Writes out every line logged so far and ends the logger's stream: the last thing a process
 * does before it exits. pino writes stdout asynchronously, and a write to a full pipe is retried
 * later; exiting right after the last lines could drop them, or (pino's exit hook writing what is
 * buffered while an earlier write still waits) put them out of order. Bounded by `timeoutMs`;
 * nothing may be logged afterwards.
 */
export async function endLogger(logger: Logger, timeoutMs = 1_000): Promise<void> {
  const stream = (logger as unknown as Record<symbol, NodeJS.WritableStream | undefined>)[
    pino.symbols.streamSym
  ];
  if (!stream || stream === process.stderr || stream === process.stdout) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    stream.once('close', done).once('finish', done).once('error', done);
    stream.end();
  });
}
