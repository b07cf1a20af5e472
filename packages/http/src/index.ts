export { createFetcher, parseRetryAfter, type FetchRequest, type FetchResult, type Fetcher, type FetcherOptions } from './fetcher.js';
export { isBlockedAddress } from './address-policy.js';
export * from './errors.js';
