import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

export interface CreateLoggerOptions {
  /** Service name stamped on every line (`api`, `worker`, `scheduler`). */
  service: string;
  level?: LoggerOptions['level'];
  /** Pretty output for people; JSON otherwise. `auto` means "stdout is a terminal". */
  pretty?: boolean | 'auto';
  /** A writable stream for tests; defaults to stdout. */
  destination?: NodeJS.WritableStream;
}

/** Paths of secrets never written to logs. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.password',
  '*.apiKey',
  '*.GROQ_API_KEY',
  '*.ADMIN_API_KEY',
  'config.DATABASE_URL',
  'config.REDIS_URL',
];

/** One logger per process; call `child()` per request and per job. */
export function createLogger(options: CreateLoggerOptions): Logger {
  const pretty =
    options.pretty === 'auto' || options.pretty === undefined
      ? Boolean(process.stdout.isTTY)
      : options.pretty;
  const base: LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: options.service, pid: process.pid },
    redact: { paths: redactPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: pino.stdSerializers.err },
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

/** Child logger for one job: queue, job id, attempt and the run/correlation ids it carries. */
export function jobLogger(
  logger: Logger,
  job: { queueName: string; id?: string | undefined; attemptsMade: number; data: unknown },
): Logger {
  const data = (job.data ?? {}) as Record<string, unknown>;
  const bindings: Record<string, unknown> = {
    queue: job.queueName,
    jobId: job.id,
    attempt: job.attemptsMade + 1,
  };
  for (const key of ['runId', 'postingId', 'siteId', 'correlationId'] as const) {
    if (typeof data[key] === 'string') bindings[key] = data[key];
  }
  return logger.child(bindings);
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
