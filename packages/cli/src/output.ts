import type { Problem } from '@gleaner/client';

/** Where the CLI writes: a stream with, on a terminal, `isTTY` and `columns`. */
export interface OutputStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Exit statuses (README, "CLI"). */
export const exitCodes = {
  ok: 0,
  /** The API answered with a problem, or could not be reached. */
  apiError: 1,
  /** The command line itself was wrong. */
  usage: 2,
  /** `runs … --watch` / `runs watch`: how the run ended, when not `succeeded`. */
  partial: 3,
  failed: 4,
  cancelled: 5,
} as const;

/** An error the CLI reports as one message and an exit status, never with a stack. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = exitCodes.apiError,
    /** In `--json` mode, what stdout gets instead of the message (the API's problem). */
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

function isProblem(value: unknown): value is Problem {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Problem).title === 'string' &&
    typeof (value as Problem).status === 'number'
  );
}

/** An error answer of the API as a CliError: the problem's title and detail, each bad field. */
export function apiError(error: unknown, response: Response): CliError {
  if (isProblem(error)) {
    const fields = (error.errors ?? [])
      .filter((field) => !error.detail.includes(field.field))
      .map((field) => `\n  ${field.field}: ${field.message}`)
      .join('');
    return new CliError(`${error.title} (${error.status}): ${error.detail}${fields}`, 1, error);
  }
  const text = typeof error === 'string' && error.trim() !== '' ? `: ${error.trim()}` : '';
  return new CliError(`the API answered ${response.status} ${response.statusText}${text}`, 1, {
    status: response.status,
    body: error ?? null,
  });
}

/**
 * The answer of a call of the typed client: its data, or a CliError with the API's problem. A
 * success is any 2xx, whatever its data (a 204 has none).
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok) return result.data as T;
  throw apiError(result.error, result.response);
}

/** What the commands print: tables and sentences for people, or the API's JSON with `--json`. */
export class Output {
  constructor(
    readonly stdout: OutputStream,
    readonly stderr: OutputStream,
    readonly isJson: boolean,
  ) {}

  /** Prints `value` as JSON in `--json` mode, or calls `human` to print it for people. */
  result(value: unknown, human: () => void): void {
    if (this.isJson) this.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
    else human();
  }

  line(text = ''): void {
    this.stdout.write(`${text}\n`);
  }

  /** Notes for people (progress, hints): stderr, so that stdout stays what a script reads. */
  note(text: string): void {
    this.stderr.write(`${text}\n`);
  }

  table(rows: Record<string, unknown>[], columns: string[]): void {
    if (rows.length === 0) {
      this.line('(none)');
      return;
    }
    const cells = rows.map((row) => columns.map((column) => formatCell(row[column])));
    const widths = columns.map((column, index) =>
      Math.max(column.length, ...cells.map((row) => row[index]!.length)),
    );
    const format = (values: string[]) =>
      values
        .map((value, index) => value.padEnd(widths[index]!))
        .join('  ')
        .trimEnd();
    this.line(format(columns.map((column) => column.toUpperCase())));
    for (const row of cells) this.line(format(row));
  }
}

export function formatCell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}
