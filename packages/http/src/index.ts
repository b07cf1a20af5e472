export {
  allowListedPeers,
  assertFetchableUrl,
  createFetcher,
  isAllowedPeer,
  parseRetryAfter,
  type AddressPolicyOptions,
  type FetchRequest,
  type FetchResult,
  type Fetcher,
  type FetcherOptions,
  type LookupFunction,
  type PeerAddress,
  type ResolvedAddress,
} from './fetcher.js';
export {
  embeddedIPv4,
  isBadPort,
  isBlockedAddress,
  isBlockedHostname,
  parseIPv6,
} from './address-policy.js';
export {
  contentTypeCharset,
  decodeBody,
  detectCharset,
  type CharsetSource,
  type DetectedCharset,
} from './charset.js';
export * from './errors.js';
export {
  createRobotsCache,
  productToken,
  type RobotsCache,
  type RobotsCacheOptions,
  type RobotsVerdict,
} from './robots.js';
export * from './gate/index.js';
