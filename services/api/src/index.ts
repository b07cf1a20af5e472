export { buildApp } from './app.js';
export type { ApiDeps } from './deps.js';
