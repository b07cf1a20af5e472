/**
 * Scores an extractor against pages with known expected records (a corpus: `<name>.html` next to
 * `<name>.expected.json`, the record or `null` for a page that is not a posting).
 *
 * Per field:
 * - precision = correct non-null extracted values / non-null extracted values
 * - recall    = correct values / non-null expected values
 * where "correct" means both are non-null and match. Values extracted from a page that is not a
 * posting count as extracted and wrong; a posting page the extractor returned null for counts
 * its expected values as missed. A field absent from an expected record is not scored for that
 * page (null means "the page has no such value" and is scored).
 *
 * F1 per field is the harmonic mean of the two (0 when nothing correct was extracted).
 *
 * Matching: numbers exactly (to 1e-9), booleans exactly. Short text fields (title, company,
 * location, dates, types, …) after collapsing whitespace, lower-casing and dropping punctuation
 * and quotes around the value: `"Data Scientist."` matches `data scientist`, and a label's stray
 * colon or a page's typographic quotes are not a different value; inner punctuation counts
 * (`Irvine, CA` is not `Irvine CA`).
 * `description`, `descriptionText` and `requirements` compare their visible text — HTML turned
 * into text, lower-cased, split into words — by the Dice coefficient of the two word multisets,
 * and match at DESCRIPTION_SIMILARITY or above: what matters is that the right content was
 * taken, not the markup it came in or a stray line of page furniture.
 *
 * `invented` counts non-posting pages for which a posting was returned.
 *
 * Sites (evaluateSites): a corpus directory's subfolders are sites of many pages, learned
 * together into a site template (template/) and then scored page by page with it; pages at the
 * top of the directory are sites of one page, read without a template.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import {
  longTextFieldKeys,
  postingFieldKeys,
  type PostingFieldKey,
} from '@gleaner/db/posting-fields';
import { extractPosting, type TemplateFit } from './extract-posting.js';
import { learnSiteTemplate } from './template/learn.js';
import { nextTemplateLearningAt, TEMPLATE_MAX_PAGES } from './template/schedule.js';
import type { SiteTemplate } from './template/types.js';
import { htmlToText, normaliseWhitespace } from './html-text.js';
import type { ExtractionResult } from './types.js';

/** Every field of a posting is evaluated. */
export const EVALUATED_FIELDS = postingFieldKeys;

export type EvaluatedField = PostingFieldKey;

/** Word-multiset Dice similarity at which two texts count as the same content. */
export const DESCRIPTION_SIMILARITY = 0.9;

const TEXT_FIELDS: ReadonlySet<EvaluatedField> = new Set(longTextFieldKeys);

export interface CorpusPage {
  name: string;
  html: string;
  /** The expected record, possibly partial; null for a page that is not a posting. */
  expected: Partial<Record<EvaluatedField, unknown>> | null;
}

export interface FieldScore {
  /** null when nothing was extracted for the field. */
  precision: number | null;
  /** null when no page expects a value for the field. */
  recall: number | null;
  extracted: number;
  expected: number;
  correct: number;
  /** Harmonic mean of precision and recall; null when the field is neither expected nor found. */
  f1: number | null;
}

export interface FieldMismatch {
  page: string;
  field: EvaluatedField;
  expected: unknown;
  actual: unknown;
}

export interface EvaluationReport {
  pages: number;
  postingPages: number;
  fields: Record<EvaluatedField, FieldScore>;
  /** Non-posting pages for which a posting was returned. */
  invented: number;
  inventedPages: string[];
  /** Posting pages for which null was returned. */
  missed: number;
  missedPages: string[];
  mismatches: FieldMismatch[];
  /** The extraction result of every page, by name. */
  results: Map<string, ExtractionResult | null>;
}

/** Reads one page; `index` is the page's place in the list being evaluated. */
export type Extractor = (html: string, index: number) => ExtractionResult | null;

