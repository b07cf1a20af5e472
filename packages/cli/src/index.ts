export { runCli, createProgram } from './program.js';
export type { CliIo } from './context.js';
export { exitCodes } from './output.js';
