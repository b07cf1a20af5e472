import { Command } from 'commander';
import { unwrap } from '../output.js';
import type { Act } from '../program.js';

const when = (at: string | null) => at?.slice(0, 19).replace('T', ' ') ?? null;

export function workersCommand(act: Act): Command {
  return new Command('workers')
    .description('worker processes by their heartbeats: queues, status, jobs running now')
    .option('--status <status>', 'running, stopping, stopped or dead')
    .option('--queue <queue>', 'only workers serving this queue')
    .action(
      act(
        async (
          context,
          options: { status?: 'running' | 'stopping' | 'stopped' | 'dead'; queue?: string },
        ) => {
          const workers = unwrap(
            await context.api.GET('/workers', {
              params: {
                query: {
                  ...(options.status ? { status: options.status } : {}),
                  ...(options.queue ? { queue: options.queue } : {}),
                },
              },
            }),
          ).data;
          context.output.result(workers, () =>
            context.output.table(
              workers.map((worker) => ({
                ...worker,
                queues: worker.queues.join(','),
                done: worker.jobs_completed,
                failed: worker.jobs_failed,
                running: worker.jobs_in_flight,
                beat: `${Math.round(worker.seconds_since_heartbeat)} s ago`,
                started: when(worker.started_at),
              })),
              ['worker_id', 'status', 'queues', 'running', 'done', 'failed', 'beat', 'started'],
            ),
          );
        },
      ),
    );
}
