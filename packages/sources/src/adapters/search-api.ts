/**
 * What the search-driven kinds (Adzuna, USAJOBS, Remotive) share: the saved search in their
 * config, a run's search over it, and the error for a deployment without the vendor's key.
 *
 * A search lists what a query matches, not a board's inventory. So a listing is complete only
 * when it ran the site's saved search to its end: a run's one-off search (`POST /jobs/scrape` with
 * `search_term`, `location` or `is_remote`) is never complete, whatever it found, or it would
 * expire every posting of the saved search that the one-off query did not match.
 */
import { z } from 'zod';
import type { JobSearch, ListOptions } from '../types.js';
import { SourceError } from '../types.js';

/** The saved search every search-driven kind's config holds (seed 003's fields). */
export const savedSearchShape = {
  /** Words the job must match (title and description, as the vendor searches them). */
  search_term: z.string().trim().min(1).max(200).optional(),
  /** A place (city, region, "remote"), as the vendor reads it. */
  location: z.string().trim().min(1).max(200).optional(),
  /** Only remote jobs. */
  is_remote: z.boolean().optional(),
};

/** The search a listing runs, with `null` for a field neither the run nor the site sets. */
export interface EffectiveSearch {
  searchTerm: string | null;
  location: string | null;
  isRemote: boolean | null;
}

/**
 * The run's search over the saved one: each field the run sets replaces the site's. `isSaved` is
 * true when the result is the saved search itself (the run set nothing, or only what the site
 * already says): only such a listing may report `complete: true`.
 */
export function resolveSearch(
  saved: JobSearch,
  options: ListOptions,
): { search: EffectiveSearch; isSaved: boolean } {
  const run = options.search ?? {};
  const pick = <K extends keyof JobSearch>(key: K): JobSearch[K] | null => {
    const value = run[key];
    return value === undefined || value === null ? (saved[key] ?? null) : value;
  };
  const clean = (value: string | null | undefined) => {
    const trimmed = value?.trim();
    return trimmed ? trimmed : null;
  };
  const search: EffectiveSearch = {
    searchTerm: clean(pick('search_term')),
    location: clean(pick('location')),
    isRemote: pick('is_remote') ?? null,
  };
  const isSaved =
    search.searchTerm === clean(saved.search_term) &&
    search.location === clean(saved.location) &&
    search.isRemote === (saved.is_remote ?? null);
  return { search, isSaved };
}

export const SOURCE_CREDENTIALS_MISSING = 'SOURCE_CREDENTIALS_MISSING';

/**
 * A vendor key the worker's environment lacks: permanent (no retry brings it), and worded so an
 * operator knows which variable to set.
 */
export class SourceCredentialsMissingError extends SourceError {
  constructor(
    readonly vendor: string,
    readonly variable: string,
  ) {
    super(
      `${vendor} needs ${variable}: set it in the worker's environment (a deployment secret, never site config)`,
      SOURCE_CREDENTIALS_MISSING,
      'permanent',
    );
  }
}

/** A credential, or the permanent SOURCE_CREDENTIALS_MISSING naming its variable. */
export function requireCredential(
  value: string | undefined,
  vendor: string,
  variable: string,
): string {
  if (value === undefined || value.trim() === '')
    throw new SourceCredentialsMissingError(vendor, variable);
  return value;
}
