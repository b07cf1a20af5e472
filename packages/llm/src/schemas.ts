import { z } from 'zod';

/*
 * The model's answer is untrusted input. These schemas are lenient where it cannot change a
 * value's meaning (strings trimmed, an empty string read as null, a lone string read as a list
 * of one, non-strings dropped from lists, a missing optional key read as null) and strict
 * where it can: a confidence outside 0..1 or a negative salary fails rather than being clamped.
 * Whether a value is true to the text is not theirs to say: grounding (`groundFields`) does that.
 */

/** A trimmed string, or null for null, a missing key or an empty string. */
const optionalText = z
  .string()
  .nullish()
  .transform((value) => {
    const trimmed = value?.trim();
    return trimmed ? trimmed : null;
  });

/** The strings of a list, trimmed, without empties and non-strings; a lone string is a list of one. */
const textList = z.union([z.array(z.unknown()), z.string()]).transform((value) =>
  (Array.isArray(value) ? value : [value])
    .filter((item): item is string => typeof item === 'string')
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

/** A list for a field that must have one: null or missing is an empty list (then missing). */
const requiredTextList = textList.nullish().transform((value) => value ?? []);

/** A list for a field that may be absent: null or missing stays null. */
const optionalTextList = textList.nullish().transform((value) => value ?? null);

/** A non-negative amount, also as a string of digits with thousands separators (`"120,000"`). */
const amount = z
  .union([
    z.number(),
    z
      .string()
      .trim()
      .regex(/^\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^\d+(?:\.\d+)?$/)
      .transform((text) => Number(text.replaceAll(',', ''))),
  ])
  .pipe(z.number().finite().nonnegative())
  .nullish()
  .transform((value) => value ?? null);

/** 0..1, also as a numeric string; out of range fails. */
const confidence = z
  .union([
    z.number(),
    z
      .string()
      .trim()
      .regex(/^\d*\.?\d+$/)
      .transform(Number),
  ])
  .pipe(z.number().min(0).max(1));

/**
 * Total years: a number, or a string (a range like `"5-7"`, `"10+"`); grounding keeps only
 * forms whose numbers appear in the text.
 */
const years = z
  .union([z.number().finite().nonnegative(), optionalText])
  .nullish()
  .transform((value) => value ?? null);

/** A resume's extracted fields (seed 002), as stored. */
export interface ResumeFields {
  primary_skills: string[];
  recent_job_titles: string[];
  /** An integer, or a range like `"5-7"` / `"10+"`. */
  years_experience_total: number | string | null;
  certifications: string[] | null;
  industries: string[] | null;
}

/** A job posting's extracted fields, as stored. */
export interface PostingFields {
  title: string | null;
  company: string | null;
  location: string | null;
  /** Sentences of the page, verbatim. */
  description: string | null;
  employment_type: string | null;
  salary_min: number | null;
  salary_max: number | null;
  /** ISO 4217. */
  salary_currency: string | null;
  date_posted: string | null;
}

/** The model's own confidence in its answer, 0..1. */
interface Confidence {
  confidence: number;
}

/** Seed 002's resume fields plus the model's confidence. */
export const resumeFieldsSchema = z.object({
  primary_skills: requiredTextList,
  recent_job_titles: requiredTextList,
  years_experience_total: years,
  certifications: optionalTextList,
  industries: optionalTextList,
  confidence,
}) satisfies z.ZodType<ResumeFields & Confidence>;

/** A job posting's fields plus the model's confidence. */
export const postingFieldsSchema = z.object({
  title: optionalText,
  company: optionalText,
  location: optionalText,
  description: optionalText,
  employment_type: optionalText,
  salary_min: amount,
  salary_max: amount,
  salary_currency: optionalText,
  date_posted: optionalText,
  confidence,
}) satisfies z.ZodType<PostingFields & Confidence>;

/** What can be extracted. */
export const EXTRACTION_KINDS = ['resume', 'posting'] as const;

/** `resume` (a person's document) or `posting` (a job posting's page). */
export type ExtractionKind = (typeof EXTRACTION_KINDS)[number];

/** The fields of each kind. */
export interface ExtractionFieldsByKind {
  resume: ResumeFields;
  posting: PostingFields;
}

/** Each kind's schema of the model's answer. */
export const extractionSchemas = {
  resume: resumeFieldsSchema,
  posting: postingFieldsSchema,
} as const;

/** Keys that must hold a value once grounded, or the answer is not usable. */
export const REQUIRED_FIELDS = {
  resume: ['primary_skills', 'recent_job_titles'],
  posting: ['title', 'company', 'location', 'description'],
} as const satisfies { [K in ExtractionKind]: readonly (keyof ExtractionFieldsByKind[K])[] };

/*
 * The answer's shape as JSON Schema, for strict structured outputs (`response_format:
 * json_schema`, `strict: true`): every key required and no other (Groq and OpenAI refuse a
 * strict schema otherwise), nullable where the prompt allows null. Constrained decoding makes the
 * model write this shape; the lenient schemas above still read whatever comes back.
 */
const text = z.string();
const nullableText = z.string().nullable();
const texts = z.array(z.string());
const nullableNumber = z.number().nullable();
const answerShapes = {
  resume: z.strictObject({
    primary_skills: texts,
    recent_job_titles: texts,
    years_experience_total: z.union([z.number(), text, z.null()]),
    certifications: texts.nullable(),
    industries: texts.nullable(),
    confidence: z.number(),
  }),
  posting: z.strictObject({
    title: nullableText,
    company: nullableText,
    location: nullableText,
    description: nullableText,
    employment_type: nullableText,
    salary_min: nullableNumber,
    salary_max: nullableNumber,
    salary_currency: nullableText,
    date_posted: nullableText,
    confidence: z.number(),
  }),
} satisfies {
  [K in ExtractionKind]: z.ZodType<
    { [P in keyof ExtractionFieldsByKind[K]]: unknown } & Confidence
  >;
};

/** Each kind's answer as a JSON Schema object (draft 7, without `$schema`), for `json_schema`. */
export function answerJsonSchema(kind: ExtractionKind): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(answerShapes[kind], {
    target: 'draft-7',
  }) as Record<string, unknown>;
  return schema;
}
