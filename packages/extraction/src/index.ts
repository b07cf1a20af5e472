export type { ExtractedPosting, ExtractionResult, FieldSource } from './types.js';
export { extractPosting, type ExtractPostingOptions } from './extract-posting.js';
export { findJsonLdBlocks } from './json-ld-scan.js';
export { EXTRACTOR_VERSION } from './version.js';
