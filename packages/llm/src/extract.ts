import type {
  LlmClient,
  LlmCompletion,
  LlmReasoningEffort,
  LlmResponseFormat,
  LlmUsage,
} from './client.js';
import {
  abortedCallError,
  LlmOutputError,
  LlmProviderError,
  type LlmOutputAttempt,
  type LlmOutputProblem,
} from './errors.js';
import { groundFields, normaliseForMatch, type GroundedFields } from './grounding.js';
import { buildExtractionMessages } from './prompts.js';
import type { ProviderRateLimit } from './rate-limit.js';
import {
  answerJsonSchema,
  extractionSchemas,
  REQUIRED_FIELDS,
  type ExtractionFieldsByKind,
  type ExtractionKind,
  type ResumeFields,
} from './schemas.js';

/** Seed 002: texts shorter than this, trimmed, are skipped rather than extracted. */
export const MIN_EXTRACTION_CHARS = 100;

/** Whether a text is long enough to extract from (seed 002's `skipped` below 100 chars). */
export function isExtractableText(text: string): boolean {
  return text.trim().length >= MIN_EXTRACTION_CHARS;
}

/** Most items kept per list, after grounding and de-duplication (seed 002's field caps). */
export interface ExtractionCaps {
  primarySkills: number;
  recentTitles: number;
  certifications: number;
  industries: number;
}

/** How to extract; seed 002's `EXTRACTION_*` settings, read by the service's config. */
export interface ExtractionSettings {
  primaryModel: string;
  fallbackModel: string;
  /** A primary answer with a lower confidence is asked again of the fallback model. */
  confidenceThreshold: number;
  /** Cap on each answer's own tokens (the JSON). */
  maxTokens: number;
  /** The text is cut to this many characters before it is sent. */
  maxInputChars: number;
  caps: ExtractionCaps;
  /** `reasoning_effort` asked of reasoning models. Default `low`: extraction needs little. */
  reasoningEffort?: LlmReasoningEffort;
  /**
   * Room for a reasoning model's reasoning, added to `maxTokens` in `max_completion_tokens`, so
   * that reasoning cannot crowd out the JSON. Default 1024.
   */
  reasoningTokens?: number;
  /**
   * `auto`: strict `json_schema` where the model supports it (`LlmClient.profile`), JSON mode
   * otherwise. Default `auto`.
   */
  responseFormat?: 'auto' | 'json_schema' | 'json_object';
  /**
   * Most model answers one extraction may pay for, across its job's attempts (seed 002's
   * `EXTRACTION_MAX_ATTEMPTS`: primary + fallback = 2). A call the provider refused (429, 5xx,
   * timeout) is not an answer and does not count. Unset: no cap.
   */
  maxCalls?: number;
}

/** A call about to be made: the model and a token estimate, for a token budget to wait on. */
export interface LlmCallStart {
  model: string;
  /** `estimateTokens` of the prompt + the call's token cap: an upper-end guess; `usage` afterwards is the truth. */
  estimatedTokens: number;
}

/** A call that ended, with its usage and the provider's rate-limit state when it answered. */
export interface LlmCallEnd {
  model: string;
  /** The model answered (counts against `maxCalls`): a completion, or Groq's failed generation. */
  answered: boolean;
  usage?: LlmUsage;
  rateLimit?: ProviderRateLimit;
  error?: unknown;
}

/** Hooks around each provider call; a hook that rejects fails the extraction. */
export interface ExtractionHooks {
  beforeCall?(call: LlmCallStart): Promise<void>;
  afterCall?(call: LlmCallEnd): Promise<void>;
  /** The fallback model is about to be asked, and why (seed 002's "Falling back to larger model"). */
  beforeFallback?(reason: FallbackReason): Promise<void>;
}

/**
 * What an earlier attempt of the same extraction already spent: its model answers, and why it
 * went on to the fallback. An attempt that resumes after answers goes straight to the fallback.
 */
export interface ExtractionProgress {
  answeredCalls: number;
  fallbackReason: FallbackReason | null;
}