/** Reads `<name>.html` + `<name>.expected.json` pairs from a directory, in name order. */
export function readCorpus(directory: string): CorpusPage[] {
  const pages: CorpusPage[] = [];
  for (const file of readdirSync(directory).sort()) {
    if (!file.endsWith('.html')) continue;
    const name = file.slice(0, -'.html'.length);
    const expectedPath = path.join(directory, `${name}.expected.json`);
    const expected = JSON.parse(readFileSync(expectedPath, 'utf8')) as unknown;
    if (expected !== null && (typeof expected !== 'object' || Array.isArray(expected))) {
      throw new Error(`${expectedPath}: expected a record object or null`);
    }
    pages.push({
      name,
      html: readFileSync(path.join(directory, file), 'utf8'),
      expected,
    });
  }
  return pages;
}

function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Dice coefficient of the two texts' word multisets: 1 for the same words, 0 for none shared. */
export function textSimilarity(a: string, b: string): number {
  const left = words(a);
  const right = words(b);
  if (left.length === 0 && right.length === 0) return 1;
  const counts = new Map<string, number>();
  for (const word of left) counts.set(word, (counts.get(word) ?? 0) + 1);
  let shared = 0;
  for (const word of right) {
    const count = counts.get(word) ?? 0;
    if (count > 0) {
      shared++;
      counts.set(word, count - 1);
    }
  }
  return (2 * shared) / (left.length + right.length);
}

/** Whether an extracted value matches the expected one (both non-null), by the rules above. */
export function fieldMatches(field: EvaluatedField, expected: unknown, actual: unknown): boolean {
  if (expected === null || actual === null || expected === undefined || actual === undefined)
    return false;
  if (typeof expected === 'number' && typeof actual === 'number')
    return Math.abs(expected - actual) < 1e-9;
  if (typeof expected === 'boolean') return expected === actual;
  if (typeof expected !== 'string' || typeof actual !== 'string') return false;
  if (TEXT_FIELDS.has(field)) {
    return (
      textSimilarity(htmlToText(expected) ?? '', htmlToText(actual) ?? '') >= DESCRIPTION_SIMILARITY
    );
  }
  return shortText(expected) === shortText(actual);
}

/** Surrounding punctuation and quotes, of any script: `"`, `«`, `:`, `.`, `–` (not symbols: C++). */
const SURROUNDING = /^[\s\p{P}]+|[\s\p{P}]+$/gu;

function shortText(text: string): string {
  return normaliseWhitespace(text).toLowerCase().replace(SURROUNDING, '');
}

function f1Of(correct: number, extracted: number, expected: number): number | null {
  if (extracted === 0 && expected === 0) return null;
  const precision = extracted === 0 ? 0 : correct / extracted;
  const recall = expected === 0 ? 0 : correct / expected;
  return precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
}

function fieldScore(extracted: number, expected: number, correct: number): FieldScore {
  return {
    precision: extracted === 0 ? null : correct / extracted,
    recall: expected === 0 ? null : correct / expected,
    extracted,
    expected,
    correct,
    f1: f1Of(correct, extracted, expected),
  };
}

export function evaluatePages(
  pages: readonly CorpusPage[],
  extract: Extractor = (html) => extractPosting(html),
): EvaluationReport {
  const counts = new Map<EvaluatedField, { extracted: number; expected: number; correct: number }>(
    EVALUATED_FIELDS.map((field) => [field, { extracted: 0, expected: 0, correct: 0 }]),
  );
  const report: Omit<EvaluationReport, 'fields'> = {
    pages: pages.length,
    postingPages: 0,
    invented: 0,
    inventedPages: [],
    missed: 0,
    missedPages: [],
    mismatches: [],
    results: new Map(),
  };

  for (const [index, page] of pages.entries()) {
    const result = extract(page.html, index);
    report.results.set(page.name, result);
    if (page.expected === null) {
      if (result !== null) {
        report.invented++;
        report.inventedPages.push(page.name);
      }
    } else {
      report.postingPages++;
      if (result === null) {
        report.missed++;
        report.missedPages.push(page.name);
      }
    }
    for (const field of EVALUATED_FIELDS) {
      const score = counts.get(field);
      if (score === undefined) continue;
      const actual = result?.posting[field] ?? null;
      if (page.expected === null) {
        if (actual !== null) score.extracted++;
        continue;
      }
      if (!(field in page.expected)) continue;
      const expected = page.expected[field] ?? null;
      if (actual !== null) score.extracted++;
      if (expected !== null) score.expected++;
      if (fieldMatches(field, expected, actual)) score.correct++;
      else if (expected !== null || actual !== null)
        report.mismatches.push({ page: page.name, field, expected, actual });
    }
  }

  const fields = {} as Record<EvaluatedField, FieldScore>;
  for (const field of EVALUATED_FIELDS) {
    const { extracted, expected, correct } = counts.get(field) ?? {
      extracted: 0,
      expected: 0,
      correct: 0,
    };
    fields[field] = fieldScore(extracted, expected, correct);
  }
  return { ...report, fields };
}

