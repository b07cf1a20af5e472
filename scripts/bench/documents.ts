/**
 * `pnpm bench documents`: documents per second through the real document path, against a bare
 * loop of the same parsers, in the same run.
 *
 *   baseline  `extractDocument` (@gleaner/extraction/documents) over every file, one after the
 *             other, in a process of its own (documents-bare-loop.ts): the parsers and nothing
 *             else;
 *   pipeline  every file uploaded to the API process (`POST /documents/batch`, multipart,
 *             `BENCH_UPLOAD_BATCH` files a request, a few requests at once over kept-alive
 *             connections, bodies encoded beforehand; one file a request is `POST /documents`),
 *             stored in Postgres, queued, and extracted by one worker process
 *             (`WORKER_QUEUES=documents`, its parser processes), timed from the first upload until
 *             the last document's `completed_at`.
 *
 * Both sides read the same files: `BENCH_DOCUMENTS` (500), half PDF (`BENCH_PDF_PAGES` pages of
 * 300 words), half DOCX (`BENCH_DOCX_PARAGRAPHS` paragraphs of 40 words), each with its own seed
 * so that no two are the same bytes. Every process that parses is warmed first on
 * `BENCH_WARM_UP_DOCUMENTS` other files: the bare loop's on that many, the pipeline on that many
 * for each of its parser processes.
 *
 * The run is `BENCH_ROUNDS` (3) rounds, with a bare loop before the first and after each: loop,
 * pipeline, loop, pipeline, loop… Each loop is a fresh process and each round's pipeline a fresh
 * worker, warmed the same way, and each round uploads as a tenant of its own. A round's baseline
 * is the two loops on either side of it, on an otherwise idle machine: a shared machine's speed
 * drifts by up to half within a minute. The verdict is the median round's (by ratio), and
 * `peakRssMB` the highest of any round. `cpuMsPerDocument` splits the pipeline's CPU, over every
 * round, between the worker (with and without its parsers), the API, Postgres (the bench
 * database's backends and the server's own processes), Redis and this process (the uploading
 * client), which all share the machine.
 *
 * Last stdout line: {"docsPerSec","baselineDocsPerSec","ratio","peakRssMB","rounds",…}. Exit code
 * 1 when a document did not end `complete` or a target (median ratio ≥ 0.8, peak RSS ≤ 400 MB of
 * the worker and its parser processes together) is missed.
 *
 * Environment: BENCH_DOCUMENTS (500), BENCH_PDF_PAGES (3), BENCH_DOCX_PARAGRAPHS (30),
 * BENCH_WARM_UP_DOCUMENTS (600 per parsing process), BENCH_UPLOAD_BATCH (10),
 * BENCH_UPLOAD_CONCURRENCY (4), BENCH_ROUNDS (3), BENCH_TIMEOUT_MS (300000),
 * BENCH_DOCUMENT_PARSERS and BENCH_DOCUMENTS_CONCURRENCY (the worker's defaults).
 * TEST_DATABASE_URL / TEST_REDIS_URL as for the tests.
 */
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { workerFragment } from '@gleaner/config';
import { Pool } from 'undici';
import {
  adminHeaders,
  buildDocx,
  buildPdf,
  freePort,
  multipartForm,
  repoRoot,
  startService,
  waitFor,
  type ServiceProcess,
} from '@gleaner/testing';
import type { BenchModule } from './bench.js';
import type { BareLoopRequest, BareLoopResult } from './documents-bare-loop.js';
import { cpuMsPer, medianBy, sumCpuSeconds } from './rounds.js';
import {
  askChild,
  assertWorkersAlive,
  benchRun,
  concurrencyFrom,
  cpuSecondsBetween,
  cpuSnapshot,
  createBenchStack,
  integerFrom,
  progressFor,
  report,
  round2,
  processTree,
  sampleTreeRss,
  startWorkerProcesses,
  wantsHelp,
  workerWarnings,
} from './support.js';

const USAGE = `usage: pnpm bench documents
environment: BENCH_DOCUMENTS (500), BENCH_PDF_PAGES (3), BENCH_DOCX_PARAGRAPHS (30),
  BENCH_WARM_UP_DOCUMENTS (600 per parsing process), BENCH_UPLOAD_BATCH (10),
  BENCH_UPLOAD_CONCURRENCY (4), BENCH_ROUNDS (3),
  BENCH_TIMEOUT_MS (300000), BENCH_DOCUMENT_PARSERS, BENCH_DOCUMENTS_CONCURRENCY (worker defaults)
`;

const TARGET_RATIO = 0.8;
const TARGET_PEAK_RSS_MB = 400;
const TENANT = 'bench';