/** One text to extract fields from. */
export interface ExtractionRequest<K extends ExtractionKind = ExtractionKind> {
  kind: K;
  text: string;
  settings: ExtractionSettings;
  signal?: AbortSignal;
  hooks?: ExtractionHooks;
  progress?: ExtractionProgress;
}

/**
 * Why the fallback model was asked: the primary's answer was not good enough, or the primary
 * could not answer (unknown or retired model, provider down for it, a 422).
 */
export type FallbackReason = LlmOutputProblem | 'model_unavailable' | 'provider_error';

/** Grounded, capped fields and what it took to get them. */
export type ExtractionResult<K extends ExtractionKind = ExtractionKind> = {
  [P in K]: {
    kind: P;
    fields: ExtractionFieldsByKind[P];
    /** The accepted answer's own confidence (a fallback answer is kept even below the threshold). */
    confidence: number;
    /** The model whose answer was accepted, as named in the settings. */
    model: string;
    fallbackUsed: boolean;
    fallbackReason?: FallbackReason;
    /** Summed over every call made. */
    usage: LlmUsage;
    /** Model answers in this attempt: 1, or 2 with the fallback (more after answers cut short). */
    calls: number;
    /** Paths of the accepted answer's values that grounding removed. */
    dropped: string[];
    /** Per field of the accepted answer: values grounding kept and dropped (a drop-rate metric). */
    counts: FieldCounts<P>;
    /** Models the provider said do not exist (or no longer do): an operator should know. */
    unavailableModels: string[];
  };
}[K];

/** Per field with a value: how many of its values grounding kept and dropped. */
type FieldCounts<K extends ExtractionKind> = GroundedFields<ExtractionFieldsByKind[K]>['counts'];

/** Cuts `text` to `maxChars` without splitting a surrogate pair. */
export function truncateText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = /[\uD800-\uDBFF]/.test(text[maxChars - 1] ?? '') ? maxChars - 1 : maxChars;
  return text.slice(0, cut);
}

/** A list without repeats (compared as grounding compares) and at most `cap` long. */
function capList(values: string[], cap: number): string[];
function capList(values: string[] | null, cap: number): string[] | null;
function capList(values: string[] | null, cap: number): string[] | null {
  if (values === null) return null;
  const seen = new Set<string>();
  const kept: string[] = [];
  for (const value of values) {
    const key = normaliseForMatch(value);
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(value);
  }
  return kept.slice(0, Math.max(0, cap));
}

/** Seed 002's caps on a resume's lists; a posting has none. */
export function capFields<K extends ExtractionKind>(
  kind: K,
  fields: ExtractionFieldsByKind[K],
  caps: ExtractionCaps,
): ExtractionFieldsByKind[K] {
  if (kind !== 'resume') return fields;
  const resume = fields as ResumeFields;
  const capped: ResumeFields = {
    ...resume,
    primary_skills: capList(resume.primary_skills, caps.primarySkills),
    recent_job_titles: capList(resume.recent_job_titles, caps.recentTitles),
    certifications: capList(resume.certifications, caps.certifications),
    industries: capList(resume.industries, caps.industries),
  };
  return capped as ExtractionFieldsByKind[K];
}

/**
 * What an answer must keep to be used at all once neither model gave every required field: a
 * posting page that names no company still has a posting, without a company (never an invented
 * one); a resume needs its required fields.
 */
const MINIMUM_FIELDS = {
  resume: REQUIRED_FIELDS.resume,
  posting: ['title'],
} as const satisfies { [K in ExtractionKind]: readonly (keyof ExtractionFieldsByKind[K])[] };

function missingFields(
  kind: ExtractionKind,
  fields: object,
  required: readonly string[] = REQUIRED_FIELDS[kind],
): string[] {
  return required.filter((key) => {
    const value = (fields as Record<string, unknown>)[key];
    return (
      value === null ||
      value === undefined ||
      value === '' ||
      (Array.isArray(value) && value.length === 0)
    );
  });
}