/** One site of a corpus: the pages of a subfolder, or one page at the top. */
export interface CorpusSite {
  name: string;
  pages: CorpusPage[];
  /** A subfolder: its pages are learned together into a template. */
  isFolder: boolean;
}

/**
 * The sites of a corpus directory: each subfolder one site, each page at the top a site of its
 * own. Page names are `<site>/<page>` for pages of a subfolder.
 */
export function readSites(directory: string): CorpusSite[] {
  const sites: CorpusSite[] = readCorpus(directory).map((page) => ({
    name: page.name,
    pages: [page],
    isFolder: false,
  }));
  for (const name of readdirSync(directory)) {
    // statSync follows links: a dev set may gather its sites as links to folders elsewhere.
    if (!statSync(path.join(directory, name)).isDirectory()) continue;
    const pages = readCorpus(path.join(directory, name)).map((page) => ({
      ...page,
      name: `${name}/${page.name}`,
    }));
    if (pages.length > 0) sites.push({ name, pages, isFolder: true });
  }
  return sites.sort((a, b) => a.name.localeCompare(b.name));
}

export interface SiteEvaluationOptions {
  /** Learn each folder's template and read its pages with it (default true). */
  useTemplate?: boolean;
  /** Strip JSON-LD and microdata/RDFa from every page first (see stripStructuredData). */
  stripStructuredData?: boolean;
  /**
   * Score each folder's pages as the site's first run holds them once it has closed
   * (`readAsFirstRun`), instead of each read with a template learned from all of them at once.
   */
  asCrawled?: boolean;
}

export interface SiteReport {
  site: string;
  report: EvaluationReport;
  /** Whether a template was learned for the site. */
  hasTemplate: boolean;
}

export function evaluateSites(
  sites: readonly CorpusSite[],
  options: SiteEvaluationOptions = {},
): { total: EvaluationReport; sites: SiteReport[] } {
  const useTemplate = options.useTemplate ?? true;
  const reports: SiteReport[] = sites.map((site) => {
    const pages = options.stripStructuredData
      ? site.pages.map((page) => ({ ...page, html: stripStructuredData(page.html) }))
      : site.pages;
    const htmls = pages.map((page) => page.html);
    if (useTemplate && site.isFolder && options.asCrawled) {
      const { results, last } = readAsFirstRun(htmls);
      const report = evaluatePages(pages, (_html, index) => results[index] ?? null);
      return { site: site.name, report, hasTemplate: last !== null };
    }
    const template = useTemplate && site.isFolder ? learnSiteTemplate(htmls) : null;
    const report = evaluatePages(pages, (html) =>
      extractPosting(html, template === null ? {} : { template }),
    );
    return { site: site.name, report, hasTemplate: template !== null };
  });
  return { total: mergeReports(reports.map((site) => site.report)), sites: reports };
}