interface Settings {
  documents: number;
  pdfPages: number;
  docxParagraphs: number;
  warmUp: number;
  uploadBatch: number;
  uploadConcurrency: number;
  rounds: number;
  timeoutMs: number;
  parsers: number;
  concurrency: number;
}

export interface BenchFile {
  name: string;
  mediaType: string;
  bytes: Uint8Array;
}

const progress = progressFor('documents');

/**
 * Documents each parsing process sees before it is timed, while V8 compiles pdf.js's and
 * mammoth's hot paths: the bare loop took 12 ms per document over its first 50, 6–7 ms up to
 * about 300 and 5 ms from there on, and two parser processes warmed on 300 each took 6.9–8.6 ms
 * per document on the timed files where after 600 each they took 6.1–6.2. The count is per
 * process, so that the loop and each parser are timed equally warm.
 */
const WARM_UP_PER_PROCESS = 600;

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  const parsers = concurrencyFrom(
    'BENCH_DOCUMENT_PARSERS',
    workerFragment.WORKER_DOCUMENT_PARSERS,
    USAGE,
  );
  return {
    documents: integerFrom('BENCH_DOCUMENTS', 500, { min: 2 }, USAGE),
    pdfPages: integerFrom('BENCH_PDF_PAGES', 3, { min: 1, max: 500 }, USAGE),
    docxParagraphs: integerFrom('BENCH_DOCX_PARAGRAPHS', 30, { min: 1 }, USAGE),
    warmUp: integerFrom('BENCH_WARM_UP_DOCUMENTS', WARM_UP_PER_PROCESS, { min: 0 }, USAGE),
    uploadBatch: integerFrom('BENCH_UPLOAD_BATCH', 10, { min: 1, max: 100 }, USAGE),
    uploadConcurrency: integerFrom('BENCH_UPLOAD_CONCURRENCY', 4, { min: 1, max: 64 }, USAGE),
    rounds: integerFrom('BENCH_ROUNDS', 3, { min: 1, max: 25 }, USAGE),
    timeoutMs: integerFrom('BENCH_TIMEOUT_MS', 300_000, { min: 1000 }, USAGE),
    parsers,
    concurrency: concurrencyFrom(
      'BENCH_DOCUMENTS_CONCURRENCY',
      workerFragment.WORKER_CONCURRENCY_DOCUMENTS,
      USAGE,
    ),
  };
}

/** Alternating PDF and DOCX files, each of its own seed (`firstSeed` onwards). */
async function buildFiles(count: number, firstSeed: number, settings: Settings) {
  const files: BenchFile[] = [];
  for (let index = 0; index < count; index++) {
    const seed = firstSeed + index;
    files.push(
      index % 2 === 0
        ? {
            name: `resume-${seed}.pdf`,
            mediaType: 'application/pdf',
            bytes: (await buildPdf({ pages: settings.pdfPages, wordsPerPage: 300, seed })).bytes,
          }
        : {
            name: `resume-${seed}.docx`,
            mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
            bytes: (
              await buildDocx({
                paragraphs: settings.docxParagraphs,
                wordsPerParagraph: 40,
                seed,
              })
            ).bytes,
          },
    );
  }
  return files;
}

/**
 * glibc malloc settings for the bare loop's process: no giving memory back to the kernel (trim),
 * and blocks up to 32 MB from the heap rather than from mmap of their own. Without them the same
 * loop parsed at anywhere from 58 to 145 documents/s from one process to the next, with 0 to 420
 * minor page faults per document (on a 2-vCPU VM where a page fault costs about 12 µs): glibc's
 * dynamic mmap and trim thresholds settled either where pdf.js's buffers were mapped and
 * unmapped with each document, or where they were not, and the verdict was decided by which.
 * With both set, 108–150 documents/s at 1–23 faults per document. The two parser processes
 * fault 7–31 times per document between them without these settings.
 */
const BARE_LOOP_MALLOC =
  'glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432';

/**
 * The bare loop in a fresh process of its own (documents-bare-loop.ts), warmed on `warmUp` and
 * then timed on `files`: each run starts from the same state, as the worker's parser processes
 * do, rather than from whatever the bench process and an earlier run left behind.
 */
