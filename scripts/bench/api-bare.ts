/**
 * The bare server of `pnpm bench api`: the least a server must do to give the answers the API's
 * read routes give, to measure the API against on the same machine in the same run. Started by
 * api.ts with `fork`; it runs as `processes` processes sharing one port (node:cluster), as the API
 * does with API_PROCESSES, and tells its parent `{ ready: true }` once every one listens. Its
 * settings come as arguments (`--databaseUrl=… --port=… --processes=… --poolMax=…
 * --searchCacheMs=…`); import only its types elsewhere, its module starts a server.
 *
 * Each process is a Fastify server with its defaults and a `pg` pool of the API's size
 * (DATABASE_POOL_MAX's default) running the db package's own query functions with the parameters
 * the API passes for the bench's requests: the same statements, on the same database. Each route
 * presents its rows with the API's own presenters (plain functions of the route files, columns
 * included), so both servers send the same document. What it leaves out is what the bench
 * measures: the front door and load shedding, the key check and its Redis calls, the rate limit,
 * validation of the query, the response schemas' serializer, helmet and CORS headers, request ids,
 * tracing, audit, metrics and logs, and problem bodies (an error is Fastify's plain 500).
 *
 * Searches are answered from memory for as long as the API keeps them fresh
 * (POSTINGS_SEARCH_CACHE_MS), and stale for as long again while one recomputation runs: the API's
 * policy without its Redis store. Computing every search would make this server the slower one
 * and the ratio meaningless; the API's cache machinery is one of the layers measured.
 */
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import {
  createDb,
  getPosting,
  getRunStatus,
  listPostings,
  listRunPostings,
  searchPostings,
  type PostingStatus,
} from '@gleaner/db';
// The API's own Fastify (a dependency of the API only): the bare server runs the same version.
import Fastify from '../../services/api/node_modules/fastify/fastify.js';
// The routes' choice of columns and their presenters, from the built API: no drift between the two.
import { presentPosting, presentRun } from '../../services/api/dist/routes/jobs/presenters.js';
import {
  columnsOf,
  listedFields,
  presentPostingFields,
  presentPostingsPage,
  presentSearchPage,
} from '../../services/api/dist/routes/posting-fields.js';

export interface BareOptions {
  databaseUrl: string;
  port: number;
  processes: number;
  poolMax: number;
  searchCacheMs: number;
}

function optionsFrom(args: string[]): BareOptions {
  const { values } = parseArgs({
    args,
    options: {
      databaseUrl: { type: 'string' },
      port: { type: 'string' },
      processes: { type: 'string' },
      poolMax: { type: 'string' },
      searchCacheMs: { type: 'string' },
    },
    strict: true,
  });
  const number = (name: keyof typeof values) => {
    const value = Number(values[name]);
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`api-bare: bad --${name}`);
    return value;
  };
  if (!values.databaseUrl) throw new Error('api-bare: --databaseUrl is required');
  return {
    databaseUrl: values.databaseUrl,
    port: number('port'),
    processes: number('processes'),
    poolMax: number('poolMax'),
    searchCacheMs: number('searchCacheMs'),
  };
}

/** Answers by key: fresh for `ttlMs`, then served stale for as long again while one refresh runs. */
function createAnswers<V>(ttlMs: number) {
  const answers = new Map<string, { value: V; at: number }>();
  const computing = new Map<string, Promise<V>>();
  const compute = (key: string, run: () => Promise<V>) => {
    let pending = computing.get(key);
    if (pending === undefined) {
      pending = run()
        .then((value) => {
          answers.set(key, { value, at: Date.now() });
          return value;
        })
        .finally(() => computing.delete(key));
      computing.set(key, pending);
    }
    return pending;
  };
  return (key: string, run: () => Promise<V>): Promise<V> => {
    const answer = answers.get(key);
    const age = answer === undefined ? Infinity : Date.now() - answer.at;
    if (answer !== undefined && age < ttlMs) return Promise.resolve(answer.value);
    if (answer !== undefined && age < 2 * ttlMs) {
      compute(key, run).catch(() => undefined);
      return Promise.resolve(answer.value);
    }
    return compute(key, run);
  };
}

/** One process: a Fastify server with the bench's read routes, listening on the shared port. */
async function serve(options: BareOptions) {
  const database = createDb({
    url: options.databaseUrl,
    poolMax: options.poolMax,
    applicationName: 'gleaner-bench-bare',
  });
  const { db } = database;
  // What the API's routes send without `fields` or `include`: the summary, `id` first.
  const fields = listedFields({});
  const columns = columnsOf(fields);
  const searches = createAnswers<unknown>(options.searchCacheMs);
  const app = Fastify();
  app.addHook('onClose', () => database.close());

  // The parameters the bench sends (site_id, status, remote, q, limit, cursor), unchecked.
  app.get('/postings', async (request) => {
    const query = request.query as Record<string, string | undefined>;
    const list = {
      siteIds: query.site_id === undefined ? undefined : [query.site_id],
      status: query.status as PostingStatus | undefined,
      isRemote: query.remote === undefined ? undefined : query.remote === 'true',
      columns,
      limit: Number(query.limit ?? 50),
      cursor: query.cursor,
    };
    const words = query.q;
    if (words !== undefined) {
      return searches(request.url, async () => {
        const hits = await searchPostings(db, {
          ...list,
          query: words.trim().replace(/\s+/g, ' '),
        });
        return { status: 'success', ...presentSearchPage(hits, fields) };
      });
    }
    return { status: 'success', ...presentPostingsPage(await listPostings(db, list), fields) };
  });

  app.get('/postings/:id', async (request, reply) => {
    const posting = await getPosting(db, (request.params as { id: string }).id);
    if (!posting) return reply.code(404).send({ status: 'error' });
    return { status: 'success', data: presentPosting(posting) };
  });

  app.get('/jobs/scrape/:runId', async (request, reply) => {
    const status = await getRunStatus(db, (request.params as { runId: string }).runId);
    if (!status) return reply.code(404).send({ status: 'error' });
    // The bench's run paths carry no query: the route's default page of 20 summaries.
    const listed = await listRunPostings(db, { runId: status.run.id, columns, limit: 20 });
    return {
      status: 'success',
      data: {
        ...presentRun(status.run, status.site),
        posting_counts: status.run.postingCounts,
        postings: listed.postings.map((posting) => presentPostingFields(posting, fields)),
        next_cursor: listed.nextCursor,
      },
    };
  });

  process.once('SIGTERM', () => {
    void app.close().finally(() => process.exit(0));
  });
  await app.listen({ host: '127.0.0.1', port: options.port });
}

/** The primary: starts the processes, reports when all listen, stops them when told or orphaned. */
function supervise(options: BareOptions) {
  let listening = 0;
  let exited = 0;
  let stopping = false;
  cluster.on('listening', () => {
    if (++listening === options.processes) process.send?.({ ready: true });
  });
  cluster.on('exit', (worker, code, signal) => {
    exited++;
    if (stopping) {
      if (exited === options.processes) process.exit(0);
      return;
    }
    process.stderr.write(`api-bare: process ${worker.process.pid} exited (${signal ?? code})\n`);
    process.exit(1);
  });
  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (exited === options.processes) process.exit(0);
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  for (let index = 0; index < options.processes; index++) cluster.fork();
}

const options = optionsFrom(process.argv.slice(2));
if (cluster.isPrimary) supervise(options);
else await serve(options);