/**
 * What a site's first run holds for each of its pages once it has closed, as the worker reads
 * them: the pages come one after another; each is read with the template learned from the pages
 * before it (none until `TEMPLATE_MIN_PAGES` are in, then again on `nextTemplateLearningAt`'s
 * schedule, from the last `TEMPLATE_MAX_PAGES`; a learning that finds nothing is tried again at
 * the next page); one the rules find no posting in before there is any template waits for the
 * first; and before the run closes, every page, read or found to hold no posting, is read again
 * with the template learned last, where that template fits it. The worker reads many pages at
 * once, so its pages meet their templates later than these do.
 */
export function readAsFirstRun(htmls: readonly string[]): {
  results: (ExtractionResult | null)[];
  last: SiteTemplate | null;
} {
  const arrival: (SiteTemplate | null)[] = [];
  let first: SiteTemplate | null = null;
  let last: SiteTemplate | null = null;
  let learnedFrom: number | null = null;
  for (let stored = 1; stored <= htmls.length; stored += 1) {
    arrival.push(last);
    const due = nextTemplateLearningAt(learnedFrom);
    if (due === null || stored < due) continue;
    const from = htmls.slice(Math.max(0, stored - TEMPLATE_MAX_PAGES), stored);
    const learned = learnSiteTemplate(from);
    if (learned === null) continue;
    first ??= learned;
    last = learned;
    learnedFrom = from.length;
  }
  const results = htmls.map((html, index) => {
    let readWith = arrival[index] ?? null;
    let result = extractPosting(html, readWith === null ? {} : { template: readWith });
    if (result === null && readWith === null && first !== null) {
      readWith = first;
      result = extractPosting(html, { template: first });
    }
    if (last === null || last === readWith) return result;
    let fit: TemplateFit | undefined;
    const reread = extractPosting(html, { template: last, onTemplateFit: (seen) => (fit = seen) });
    return reread !== null && fit?.fits === true && !fit.stale ? reread : result;
  });
  return { results, last };
}

function mergeReports(reports: readonly EvaluationReport[]): EvaluationReport {
  const fields = {} as Record<EvaluatedField, FieldScore>;
  for (const field of EVALUATED_FIELDS) {
    let extracted = 0;
    let expected = 0;
    let correct = 0;
    for (const report of reports) {
      extracted += report.fields[field].extracted;
      expected += report.fields[field].expected;
      correct += report.fields[field].correct;
    }
    fields[field] = fieldScore(extracted, expected, correct);
  }
  return {
    pages: reports.reduce((sum, report) => sum + report.pages, 0),
    postingPages: reports.reduce((sum, report) => sum + report.postingPages, 0),
    fields,
    invented: reports.reduce((sum, report) => sum + report.invented, 0),
    inventedPages: reports.flatMap((report) => report.inventedPages),
    missed: reports.reduce((sum, report) => sum + report.missed, 0),
    missedPages: reports.flatMap((report) => report.missedPages),
    mismatches: reports.flatMap((report) => report.mismatches),
    results: new Map(reports.flatMap((report) => [...report.results])),
  };
}

const JSON_LD_SCRIPT =
  /<script\b[^>]*\btype\s*=\s*["']?application\/ld\+json[^>]*>[\s\S]*?<\/script\s*>/gi;
const TAG = /<[a-zA-Z][^>]*>/g;
const ITEM_ATTRIBUTE =
  /\s(?:itemscope|itemprop|itemtype|itemid|itemref|typeof|vocab|property|resource|prefix)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))?(?=[\s/>])/gi;

/**
 * The page without its structured data: JSON-LD scripts and microdata/RDFa attributes
 * (itemscope, itemprop, itemtype, typeof, property, vocab …), so that what is left to read is the
 * markup alone. OpenGraph's `<meta property="og:…">` stays: it is the page's head, not a record.
 */
