import { outcomeOfError, outcomeOfResult, type Fetcher } from '@gleaner/http';
import type { Counters } from '@gleaner/queue';

/**
 * The fetcher a job uses for one site's pages, counting each request for `GET /metrics`
 * (`gleaner_site_requests_total`, `gleaner_site_rate_limited_total`): the listing's requests in
 * the scrape job, the posting's in its crawl job; and under its run, for the run's `http_errors`
 * alert (decision 0021). What counts is what the gate counts: an answer
 * of the site's server, or a timeout or a refused connection; requests we refused or never sent
 * are not counted. One pipelined HINCRBY per request, not awaited.
 */
export function countSiteRequests(
  fetcher: Fetcher,
  counters: Counters,
  { siteId, runId }: { siteId: string; runId: string },
): Fetcher {
  return {
    async fetch(request) {
      try {
        const result = await fetcher.fetch(request);
        counters.siteRequest(siteId, outcomeOfResult(result), runId);
        return result;
      } catch (error) {
        counters.siteRequest(siteId, outcomeOfError(error), runId);
        throw error;
      }
    },
    close: () => fetcher.close(),
  };
}
