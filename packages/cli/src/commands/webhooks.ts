import type { paths } from '@gleaner/client';
import { Command, InvalidArgumentError } from 'commander';
import { integer } from '../arguments.js';
import type { CliContext } from '../context.js';
import { unwrap } from '../output.js';
import type { Act } from '../program.js';

type EventType = NonNullable<
  paths['/webhooks/endpoints']['post']['requestBody']
>['content']['application/json']['event_types'] extends (infer T)[] | undefined
  ? T
  : never;
type DeliveryStatus = NonNullable<
  NonNullable<paths['/webhooks/endpoints/{id}/deliveries']['get']['parameters']['query']>['status']
>;

/** `--events posting.created,alert.raised`: the API checks each name. */
function eventList(value: string): EventType[] {
  const events = value
    .split(',')
    .map((event) => event.trim())
    .filter((event) => event !== '');
  if (events.length === 0) throw new InvalidArgumentError('name at least one event type');
  return events as EventType[];
}

const when = (at: string | null) => at?.slice(0, 19).replace('T', ' ') ?? null;
const path = (id: string) => ({ params: { path: { id } } });

async function showSecret(context: CliContext, id: string, secret: string, note: string) {
  context.output.result({ id, secret }, () => {
    context.output.line(secret);
    context.output.note(note);
  });
}

export function webhooksCommand(act: Act): Command {
  const webhooks = new Command('webhooks').description(
    'signed webhooks: endpoints, their deliveries, replays',
  );

  webhooks
    .command('add')
    .description('register an endpoint; its signing secret is printed')
    .argument('<url>', 'where messages are POSTed (http or https, a public address)')
    .option('--events <types>', 'comma-separated event types (default: all)', eventList)
    .option('--description <text>', 'what it is for')
    .option('--tenant <id>', "an admin key's endpoint for one tenant's events")
    .action(
      act(
        async (
          context,
          url: string,
          options: { events?: EventType[]; description?: string; tenant?: string },
        ) => {
          const created = unwrap(
            await context.api.POST('/webhooks/endpoints', {
              body: {
                url,
                ...(options.events ? { event_types: options.events } : {}),
                ...(options.description ? { description: options.description } : {}),
                ...(options.tenant ? { tenant_id: options.tenant } : {}),
              },
            }),
          ).data;
          context.output.result(created, () => {
            context.output.line(created.secret);
            context.output.note(
              `endpoint ${created.id} registered for ${created.event_types.length === 0 ? 'every event' : created.event_types.join(', ')}: verify its messages with the secret above`,
            );
          });
        },
      ),
    );

  webhooks
    .command('list')
    .description('endpoints, newest first')
    .action(
      act(async (context) => {
        const endpoints = unwrap(await context.api.GET('/webhooks/endpoints')).data;
        context.output.result(endpoints, () =>
          context.output.table(
            endpoints.map((endpoint) => ({
              ...endpoint,
              events: endpoint.event_types.length === 0 ? 'all' : endpoint.event_types.join(','),
              tenant: endpoint.tenant_id ?? 'all',
              state: endpoint.enabled ? 'enabled' : `disabled: ${endpoint.disabled_reason}`,
              created: when(endpoint.created_at),
            })),
            ['id', 'url', 'tenant', 'events', 'state', 'created'],
          ),
        );
      }),
    );

  for (const enabled of [true, false]) {
    webhooks
      .command(enabled ? 'enable' : 'disable')
      .description(
        enabled
          ? 'send an endpoint events again (those it missed are not sent)'
          : 'stop sending an endpoint events; its pending deliveries are cancelled',
      )
      .argument('<id>', "the endpoint's id")
      .action(
        act(async (context, id: string) => {
          const endpoint = unwrap(
            await context.api.PATCH('/webhooks/endpoints/{id}', { ...path(id), body: { enabled } }),
          ).data;
          context.output.result(endpoint, () =>
            context.output.line(`endpoint ${endpoint.id} ${enabled ? 'enabled' : 'disabled'}`),
          );
        }),
      );
  }

  webhooks
    .command('secret')
    .description("print an endpoint's signing secret")
    .argument('<id>', "the endpoint's id")
    .option('--rotate', 'give it a new one; the old one signs beside it for a day')
    .action(
      act(async (context, id: string, options: { rotate?: boolean }) => {
        const answer = options.rotate
          ? unwrap(await context.api.POST('/webhooks/endpoints/{id}/rotate-secret', path(id))).data
          : unwrap(await context.api.GET('/webhooks/endpoints/{id}/secret', path(id))).data;
        await showSecret(
          context,
          answer.id,
          answer.secret,
          options.rotate
            ? `endpoint ${answer.id} has a new secret; messages carry a signature by the old one too for a day`
            : `endpoint ${answer.id}'s secret`,
        );
      }),
    );

  webhooks
    .command('deliveries')
    .description("an endpoint's deliveries, newest first, with their attempts")
    .argument('<id>', "the endpoint's id")
    .option('--status <status>', 'pending, delivered, failed or cancelled')
    .option('--limit <n>', 'at most this many (1-500)', integer(1, 500), 50)
    .action(
      act(async (context, id: string, options: { status?: DeliveryStatus; limit: number }) => {
        const deliveries = unwrap(
          await context.api.GET('/webhooks/endpoints/{id}/deliveries', {
            params: {
              path: { id },
              query: {
                limit: options.limit,
                ...(options.status ? { status: options.status } : {}),
              },
            },
          }),
        ).data;
        context.output.result(deliveries, () =>
          context.output.table(
            deliveries.map((delivery) => ({
              ...delivery,
              answers: delivery.attempt_log
                .map((attempt) => attempt.status_code ?? 'none')
                .join(' '),
              created: when(delivery.created_at),
              next: when(delivery.next_attempt_at),
            })),
            ['id', 'event_type', 'status', 'attempts', 'answers', 'next', 'created'],
          ),
        );
      }),
    );

  webhooks
    .command('replay')
    .description('send a delivery again under the same webhook-id')
    .argument('<id>', "the endpoint's id")
    .argument('<delivery-id>', "the delivery's id")
    .action(
      act(async (context, id: string, deliveryId: string) => {
        const replayed = unwrap(
          await context.api.POST('/webhooks/endpoints/{id}/deliveries/{deliveryId}/replay', {
            params: { path: { id, deliveryId } },
          }),
        ).data;
        context.output.result(replayed, () =>
          context.output.line(`delivery ${replayed.id} queued again`),
        );
      }),
    );

  webhooks
    .command('remove')
    .description('remove an endpoint and its deliveries')
    .argument('<id>', "the endpoint's id")
    .action(
      act(async (context, id: string) => {
        unwrap(await context.api.DELETE('/webhooks/endpoints/{id}', path(id)));
        context.output.result({ id, removed: true }, () =>
          context.output.line(`endpoint ${id} removed`),
        );
      }),
    );

  return webhooks;
}
