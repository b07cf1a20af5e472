import { ClassifiedError, type RetryClass } from '@gleaner/errors';
import type { ExtractedPosting } from '@gleaner/extraction';
import type { Fetcher } from '@gleaner/http';
import type { z } from 'zod';
import type { DiscoveryRefusals } from './adapters/discovered-url.js';

export interface ListedPosting {
  /** Stable id within the site: the natural key with the site id. */
  externalId: string;
  url: string;
  /**
   * The vendor's JSON for this posting as received (after any per-posting detail call), when the
   * listing already carries the whole posting (ATS APIs). Untrusted: `mapPosting` validates it.
   */
  payload?: unknown;
}

/**
 * Provenance of a field mapped from an ATS payload: 'ats' for the vendor's own field,
 * 'description' for one read from the posting's description (salary, requirements). 'ats' is
 * kept here rather than added to @gleaner/extraction's `FieldSource`, which does not list it (yet).
 */
export type AtsFieldSource = 'ats' | 'description';

/** A posting mapped from an ATS payload, with one provenance entry per non-null field. */
export interface AtsMappedPosting {
  posting: ExtractedPosting;
  provenance: Partial<Record<keyof ExtractedPosting, AtsFieldSource>>;
}

export interface ListingResult {
  postings: ListedPosting[];
  /** True when the whole site was listed (no limit or budget cut it short). */
  complete: boolean;
  /**
   * URLs found in the site's pages that were not taken, by reason (adapters that discover URLs
   * in pages the site controls: sitemaps, listing pages).
   */
  refused?: DiscoveryRefusals;
  /** How the postings were found, for adapters that discover them (career sites). */
  discovery?: ListingDiscovery;
  /**
   * The listing pages read, for a career site whose pages carry the posts themselves
   * (`postsOnListing`, decision 0026): `postings` is then empty and the LLM reads these.
   */
  pages?: ListedPage[];
}

/** A listing page whose posts the LLM reads: its visible text and its posting links. */
export interface ListedPage {
  url: string;
  /** The page's visible text. */
  text: string;
  /** Its links that pass discovery's checks and the posting pattern, absolute, once each. */
  links: { url: string; text: string }[];
}

/** How a listing found its postings: sitemaps or pages (career sites). */
export interface ListingDiscovery {
  /**
   * - 'sitemap': the configured `sitemapUrl`;
   * - 'listing-pages': the configured `listingUrl`;
   * - 'robots-sitemaps': sitemaps named by robots.txt;
   * - 'common-sitemaps': robots.txt named none, sitemaps found at the usual locations;
   * - 'url-listing-page': no sitemap found, or none listing a posting; `url` itself read as a
   *   listing page (`sitemaps` then names those that were tried).
   */
  method: 'sitemap' | 'listing-pages' | 'robots-sitemaps' | 'common-sitemaps' | 'url-listing-page';
  /** The sitemaps the walk started from (configured, named by robots.txt, or guessed). */
  sitemaps: string[];
  /** Sitemap files fetched. */
  sitemapsRead: number;
  /** Sitemaps passed over (missing, not a sitemap, too deep), with why; the first 20. */
  skipped: { url: string; reason: string }[];
}

export interface ListOptions {
  /** Stop after this many postings (`results_wanted`). */
  limit?: number | null;
  signal?: AbortSignal;
  /**
   * A run's one-off search (`POST /jobs/scrape` with `search_term`, `location`, `is_remote`), for
   * kinds that search (`SiteAdapter.searches`): each field set here replaces the saved search's.
   * A listing whose search differs from the saved one is never complete (it must not expire the
   * saved search's postings). Other kinds never receive one: the API refuses it for them.
   */
  search?: JobSearch;
}

/** A job search: what a search-driven kind's saved search holds and a run may override. */
export interface JobSearch {
  search_term?: string | null;
  location?: string | null;
  is_remote?: boolean | null;
}

/**
 * Keys of the job-search APIs: deployment secrets read from the worker's environment (never a
 * site's config, which `GET /sites` shows to tenants). A kind that needs one it lacks fails with
 * the permanent `SOURCE_CREDENTIALS_MISSING`.
 */
export interface SourceCredentials {
  /** `ADZUNA_APP_ID` and `ADZUNA_APP_KEY`. */
  adzuna?: { appId?: string | undefined; appKey?: string | undefined };
  /** `USAJOBS_API_KEY` (`Authorization-Key`) and `USAJOBS_USER_AGENT` (the key's e-mail). */
  usajobs?: { apiKey?: string | undefined; userAgent?: string | undefined };
}

export interface SourceContext {
  fetcher: Fetcher;
  /** The deployment's job-search API keys (search-driven kinds only). */
  credentials?: SourceCredentials;
}

/** A kind of site Gleaner can list postings from. */
export interface SiteAdapter<S extends z.ZodType = z.ZodType> {
  kind: string;
  description: string;
  configSchema: S;
  /**
   * The kind lists a job search (a saved `search_term`, `location`, `is_remote` that a run may
   * override), not a board's inventory.
   */
  searches?: boolean;
  list(config: z.output<S>, context: SourceContext, options?: ListOptions): Promise<ListingResult>;
  /**
   * Maps a `ListedPosting.payload` of this adapter to Gleaner's fields (the conventions of
   * @gleaner/extraction's `ExtractedPosting`). Validates the payload; null when it is unusable.
   */
  mapPosting?(payload: unknown): AtsMappedPosting | null;
}

/** Permanent problems with a site's configuration or content (retrying cannot help). */
export class SourceError extends ClassifiedError {
  constructor(message: string, code: string, retryClass: RetryClass = 'permanent') {
    super(message, code, retryClass);
  }
}
