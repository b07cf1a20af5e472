export type { ExtractedPosting, ExtractionResult, FieldSource } from './types.js';
export { extractPosting, type ExtractPostingOptions, type TemplateFit } from './extract-posting.js';
export {
  labelTemplate,
  learnSiteTemplate,
  nextTemplateLearningAt,
  readWithTemplate,
  TEMPLATE_MAX_PAGES,
  TEMPLATE_MIN_PAGES,
  type SiteTemplate,
  type TemplateField,
  type TemplatePath,
  type TemplateReading,
} from './template/index.js';
export { findJsonLdBlocks } from './json-ld-scan.js';
export { EXTRACTOR_VERSION } from './version.js';
export { normaliseDate } from './dates.js';
export { normaliseEmploymentType } from './employment-type.js';
export { htmlToText } from './html-text.js';
export { parseLocationText, type ParsedLocation } from './location.js';
export { requirementsFromHtml } from './requirements.js';
export { findSalaryInText, parseSalaryText, type Salary } from './salary.js';
export { sanitiseHtml } from './sanitise-html.js';
export { boundNesting, MAX_NESTING_DEPTH } from './bound-nesting.js';
export {
  DESCRIPTION_SIMILARITY,
  EVALUATED_FIELDS,
  evaluatePages,
  evaluateSites,
  fieldMatches,
  formatReport,
  formatSites,
  readCorpus,
  readSites,
  stripStructuredData,
  summariseReport,
  summariseSites,
  textSimilarity,
  type CorpusPage,
  type CorpusSite,
  type SiteReport,
  type SiteSummary,
  type EvaluatedField,
  type EvaluationReport,
  type FieldScore,
} from './evaluate.js';
export { hammingDistance, pageSimhash, simhash, textSimhash } from './simhash.js';
export { textSha256 } from './text-sha256.js';
export { pageTokens, textTokens } from './words.js';
export { countryCode, currencyCode, currencyFromSymbol } from './currency.js';
export {
  isRequirementHeading,
  NOT_REQUIREMENT_HEADINGS,
  REQUIREMENT_HEADINGS,
} from './requirement-headings.js';
