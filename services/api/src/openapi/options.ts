import type { SwaggerOptions } from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

type Document = Record<string, unknown> & { components?: { schemas?: Record<string, unknown> } };

/**
 * fastify-type-provider-zod lists every schema registered with an id twice, as `X` (responses)
 * and `XInput` (requests). Gleaner registers only response views, so an `XInput` no route
 * refers to is dropped rather than shown in the docs as a schema of its own.
 */
function withoutUnusedInputs(document: Document): Document {
  const schemas = document.components?.schemas;
  if (!schemas) return document;
  const text = JSON.stringify({ ...document, components: { ...document.components, schemas: {} } });
  const used = Object.entries(schemas).filter(
    ([name]) => !name.endsWith('Input') || text.includes(`"#/components/schemas/${name}"`),
  );
  return { ...document, components: { ...document.components, schemas: Object.fromEntries(used) } };
}

/**
 * The API's OpenAPI 3.1 document (`/docs/json`, rendered at `/docs`): every route's request and
 * responses from its zod schemas, errors as RFC 9457 problems, and the API key it takes. The
 * typed client in `packages/client` is generated from it (`pnpm openapi`).
 */
export const openApiOptions: SwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'Gleaner API',
      description:
        'Job postings and documents, kept fresh and structured. Every route but `/health` takes an API key: `Authorization: Bearer <key>`, or HTTP Basic with the key as the password. Errors are RFC 9457 problem details (`application/problem+json`).',
      version: '0.1.0',
    },
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key (`gleaner keys create`), scoped admin, viewer or tenant:<id>',
        },
        basicAuth: {
          type: 'http',
          scheme: 'basic',
          description: 'Any user name, the API key as the password (for browsers and curl -u)',
        },
      },
    },
    security: [{ bearerAuth: [] }, { basicAuth: [] }],
    tags: [
      { name: 'health', description: 'Liveness of the API and what it depends on' },
      { name: 'sites', description: 'Registered sites, their schedules and runs' },
      { name: 'jobs', description: 'Scrape runs: start, follow, cancel; queues' },
      { name: 'postings', description: 'Extracted job postings' },
      { name: 'scheduler', description: 'The schedule and its replicas' },
      { name: 'documents', description: 'Uploaded documents and their text' },
      { name: 'extraction', description: 'LLM extraction status and requeues' },
      {
        name: 'webhooks',
        description: 'Signed webhooks (Standard Webhooks): endpoints, deliveries, replays',
      },
    ],
  },
  transform: jsonSchemaTransform,
  transformObject: (document) =>
    withoutUnusedInputs(jsonSchemaTransformObject(document)) as ReturnType<
      typeof jsonSchemaTransformObject
    >,
};
