export { buildApp } from './app.js';
export type { ApiDeps } from './deps.js';
export { buildOpenApiDocument } from './openapi/document.js';