/** JSON mode should give a bare object; a fenced one is read too, as harmless. */
function parseJson(content: string): { ok: true; value: unknown } | { ok: false } {
  const unfenced = content
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '');
  try {
    return { ok: true, value: JSON.parse(unfenced) as unknown };
  } catch {
    return { ok: false };
  }
}

type Evaluation<K extends ExtractionKind> =
  | {
      ok: true;
      fields: ExtractionFieldsByKind[K];
      confidence: number;
      dropped: string[];
      counts: FieldCounts<K>;
    }
  | {
      ok: false;
      problem: LlmOutputProblem;
      detail: string;
      confidence?: number;
      /** A `missing_fields` answer's grounded fields, kept when the kind can do without them. */
      partial?: { fields: ExtractionFieldsByKind[K]; dropped: string[]; counts: FieldCounts<K> };
    };

/** Reads, checks, grounds and caps one answer; `low_confidence` is left to the caller. */
function evaluate<K extends ExtractionKind>(
  kind: K,
  content: string,
  sourceText: string,
  caps: ExtractionCaps,
): Evaluation<K> {
  const json = parseJson(content);
  if (!json.ok) return { ok: false, problem: 'invalid_json', detail: 'the answer is not JSON' };
  const parsed = extractionSchemas[kind].safeParse(json.value);
  if (!parsed.success) {
    const detail = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    return { ok: false, problem: 'invalid_schema', detail };
  }
  const { confidence, ...answer } = parsed.data;
  const grounded = groundFields(kind, answer as ExtractionFieldsByKind[K], sourceText);
  const fields = capFields(kind, grounded.fields, caps);
  const missing = missingFields(kind, fields);
  if (missing.length > 0) {
    return {
      ok: false,
      problem: 'missing_fields',
      detail: `missing once grounded: ${missing.join(', ')}`,
      confidence,
      partial: { fields, dropped: grounded.dropped, counts: grounded.counts },
    };
  }
  return { ok: true, fields, confidence, dropped: grounded.dropped, counts: grounded.counts };
}

function addUsage(total: LlmUsage, usage: LlmUsage): LlmUsage {
  return {
    promptTokens: total.promptTokens + usage.promptTokens,
    completionTokens: total.completionTokens + usage.completionTokens,
    totalTokens: total.totalTokens + usage.totalTokens,
  };
}

/** Most tokens one answer may be given once a `length` finish asked for more. */
const MAX_ANSWER_TOKENS = 32_768;

/** Provider errors on the primary that the fallback model may not share (outages are per model). */
const FALLBACK_ERRORS = new Set(['LLM_MODEL_UNAVAILABLE', 'LLM_UNAVAILABLE', 'LLM_UNPROCESSABLE']);

/**
 * Upper-end token estimate of a text: a quarter token per ASCII character and a whole one per
 * other character (CJK text is about one token per character; ceil(chars / 4) would under-count
 * it fourfold and the provider would refuse the call as too large).
 */
export function estimateTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (const char of text) {
    if (char.charCodeAt(0) < 128) ascii += 1;
    else other += 1;
  }
  return Math.ceil(ascii / 4) + other;
}

/**
 * Seed 002's two-tier extraction: the primary model first; the fallback model when the primary's
 * answer is not JSON (`invalid_json`), does not fit the schema (`invalid_schema`), lacks a
 * required field once grounded (`missing_fields`), is less confident than the threshold
 * (`low_confidence`) or stays cut short (`truncated`) — and when the primary cannot answer at
 * all: an unknown or retired model (`model_unavailable`), a 5xx or a 422 (`provider_error`).
 * The fallback's answer is accepted at any confidence when it is valid and has the required
 * fields; otherwise `LlmOutputError`. Other provider errors (429, 401, timeouts, the fallback's
 * own errors) reject at once, for the caller to wait or retry.
 *
 * An answer cut at its token cap (`finish_reason: "length"`) is not read as bad JSON: the same
 * model is asked once more with twice the room. Groq's `json_validate_failed` carries what the
 * model wrote (`failed_generation`); that is read before a fallback call is spent on it.
 *
 * `settings.maxCalls` (seed 002's `EXTRACTION_MAX_ATTEMPTS`, primary + fallback = 2) caps the
 * answers paid for: an answer cut short is asked again only when the cap leaves room for it and for
 * the fallback, and with the cap at 1 the primary's answer is kept as it is. `progress` carries an
 * earlier attempt's answers, so a retried job goes on with the fallback instead of starting over.
 *
 * The caller checks `isExtractableText` first; this extracts from whatever it is given.
 */
