import { createGleanerClient, type GleanerClient } from '@gleaner/client';
import type { Command } from 'commander';
import { Output, type OutputStream } from './output.js';
import { resolveSettings, type Settings } from './settings.js';

/** What the process gives the CLI; a test gives its own. */
export interface CliIo {
  argv: string[];
  env: Record<string, string | undefined>;
  cwd: string;
  stdout: OutputStream;
  stderr: OutputStream;
  /** Where to look for `.gleaner/admin-key` after `cwd`. */
  repoRoot?: string;
  /** How long the watch waits between polls; a test may shorten it. */
  pollIntervalMs?: number;
}

interface GlobalOptions {
  url?: string;
  key?: string;
  json?: boolean;
}

/** What a command needs: the typed client, the settings it was made with, and the output. */
export interface CliContext {
  api: GleanerClient;
  settings: Settings;
  output: Output;
  pollIntervalMs: number;
}

export function contextFor(io: CliIo, command: Command): CliContext {
  const options = command.optsWithGlobals<GlobalOptions>();
  const settings = resolveSettings(options, io.env, { cwd: io.cwd, repoRoot: io.repoRoot });
  return {
    api: createGleanerClient({
      baseUrl: settings.baseUrl,
      ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
    }),
    settings,
    output: new Output(io.stdout, io.stderr, options.json === true),
    pollIntervalMs: io.pollIntervalMs ?? 500,
  };
}
