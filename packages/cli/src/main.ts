#!/usr/bin/env node
import { runCli } from './program.js';
import { repoRoot } from './settings.js';

// `gleaner sites list | head` closes the pipe early: stop quietly, as other command-line tools do.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(process.exitCode ?? 0);
  });
}

// The process's side: arguments, environment, streams and the exit status. The rest is runCli.
process.exitCode = await runCli({
  argv: process.argv.slice(2),
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  repoRoot,
});
