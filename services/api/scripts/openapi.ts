import { writeFile } from 'node:fs/promises';
import { generateClientSources, generatedFiles } from '../src/openapi/client-sources.js';

/** `pnpm openapi`: writes the API's document and the client's types from it. */
const sources = await generateClientSources();
await writeFile(generatedFiles.openapi, sources.openapi);
await writeFile(generatedFiles.schema, sources.schema);
process.stdout.write(`wrote ${generatedFiles.openapi}\nwrote ${generatedFiles.schema}\n`);
