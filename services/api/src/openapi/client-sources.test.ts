import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { generateClientSources, generatedFiles } from './client-sources.js';

describe('the committed OpenAPI document and client types', () => {
  it('are what the API describes now (run `pnpm openapi` after changing a route)', async () => {
    const [fresh, openapi, schema] = await Promise.all([
      generateClientSources(),
      readFile(generatedFiles.openapi, 'utf8'),
      readFile(generatedFiles.schema, 'utf8'),
    ]);
    // Compared parsed first: a stale document then shows which paths differ, not a wall of text.
    expect(JSON.parse(openapi)).toEqual(JSON.parse(fresh.openapi));
    expect(openapi).toBe(fresh.openapi);
    expect(schema).toBe(fresh.schema);
  });
});
