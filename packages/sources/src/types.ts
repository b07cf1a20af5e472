import type { Fetcher } from '@gleaner/http';
import type { z } from 'zod';

export interface ListedPosting {
  /** Stable id within the site: the natural key with the site id. */
  externalId: string;
  url: string;
}

export interface ListingResult {
  postings: ListedPosting[];
  /** True when the whole site was listed (no limit or budget cut it short). */
  complete: boolean;
}

export interface ListOptions {
  /** Stop after this many postings (`results_wanted`). */
  limit?: number | null;
  signal?: AbortSignal;
}

export interface SourceContext {
  fetcher: Fetcher;
}

/** A kind of site Gleaner can list postings from. */
export interface SiteAdapter<S extends z.ZodType = z.ZodType> {
  kind: string;
  description: string;
  configSchema: S;
  list(config: z.output<S>, context: SourceContext, options?: ListOptions): Promise<ListingResult>;
}

/** Permanent problems with a site's configuration or content (retrying cannot help). */
export class SourceError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly retryClass: 'permanent' | 'transient' = 'permanent',
  ) {
    super(message);
    this.name = 'SourceError';
  }
}
