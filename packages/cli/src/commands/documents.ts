import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Command, Option } from 'commander';
import { integer } from '../arguments.js';
import { CliError, exitCodes, unwrap } from '../output.js';
import type { Act } from '../program.js';

const mediaTypes: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.txt': 'text/plain',
  '.md': 'text/plain',
};

interface AddOptions {
  tenant: string;
  kind: string;
  externalId?: string;
  priority?: number;
}

/** Files one `POST /documents/batch` takes at most. */
const BATCH_FILES = 100;
/**
 * Bytes of files one batch carries at most: the API's default DOCUMENT_MAX_BYTES (20 MiB), which
 * bounds a batch's files together. A larger file goes in a batch of its own.
 */
const BATCH_BYTES = 20 * 1024 * 1024;

interface LocalFile {
  path: string;
  bytes: Buffer;
}

const cannotRead = (file: string, why: string) =>
  new CliError(`cannot read ${file}: ${why}`, exitCodes.usage);

async function readLocal(file: string): Promise<LocalFile> {
  try {
    return { path: file, bytes: await readFile(file) };
  } catch (error) {
    throw cannotRead(file, (error as Error).message);
  }
}

async function readable(file: string): Promise<void> {
  const stats = await stat(file).catch((error: unknown) => {
    throw cannotRead(file, (error as Error).message);
  });
  if (!stats.isFile()) throw cannotRead(file, 'not a file');
}

/** The multipart form of `POST /documents` (one file) or `POST /documents/batch` (several). */
export function documentForm(files: readonly LocalFile[], options: AddOptions): FormData {
  const form = new FormData();
  form.set('tenant_id', options.tenant);
  form.set('kind', options.kind);
  if (options.externalId !== undefined) form.set('external_id', options.externalId);
  if (options.priority !== undefined) form.set('priority', String(options.priority));
  // The files last: the API reads the fields in any order, but a reader sees them first.
  for (const file of files) {
    const type = mediaTypes[path.extname(file.path).toLowerCase()] ?? 'application/octet-stream';
    form.append('file', new Blob([file.bytes], { type }), path.basename(file.path));
  }
  return form;
}

/** The files in batches of at most BATCH_FILES and BATCH_BYTES, read as each batch is sent. */
async function* batches(files: readonly string[]): AsyncGenerator<LocalFile[]> {
  let batch: LocalFile[] = [];
  let bytes = 0;
  for (const file of files) {
    const local = await readLocal(file);
    if (
      batch.length === BATCH_FILES ||
      (batch.length > 0 && bytes + local.bytes.length > BATCH_BYTES)
    ) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(local);
    bytes += local.bytes.length;
  }
  if (batch.length > 0) yield batch;
}

export function documentsCommand(act: Act): Command {
  const documents = new Command('documents').description("store and search a tenant's documents");

  documents
    .command('add')
    .description('store documents (PDF, DOCX, HTML or text) and queue their extraction')
    .argument('<files...>', 'the files to upload (several go up in batches of up to 100)')
    .requiredOption('--tenant <id>', 'the tenant they belong to')
    .addOption(
      new Option('--kind <kind>', 'what they are')
        .choices(['resume', 'posting', 'other'])
        .default('resume'),
    )
    .option('--external-id <id>', 'your own id for it (one file only)')
    .option('--priority <n>', 'higher is extracted first (-1000 to 1000)', integer(-1000, 1000))
    .action(
      act(async (context, files: string[], options: AddOptions) => {
        // The routes take multipart or JSON and read a form in their handlers, so the API's
        // document describes no form: it goes through as it is.
        const asForm = { bodySerializer: (body: unknown) => body };
        if (files.length === 1) {
          const form = documentForm([await readLocal(files[0]!)], options);
          const answer = unwrap(
            await context.api.POST('/documents', { body: form as never, ...asForm }),
          );
          context.output.result(answer, () =>
            context.output.line(
              `document ${answer.id} ${answer.status}${answer.duplicate ? ' (already stored: the same bytes for this tenant)' : ''}`,
            ),
          );
          return;
        }
        if (options.externalId !== undefined)
          throw new CliError('--external-id names one document: give one file', exitCodes.usage);
        // Every file readable before the first batch goes up; the first that is not is named.
        for (const file of files) await readable(file);
        // Batch after batch: one the API refuses stops the command. Those before it stay stored,
        // and running the command again answers them as already stored (same bytes, same tenant).
        const stored: { file: string; id: string; status: string; duplicate: boolean }[] = [];
        for await (const batch of batches(files)) {
          const answer = unwrap(
            await context.api.POST('/documents/batch', {
              body: documentForm(batch, options) as never,
              ...asForm,
            }),
          );
          answer.documents.forEach((document, index) =>
            stored.push({ file: batch[index]!.path, ...document }),
          );
        }
        const duplicates = stored.filter((document) => document.duplicate).length;
        const result = { documents: stored, created: stored.length - duplicates, duplicates };
        context.output.result(result, () => {
          context.output.table(
            stored.map((document) => ({
              file: document.file,
              id: document.id,
              status: document.duplicate ? `${document.status} (already stored)` : document.status,
            })),
            ['file', 'id', 'status'],
          );
          context.output.line(`${result.created} stored, ${duplicates} already stored`);
        });
      }),
    );

  documents
    .command('search')
    .description("full-text search of a tenant's extracted documents, best first")
    .argument('<query>', 'words; "an exact phrase", or, -word')
    .requiredOption('--tenant <id>', 'the tenant to search')
    .option('--limit <n>', 'at most this many hits', integer(1, 50))
    .action(
      act(async (context, query: string, options: { tenant: string; limit?: number }) => {
        const answer = unwrap(
          await context.api.GET('/documents/search', {
            params: {
              query: {
                tenant_id: options.tenant,
                q: query,
                ...(options.limit === undefined ? {} : { limit: options.limit }),
              },
            },
          }),
        );
        context.output.result(answer, () =>
          context.output.table(
            answer.data.map((hit) => ({
              id: hit.id,
              kind: hit.kind,
              title: hit.title ?? hit.filename,
              rank: hit.rank.toFixed(3),
              snippet: hit.snippet.replace(/\s+/g, ' ').slice(0, 80),
            })),
            ['id', 'kind', 'title', 'rank', 'snippet'],
          ),
        );
      }),
    );

  return documents;
}
