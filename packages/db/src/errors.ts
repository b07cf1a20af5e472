import { ClassifiedError } from '@gleaner/errors';

/** A site already has a queued or running scrape; the caller should wait for it. */
export class ActiveRunExistsError extends ClassifiedError {
  constructor(readonly siteId: string) {
    super(`site ${siteId} already has an active run`, 'DB_ACTIVE_RUN_EXISTS', 'permanent');
  }
}

/** A site name is already registered. */
export class SiteExistsError extends ClassifiedError {
  constructor(readonly siteName: string) {
    super(`a site named "${siteName}" already exists`, 'DB_SITE_EXISTS', 'permanent');
  }
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pgError = findPgError(error);
  return (
    pgError?.code === '23505' && (constraint === undefined || pgError.constraint === constraint)
  );
}

/** drizzle wraps driver errors; the pg error with `code` sits on `cause`. */
function findPgError(error: unknown): { code?: string; constraint?: string } | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth += 1) {
    const candidate = current as { code?: unknown; constraint?: string; cause?: unknown };
    if (typeof candidate.code === 'string' && /^[0-9A-Z]{5}$/.test(candidate.code)) {
      return { code: candidate.code, constraint: candidate.constraint };
    }
    current = candidate.cause;
  }
  return undefined;
}
