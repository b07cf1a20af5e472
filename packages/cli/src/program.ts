import { Command, CommanderError } from 'commander';
import { auditCommand } from './commands/audit.js';
import { changesCommand } from './commands/changes.js';
import { deadLettersCommand } from './commands/dead-letters.js';
import { documentsCommand } from './commands/documents.js';
import { extractionCommand } from './commands/extraction.js';
import { keysCommand } from './commands/keys.js';
import { runsCommand } from './commands/runs.js';
import { sitesCommand } from './commands/sites.js';
import { webhooksCommand } from './commands/webhooks.js';
import { workersCommand } from './commands/workers.js';
import { contextFor, type CliContext, type CliIo } from './context.js';
import { CliError, exitCodes } from './output.js';
import { DEFAULT_URL } from './settings.js';

/**
 * Wraps a command's action: builds its context from the global options and records the exit
 * status it answers (a run's outcome), 0 when it answers nothing.
 */
export type Act = <A extends unknown[]>(
  action: (context: CliContext, ...args: A) => Promise<number | void>,
) => (...args: unknown[]) => Promise<void>;

/** Node's fetch fails with `TypeError: fetch failed` and the socket's error as its cause. */
function unreachable(error: unknown, baseUrl: string): CliError | undefined {
  if (!(error instanceof TypeError) || error.message !== 'fetch failed') return undefined;
  const cause = error.cause as { code?: string; message?: string } | undefined;
  const why = cause?.code ?? cause?.message ?? 'no answer';
  return new CliError(
    `cannot reach the API at ${baseUrl} (${why}); set --url or GLEANER_URL`,
    exitCodes.apiError,
    { title: 'API Unreachable', detail: why, instance: baseUrl },
  );
}

export function createProgram(io: CliIo, state: { exitCode: number }): Command {
  const act: Act =
    (action) =>
    async (...args) => {
      const command = args.at(-1) as Command;
      const context = contextFor(io, command);
      try {
        const code = await action(context, ...(args.slice(0, -2) as never), args.at(-2));
        state.exitCode = code ?? exitCodes.ok;
      } catch (error) {
        throw unreachable(error, context.settings.baseUrl) ?? error;
      }
    };

  const program = new Command('gleaner')
    .description(
      "Gleaner's command line: sites, runs, dead letters, documents, extraction, keys, audit, changes",
    )
    .option('--url <url>', `the API (GLEANER_URL; default ${DEFAULT_URL})`)
    .option('--key <key>', 'an API key (GLEANER_API_KEY, else .gleaner/admin-key)')
    .option('--json', "print the API's JSON answers, for scripts")
    .showHelpAfterError('(gleaner --help lists the commands)')
    .configureOutput({
      writeOut: (text) => void io.stdout.write(text),
      writeErr: (text) => void io.stderr.write(text),
    })
    .exitOverride();

  for (const command of [
    sitesCommand(act),
    runsCommand(act),
    deadLettersCommand(act),
    documentsCommand(act),
    extractionCommand(act),
    keysCommand(act),
    auditCommand(act),
    changesCommand(act),
    webhooksCommand(act),
    workersCommand(act),
  ]) {
    program.addCommand(command);
  }
  // Commands built apart inherit nothing: give every one the program's output and exit handling.
  const inherit = (parent: Command) => {
    for (const command of parent.commands) {
      command.copyInheritedSettings(parent);
      inherit(command);
    }
  };
  inherit(program);
  return program;
}

/** Runs the CLI on `io.argv` (without node and the script) and answers its exit status. */
export async function runCli(io: CliIo): Promise<number> {
  const state = { exitCode: exitCodes.ok };
  const program = createProgram(io, state);
  const isJson = io.argv.includes('--json');
  try {
    await program.parseAsync(io.argv, { from: 'user' });
    return state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version end as "errors" too, with status 0; commander printed the message.
      return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    }
    if (error instanceof CliError) {
      if (isJson && error.body !== undefined) {
        io.stdout.write(`${JSON.stringify(error.body, null, 2)}\n`);
      }
      io.stderr.write(`gleaner: ${error.message}\n`);
      return error.exitCode;
    }
    throw error;
  }
}