export function stripStructuredData(html: string): string {
  return html.replace(JSON_LD_SCRIPT, '').replace(TAG, (tag) => {
    if (/^<meta\b/i.test(tag) && /\bproperty\s*=\s*["']?og:/i.test(tag)) return tag;
    return tag.replace(ITEM_ATTRIBUTE, '');
  });
}

function round(value: number | null): number | null {
  return value === null ? null : Math.round(value * 1000) / 1000;
}

/** The machine-readable summary: `{"pages","fields":{field:{precision,recall}},"invented","missed"}`. */
export function summariseReport(report: EvaluationReport): {
  pages: number;
  fields: Record<string, { precision: number | null; recall: number | null; f1: number | null }>;
  invented: number;
  missed: number;
} {
  const fields: Record<
    string,
    { precision: number | null; recall: number | null; f1: number | null }
  > = {};
  for (const field of EVALUATED_FIELDS) {
    const score = report.fields[field];
    if (score.extracted === 0 && score.expected === 0) continue; // not scored by this corpus
    fields[field] = {
      precision: round(score.precision),
      recall: round(score.recall),
      f1: round(score.f1),
    };
  }
  return { pages: report.pages, fields, invented: report.invented, missed: report.missed };
}

function show(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 90 ? `${text.slice(0, 87)}…` : text;
}

/** Human-readable lines: one per mismatch, invented or missed page, then a table of fields. */
export function formatReport(report: EvaluationReport): string[] {
  const lines: string[] = [];
  for (const page of report.inventedPages)
    lines.push(`INVENTED ${page}: a posting from a non-posting page`);
  for (const page of report.missedPages) lines.push(`MISSED   ${page}: no posting extracted`);
  for (const mismatch of report.mismatches) {
    if (report.missedPages.includes(mismatch.page)) continue;
    lines.push(
      `DIFF     ${mismatch.page} ${mismatch.field}: expected ${show(mismatch.expected)}, got ${show(mismatch.actual)}`,
    );
  }
  lines.push('');
  lines.push(
    `${'field'.padEnd(16)} ${'precision'.padStart(9)} ${'recall'.padStart(7)} ${'F1'.padStart(6)}  correct/extracted/expected`,
  );
  for (const field of EVALUATED_FIELDS) {
    const score = report.fields[field];
    if (score.extracted === 0 && score.expected === 0) continue;
    const format = (value: number | null): string => (value === null ? '-' : value.toFixed(3));
    lines.push(
      `${field.padEnd(16)} ${format(score.precision).padStart(9)} ${format(score.recall).padStart(7)} ${format(score.f1).padStart(6)}  ${score.correct}/${score.extracted}/${score.expected}`,
    );
  }
  lines.push('');
  lines.push(
    `${report.pages} pages (${report.postingPages} postings): ${report.invented} invented, ${report.missed} missed`,
  );
  return lines;
}

/** The fields of the per-site table. */
const SITE_TABLE_FIELDS = ['title', 'company', 'location'] as const;

export interface SiteSummary {
  site: string;
  pages: number;
  template: boolean;
  title: number | null;
  company: number | null;
  location: number | null;
  invented: number;
  missed: number;
}

export function summariseSites(sites: readonly SiteReport[]): SiteSummary[] {
  return sites.map(({ site, report, hasTemplate }) => ({
    site,
    pages: report.pages,
    template: hasTemplate,
    title: round(report.fields.title.f1),
    company: round(report.fields.company.f1),
    location: round(report.fields.location.f1),
    invented: report.invented,
    missed: report.missed,
  }));
}

/** One line per site: pages, F1 of title, company and location, invented and missed pages. */
export function formatSites(sites: readonly SiteReport[]): string[] {
  const format = (value: number | null): string => (value === null ? '-' : value.toFixed(3));
  const width = Math.max(4, ...sites.map((site) => site.site.length));
  const lines = [
    `${'site'.padEnd(width)} ${'pages'.padStart(5)} tpl ${SITE_TABLE_FIELDS.map((field) => field.padStart(8)).join(' ')} invented missed`,
  ];
  for (const summary of summariseSites(sites)) {
    lines.push(
      `${summary.site.padEnd(width)} ${String(summary.pages).padStart(5)} ${summary.template ? 'yes' : ' - '} ${SITE_TABLE_FIELDS.map((field) => format(summary[field]).padStart(8)).join(' ')} ${String(summary.invented).padStart(8)} ${String(summary.missed).padStart(6)}`,
    );
  }
  return lines;
}
