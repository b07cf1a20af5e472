/**
 * Preload that CPU-profiles a process for the benches: Node 20 refuses `--cpu-prof` in
 * NODE_OPTIONS, but accepts `--import`. `pnpm bench pipeline` adds it to the worker's
 * NODE_OPTIONS when BENCH_WORKER_CPU_PROFILE=<dir> is set; the profile (open it in Chrome
 * DevTools or speedscope) is written to <dir>/worker-<pid>-<threadId>.cpuprofile when the process exits (one per thread: 0 is the event loop).
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import process from 'node:process';
import { threadId } from 'node:worker_threads';

const directory = process.env.BENCH_CPU_PROFILE_DIR;
if (directory) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  // Inspector calls on the process's own session complete synchronously, so 'exit' is late enough.
  process.on('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (error) return;
      mkdirSync(directory, { recursive: true });
      writeFileSync(
        path.join(directory, `worker-${process.pid}-${threadId}.cpuprofile`),
        JSON.stringify(result.profile),
      );
    });
  });
}