export async function extractFields<K extends ExtractionKind>(
  client: LlmClient,
  request: ExtractionRequest<K>,
): Promise<ExtractionResult<K>> {
  const { kind, settings, signal, hooks } = request;
  const text = truncateText(request.text, settings.maxInputChars);
  const messages = buildExtractionMessages(kind, text);
  const promptTokens = estimateTokens(messages.map((message) => message.content).join(''));

  let usage: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  let calls = 0;
  const unavailableModels: string[] = [];

  const formatFor = (model: string): LlmResponseFormat => {
    const wanted = settings.responseFormat ?? 'auto';
    const strict =
      wanted === 'json_schema' || (wanted === 'auto' && client.profile(model).strictJsonSchema);
    return strict
      ? { type: 'json_schema', name: `${kind}_fields`, schema: answerJsonSchema(kind) }
      : { type: 'json_object' };
  };

  type Answer = Evaluation<K> | { ok: false; problem: 'unavailable'; error: LlmProviderError };

  const call = async (model: string, maxTokens: number): Promise<LlmCompletion | Answer> => {
    if (signal?.aborted) throw abortedCallError(signal, model);
    await hooks?.beforeCall?.({ model, estimatedTokens: promptTokens + maxTokens });
    const reasoning = client.profile(model).reasoning;
    try {
      const completion = await client.complete({
        model,
        messages,
        maxTokens,
        responseFormat: formatFor(model),
        ...(reasoning ? { reasoningEffort: settings.reasoningEffort ?? 'low' } : {}),
        signal,
      });
      usage = addUsage(usage, completion.usage);
      calls += 1;
      await hooks?.afterCall?.({
        model,
        answered: true,
        usage: completion.usage,
        rateLimit: completion.rateLimit,
      });
      return completion;
    } catch (error) {
      const rateLimit = error instanceof LlmProviderError ? error.rateLimit : undefined;
      const answered =
        error instanceof LlmProviderError && error.providerCode === 'json_validate_failed';
      if (answered) calls += 1;
      await hooks?.afterCall?.({ model, answered, rateLimit, error });
      if (!(error instanceof LlmProviderError)) throw error;
      if (error.code === 'LLM_MODEL_UNAVAILABLE') unavailableModels.push(model);
      if (error.providerCode === 'json_validate_failed') {
        // What the model wrote is often one repairable step from valid (a fence, a trailing
        // remark): read it before paying for another call.
        if (error.failedGeneration !== undefined)
          return evaluate(kind, error.failedGeneration, text, settings.caps);
        return { ok: false, problem: 'invalid_json', detail: 'the provider found no valid JSON' };
      }
      if (model === settings.primaryModel && FALLBACK_ERRORS.has(error.code))
        return { ok: false, problem: 'unavailable', error };
      throw error;
    }
  };

  const spent = request.progress?.answeredCalls ?? 0;
  /** Answers this extraction may still pay for. */
  const callsLeft = () => (settings.maxCalls ?? Infinity) - spent - calls;

  /** Asks `model`, keeping `reserve` answers for a later model; `roomy` starts with twice the room. */
  const ask = async (model: string, reserve: number, roomy = false): Promise<Answer> => {
    const reasoning = client.profile(model).reasoning;
    const base = settings.maxTokens + (reasoning ? (settings.reasoningTokens ?? 1024) : 0);
    const more = Math.min(MAX_ANSWER_TOKENS, base * 2);
    let answer = await call(model, roomy ? more : base);
    if ('finishReason' in answer && answer.finishReason === 'length') {
      // Asked again with more room only when the cap leaves an answer for it and the reserve.
      if (!roomy && more > base && callsLeft() > reserve) answer = await call(model, more);
    }
    if (!('finishReason' in answer)) return answer;
    if (answer.finishReason === 'length') {
      return {
        ok: false,
        problem: 'truncated',
        detail: `the answer ran past ${answer.usage.completionTokens} tokens`,
      };
    }
    return evaluate(kind, answer.content, text, settings.caps);
  };

  const result = (
    evaluation: Extract<Evaluation<K>, { ok: true }>,
    model: string,
    fallbackReason?: FallbackReason,
  ): ExtractionResult<K> => ({
    kind,
    fields: evaluation.fields,
    confidence: evaluation.confidence,
    model,
    fallbackUsed: fallbackReason !== undefined,
    ...(fallbackReason === undefined ? {} : { fallbackReason }),
    usage,
    calls,
    dropped: evaluation.dropped,
    counts: evaluation.counts,
    unavailableModels,
  });

  /** A `missing_fields` answer that still has the kind's minimum, as an accepted one. */
  const usablePartial = (answer: Answer): Extract<Evaluation<K>, { ok: true }> | undefined => {
    if (answer.ok || answer.problem === 'unavailable' || !answer.partial) return undefined;
    if (missingFields(kind, answer.partial.fields, MINIMUM_FIELDS[kind]).length > 0)
      return undefined;
    return { ok: true, ...answer.partial, confidence: answer.confidence ?? 0 };
  };

  if (callsLeft() <= 0)
    throw new RangeError(`no model answers left: ${spent} spent of ${settings.maxCalls}`);
  let primary: Answer | undefined;
  let primaryProblem: LlmOutputAttempt | undefined;
  let fallbackReason: FallbackReason;
  if (spent > 0) {
    // An earlier attempt had the primary's answer: this one goes on with the fallback.
    fallbackReason = request.progress?.fallbackReason ?? 'provider_error';
  } else {
    primary = await ask(settings.primaryModel, callsLeft() > 1 ? 1 : 0);
    if (primary.ok && primary.confidence >= settings.confidenceThreshold)
      return result(primary, settings.primaryModel);
    if (primary.ok) {
      fallbackReason = 'low_confidence';
      primaryProblem = {
        model: settings.primaryModel,
        problem: 'low_confidence',
        detail: `confidence ${primary.confidence} < ${settings.confidenceThreshold}`,
      };
    } else if (primary.problem === 'unavailable') {
      fallbackReason =
        primary.error.code === 'LLM_MODEL_UNAVAILABLE' ? 'model_unavailable' : 'provider_error';
    } else {
      fallbackReason = primary.problem;
      primaryProblem = {
        model: settings.primaryModel,
        problem: primary.problem,
        detail: primary.detail,
      };
    }
    if (callsLeft() <= 0) {
      // The cap leaves the fallback no answer: the primary's is all there is.
      if (primary.ok) return result(primary, settings.primaryModel);
      const kept = usablePartial(primary);
      if (kept) return result(kept, settings.primaryModel);
      throw new LlmOutputError(primaryProblem ? [primaryProblem] : []);
    }
  }

  await hooks?.beforeFallback?.(fallbackReason);
  const fallback = await ask(settings.fallbackModel, 0, fallbackReason === 'truncated');
  if (fallback.ok) return result(fallback, settings.fallbackModel, fallbackReason);
  if (fallback.problem === 'unavailable') throw fallback.error;
  // Neither answer had every required field: the fallback's, then the primary's, is still used
  // when it has the kind's minimum (a posting's title), with what the text does not hold empty.
  const fromFallback = usablePartial(fallback);
  if (fromFallback) return result(fromFallback, settings.fallbackModel, fallbackReason);
  const fromPrimary = primary && usablePartial(primary);
  if (fromPrimary) return result(fromPrimary, settings.primaryModel, fallbackReason);
  throw new LlmOutputError([
    ...(primaryProblem ? [primaryProblem] : []),
    { model: settings.fallbackModel, problem: fallback.problem, detail: fallback.detail },
  ]);
}