function bareLoop(
  warmUp: readonly BenchFile[],
  files: readonly BenchFile[],
): Promise<BareLoopResult> {
  const child = fork(fileURLToPath(new URL('./documents-bare-loop.ts', import.meta.url)), [], {
    cwd: repoRoot,
    execArgv: ['--import', 'tsx'],
    env: {
      ...process.env,
      GLIBC_TUNABLES: [process.env.GLIBC_TUNABLES, BARE_LOOP_MALLOC].filter(Boolean).join(':'),
    },
    serialization: 'advanced',
    // pdf.js warns on stdout, whose last line is the bench's result.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const request: BareLoopRequest = { warmUp, files };
  return askChild<BareLoopResult>(child, request, "the bare loop's process").finally(() =>
    child.kill(),
  );
}

/**
 * A multipart/form-data request, encoded once, before anything is timed: one file for `POST
 * /documents`, or several for `POST /documents/batch`.
 */
interface UploadBody {
  path: '/documents' | '/documents/batch';
  names: string[];
  contentType: string;
  bytes: Buffer;
}

function uploadBody(files: readonly BenchFile[], tenant: string): UploadBody {
  const form = multipartForm(
    { tenant_id: tenant, kind: 'resume' },
    files.map((file) => ({ name: file.name, type: file.mediaType, bytes: file.bytes })),
  );
  return {
    path: files.length === 1 ? '/documents' : '/documents/batch',
    names: files.map((file) => file.name),
    contentType: form.contentType,
    bytes: form.payload,
  };
}

/** The files in uploads of `batch` files each, in order. */
function uploadBodies(files: readonly BenchFile[], batch: number, tenant: string): UploadBody[] {
  const bodies: UploadBody[] = [];
  for (let index = 0; index < files.length; index += batch)
    bodies.push(uploadBody(files.slice(index, index + batch), tenant));
  return bodies;
}

interface Accepted {
  id?: string;
  duplicate?: boolean;
}

/**
 * Uploads every body (`concurrency` at once, over as many kept-alive connections); resolves with
 * the document ids in order. The client is undici's `request` with bodies encoded beforehand: it
 * shares the machine's two cores with the pipeline it measures, and `fetch` with a FormData spent
 * 1.7 ms of CPU per upload, about a tenth of the pipeline's own.
 */
async function upload(apiUrl: string, bodies: readonly UploadBody[], concurrency: number) {
  const ids: string[][] = new Array<string[]>(bodies.length);
  const client = new Pool(apiUrl, { connections: concurrency });
  let next = 0;
  const uploader = async () => {
    for (let index = next++; index < bodies.length; index = next++) {
      // A failed upload ends the run: the other uploaders take nothing more.
      const body = bodies[index]!;
      const send = () =>
        client.request({
          method: 'POST',
          path: body.path,
          headers: { ...adminHeaders, 'content-type': body.contentType },
          body: body.bytes,
        });
      let response = await send();
      // The API sheds uploads it cannot start soon (503 with Retry-After): sent again after it,
      // as the CLI's client does.
      for (let retry = 0; response.statusCode === 503 && retry < 20; retry++) {
        await response.body.dump();
        await sleep(Number(response.headers['retry-after'] ?? 1) * 1000);
        response = await send();
      }
      const answer = (await response.body.json()) as Accepted & { documents?: Accepted[] };
      const accepted = answer.documents ?? [answer];
      if (
        response.statusCode !== 202 ||
        accepted.length !== body.names.length ||
        accepted.some((document) => document.id === undefined || document.duplicate === true)
      ) {
        next = bodies.length;
        throw new Error(
          `POST ${body.path} for ${body.names.join(', ')} answered ${response.statusCode}: ${JSON.stringify(answer)}`,
        );
      }
      ids[index] = accepted.map((document) => document.id!);
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, uploader));
  } finally {
    await client.close();
  }
  return ids.flat();
}

/** One round's pipeline: a fresh worker, warmed, then timed on the files (uploaded as `tenant`). */
interface PipelineRound {
  docsPerSec: number;
  seconds: number;
  uploadSeconds: number;
  peakRssMB: number;
  complete: number;
  failed: number;
  timedOut: boolean;
  avgExtractionMs: number;
  /** CPU seconds by process label (worker, parsers, api, postgres, redis-server, bench). */
  cpuSeconds: Record<string, number>;
  warnings: Record<string, unknown>[];
}

export const run: BenchModule['run'] = benchRun<Settings>(
  progress,
  USAGE,
  readSettings,
  async (settings, teardown) => {
    const pipelineWarmUp = settings.warmUp * settings.parsers;
    progress(`building ${settings.documents} + ${pipelineWarmUp} warm-up files`);
    const files = await buildFiles(settings.documents, 1, settings);
    const pipelineWarmUpFiles = await buildFiles(pipelineWarmUp, 1_000_000, settings);
    const warmUpFiles = pipelineWarmUpFiles.slice(0, settings.warmUp);
    const megabytes = files.reduce((sum, file) => sum + file.bytes.byteLength, 0) / 1024 / 1024;

    const baselineRuns = [await bareLoop(warmUpFiles, files)];
    progress(
      `baseline 1: ${round2(settings.documents / baselineRuns[0]!.seconds)} documents/s (${round2(megabytes)} MB)`,
    );

    const stack = await createBenchStack('documents', teardown);
    const { pool } = stack.handle;
    const workerEnv = {
      ...stack.workerEnv,
      WORKER_QUEUES: 'documents',
      WORKER_DOCUMENT_PARSERS: String(settings.parsers),
      WORKER_CONCURRENCY_DOCUMENTS: String(settings.concurrency),
    };
    const apiPort = await freePort();
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    const api = startService('api', {
      ...stack.workerEnv,
      API_HOST: '127.0.0.1',
      API_PORT: String(apiPort),
      // One client sends every upload; the per-key limit is not what this measures.
      API_RATE_LIMIT_PER_MINUTE: '1000000',
    });
    teardown.add('stop api', () => api.stop());
    await waitFor(
      async () => {
        assertWorkersAlive([api]);
        return (await fetch(`${apiUrl}/health`).catch(() => undefined))?.ok ? true : undefined;
      },
      { timeoutMs: 60_000, what: 'the API to answer /health' },
    );

    const countTerminal = async (ids: readonly string[]) => {
      const { rows } = await pool.query<{ complete: number; failed: number }>(
        `SELECT count(*) FILTER (WHERE status = 'complete')::int AS complete,
                count(*) FILTER (WHERE status = 'failed')::int AS failed
         FROM documents WHERE id = ANY($1::uuid[])`,
        [ids],
      );
      return rows[0]!;
    };
    const waitForDocuments = async (
      ids: readonly string[],
      startedAt: number,
      worker: ServiceProcess,
    ) => {
      for (let lastTick = startedAt; ;) {
        await sleep(100);
        const counts = await countTerminal(ids);
        if (counts.complete + counts.failed === ids.length) return { ...counts, timedOut: false };
        assertWorkersAlive([worker, api], ' mid-run');
        const now = performance.now();
        if (now - startedAt > settings.timeoutMs) return { ...counts, timedOut: true };
        if (now - lastTick >= 5_000) {
          lastTick = now;
          progress(`${Math.round((now - startedAt) / 1000)} s: ${counts.complete} complete`);
        }
      }
    };

    /**
     * A round of the pipeline: a worker of its own (its parser processes as fresh as the bare
     * loop's), warmed on the warm-up files, then timed on the files. Each round uploads as a
     * tenant of its own: the same bytes for the same tenant would be one document.
     */
    const pipelineRound = async (round: number): Promise<PipelineRound> => {
      const tenant = `${TENANT}-${round}`;
      const [worker] = await startWorkerProcesses(1, workerEnv, stack, teardown, 60_000, [
        stack.queues.documents,
      ]);
      try {
        if (pipelineWarmUpFiles.length > 0) {
          const warmUpIds = await upload(
            apiUrl,
            uploadBodies(pipelineWarmUpFiles, settings.uploadBatch, tenant),
            settings.uploadConcurrency,
          );
          await waitForDocuments(warmUpIds, performance.now(), worker!);
        }

        const bodies = uploadBodies(files, settings.uploadBatch, tenant);
        const workerPid = worker!.child.pid!;
        const rss = sampleTreeRss(workerPid);
        const cpuBefore = cpuSnapshot();
        const firstUploadAt = new Date();
        const startedAt = performance.now();
        const ids = await upload(apiUrl, bodies, settings.uploadConcurrency);
        const uploadSeconds = (performance.now() - startedAt) / 1000;
        const outcome = await waitForDocuments(ids, startedAt, worker!);
        const peakRssMB = round2(rss.peakMb());
        // The worker's parser processes live as long as it does: those there now are the round's.
        const labels = new Map<number, string>([
          [process.pid, 'bench'],
          [workerPid, 'worker'],
          [api.child.pid!, 'api'],
          ...processTree(workerPid)
            .filter((pid) => pid !== workerPid)
            .map((pid): [number, string] => [pid, 'parsers']),
        ]);
        const cpuSeconds = cpuSecondsBetween(cpuBefore, cpuSnapshot(), labels, stack.databaseName);
        rss.stop();
        const { rows } = await pool.query<{ last: Date | null; extractionMs: number | null }>(
          `SELECT max(completed_at) AS last, avg(extraction_ms)::float8 AS "extractionMs"
           FROM documents WHERE id = ANY($1::uuid[])`,
          [ids],
        );
        const seconds = ((rows[0]?.last ?? new Date()).getTime() - firstUploadAt.getTime()) / 1000;
        return {
          docsPerSec: settings.documents / seconds,
          seconds,
          uploadSeconds,
          peakRssMB,
          complete: outcome.complete,
          failed: outcome.failed,
          timedOut: outcome.timedOut,
          avgExtractionMs: rows[0]?.extractionMs ?? 0,
          cpuSeconds,
          warnings: workerWarnings([worker!]),
        };
      } finally {
        await worker!.stop();
      }
    };

    const rounds: (PipelineRound & { baselineDocsPerSec: number; ratio: number })[] = [];
    for (let round = 1; round <= settings.rounds; round++) {
      const pipeline = await pipelineRound(round);
      // The bare loop again, now that the pipeline is idle: a shared machine's speed drifts by
      // up to half over a minute, so each round's baseline is the runs on either side of it.
      const after = await bareLoop(warmUpFiles, files);
      const before = baselineRuns.at(-1)!;
      baselineRuns.push(after);
      const baselineDocsPerSec = (2 * settings.documents) / (before.seconds + after.seconds);
      const ratio = pipeline.docsPerSec / baselineDocsPerSec;
      rounds.push({ ...pipeline, baselineDocsPerSec, ratio });
      progress(
        `round ${round}: pipeline ${round2(pipeline.docsPerSec)} documents/s, baseline ${round2(settings.documents / after.seconds)} after it, ratio ${round2(ratio)}`,
      );
    }
    const median = medianBy(rounds, (round) => round.ratio);
    const peakRssMB = Math.max(...rounds.map((round) => round.peakRssMB));
    const cpuSeconds = sumCpuSeconds(rounds.map((round) => round.cpuSeconds));
    const cpuMs = (...labelled: string[]) =>
      round2(cpuMsPer(cpuSeconds, settings.documents * rounds.length, labelled));
    const baselineDocuments = settings.documents * baselineRuns.length;

    const failures: string[] = [];
    rounds.forEach((round, index) => {
      if (round.timedOut)
        failures.push(
          `round ${index + 1}: not every document ended within ${settings.timeoutMs} ms`,
        );
      if (round.complete !== settings.documents)
        failures.push(
          `round ${index + 1}: ${round.complete} of ${settings.documents} documents complete`,
        );
    });
    if (median.ratio < TARGET_RATIO)
      failures.push(`median ratio ${round2(median.ratio)} < ${TARGET_RATIO}`);
    if (peakRssMB > TARGET_PEAK_RSS_MB)
      failures.push(`worker and parsers' peak RSS ${peakRssMB} MB > ${TARGET_PEAK_RSS_MB} MB`);
    return report(progress, failures, {
      docsPerSec: round2(median.docsPerSec),
      baselineDocsPerSec: round2(median.baselineDocsPerSec),
      ratio: round2(median.ratio),
      peakRssMB,
      rounds: rounds.map((round) => ({
        docsPerSec: round2(round.docsPerSec),
        baselineDocsPerSec: round2(round.baselineDocsPerSec),
        ratio: round2(round.ratio),
        peakRssMB: round.peakRssMB,
      })),
      baselineRunsDocsPerSec: baselineRuns.map((each) => round2(settings.documents / each.seconds)),
      baselinePageFaultsPerDocument: round2(
        baselineRuns.reduce((sum, each) => sum + each.minorPageFaults, 0) / baselineDocuments,
      ),
      documents: settings.documents,
      complete: median.complete,
      failed: median.failed,
      megabytes: round2(megabytes),
      seconds: round2(median.seconds),
      uploadSeconds: round2(median.uploadSeconds),
      avgExtractionMs: round2(median.avgExtractionMs),
      // Where the CPU went, per document, over every round: the parsers alone, and the worker
      // and API processes.
      cpuMsPerDocument: {
        baseline: round2(
          (baselineRuns.reduce((sum, each) => sum + each.cpuSeconds, 0) * 1000) / baselineDocuments,
        ),
        worker: cpuMs('worker', 'parsers'),
        workerWithoutParsers: cpuMs('worker'),
        api: cpuMs('api'),
        postgres: cpuMs('postgres'),
        redis: cpuMs('redis-server'),
        bench: cpuMs('bench'),
      },
      settings,
      warnings: [...rounds.flatMap((round) => round.warnings), ...workerWarnings([api])].slice(
        0,
        10,
      ),
      targets: { ratio: TARGET_RATIO, peakRssMB: TARGET_PEAK_RSS_MB },
    });
  },
);
