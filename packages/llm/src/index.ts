/**
 * @gleaner/llm: field extraction with an LLM provider (Groq, OpenAI-compatible). A client with
 * typed errors and no retries of its own, the answer schemas, the prompts, grounding of every
 * value in the source text, and seed 002's two-tier extraction with a fallback model.
 */
export {
  createLlmClient,
  LLM_PROVIDERS,
  llmAgentOptions,
  modelProfile,
  type LlmClient,
  type LlmModelProfile,
  type LlmProvider,
  type LlmReasoningEffort,
  type LlmResponseFormat,
  type LlmClientOptions,
  type LlmCompletion,
  type LlmCompletionRequest,
  type LlmMessage,
  type LlmUsage,
} from './client.js';
export {
  LlmOutputError,
  LlmProviderError,
  type LlmOutputAttempt,
  type LlmOutputProblem,
  type LlmProviderErrorCode,
} from './errors.js';
export {
  capFields,
  estimateTokens,
  extractFields,
  isExtractableText,
  MIN_EXTRACTION_CHARS,
  truncateText,
  type ExtractionCaps,
  type ExtractionHooks,
  type ExtractionRequest,
  type ExtractionResult,
  type ExtractionSettings,
  type FallbackReason,
  type LlmCallEnd,
  type LlmCallStart,
} from './extract.js';
export {
  groundFields,
  normaliseForMatch,
  type GroundedFields,
  type GroundingCount,
  type GroundingOptions,
} from './grounding.js';
export { buildExtractionMessages, SYSTEM_PROMPTS } from './prompts.js';
export {
  parseGroqDuration,
  parseProviderRateLimit,
  type HeaderSource,
  type ProviderRateLimit,
} from './rate-limit.js';
export {
  answerJsonSchema,
  EXTRACTION_KINDS,
  postingFieldsSchema,
  resumeFieldsSchema,
  type ExtractionFieldsByKind,
  type ExtractionKind,
  type PostingFields,
  type ResumeFields,
} from './schemas.js';
export {
  buildSyncMessage,
  matchPostings,
  MIN_EVIDENCE_WORDS,
  SYNC_SYSTEM_PROMPT,
  type SyncCandidate,
  type SyncMatch,
  type SyncRequest,
  type SyncResult,
} from './sync.js';
export {
  buildInvestigateMessage,
  buildPageReadMessage,
  groundInvestigation,
  groundPageRead,
  investigatePost,
  INVESTIGATED_FIELDS,
  mergePageCandidates,
  PAGE_POST_FIELDS,
  PAGE_READ_SYSTEM_PROMPT,
  pagePostHashKey,
  pageTextForModel,
  POST_INVESTIGATE_SYSTEM_PROMPT,
  readPagePosts,
  type InvestigatedField,
  type InvestigateResult,
  type ListingPageText,
  type MergedPost,
  type PageCandidate,
  type PagePostField,
  type PagePostFields,
  type PageReadResult,
} from './pages.js';
