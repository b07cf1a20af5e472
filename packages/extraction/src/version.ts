/**
 * Stored with every extracted record so that a change in extraction rules can be told apart
 * from a change on the page, and old records re-extracted. Bump it (date plus counter) whenever
 * the output for some page would change.
 */
export const EXTRACTOR_VERSION = '2026-11-22.1';
