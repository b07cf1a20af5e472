import { readFile } from 'node:fs/promises';
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

/** The multipart form of `POST /documents`: the file and its fields. */
export async function documentForm(file: string, options: AddOptions): Promise<FormData> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`, exitCodes.usage);
  }
  const form = new FormData();
  form.set('tenant_id', options.tenant);
  form.set('kind', options.kind);
  if (options.externalId !== undefined) form.set('external_id', options.externalId);
  if (options.priority !== undefined) form.set('priority', String(options.priority));
  const type = mediaTypes[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
  // The file last: the API reads the fields in any order, but a reader of the form sees them first.
  form.set('file', new Blob([bytes], { type }), path.basename(file));
  return form;
}

export function documentsCommand(act: Act): Command {
  const documents = new Command('documents').description("store and search a tenant's documents");

  documents
    .command('add')
    .description('store a document (PDF, DOCX, HTML or text) and queue its extraction')
    .argument('<file>', 'the file to upload')
    .requiredOption('--tenant <id>', 'the tenant it belongs to')
    .addOption(
      new Option('--kind <kind>', 'what it is')
        .choices(['resume', 'posting', 'other'])
        .default('resume'),
    )
    .option('--external-id <id>', 'your own id for it')
    .option('--priority <n>', 'higher is extracted first (-1000 to 1000)', integer(-1000, 1000))
    .action(
      act(async (context, file: string, options: AddOptions) => {
        const form = await documentForm(file, options);
        // The route takes multipart or JSON and validates in its handler, so the document
        // describes no request body: the form goes through as it is.
        const answer = unwrap(
          await context.api.POST('/documents', {
            body: form as never,
            bodySerializer: (body: unknown) => body,
          }),
        );
        context.output.result(answer, () =>
          context.output.line(
            `document ${answer.id} ${answer.status}${answer.duplicate ? ' (already stored: the same bytes for this tenant)' : ''}`,
          ),
        );
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
