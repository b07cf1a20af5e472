import { z } from 'zod';

/** A configuration error whose message is one readable line naming every bad variable. */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(readonly issues: readonly { variable: string; message: string }[]) {
    super(`Invalid configuration: ${issues.map((i) => `${i.variable} ${i.message}`).join('; ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses an environment (normally `process.env`) against a composed object schema once per
 * process. Empty strings count as unset, so `FOO=` in an env file falls back to the default.
 */
export function parseConfig<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined>,
): z.infer<S> {
  const cleaned: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && value !== '') cleaned[key] = value;
  }
  const result = schema.safeParse(cleaned);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => ({
      variable: issue.path.map(String).join('.') || '(environment)',
      message:
        issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : issue.message,
    })),
  );
}

/** A fragment's settings as an empty environment gives them: its defaults (tests build on them). */
export function fragmentDefaults<T extends z.ZodRawShape>(fragment: T): z.infer<z.ZodObject<T>> {
  return parseConfig(z.object(fragment), {});
}
