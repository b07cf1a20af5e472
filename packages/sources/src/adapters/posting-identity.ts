/**
 * The identity of a career-site posting is its URL, less what does not tell postings apart.
 *
 * A posting's key is `host + path + ?query`: the host lowercased (WHATWG URL does it, and drops a
 * default port), the path as written with trailing slashes removed, and the query parameters that
 * identify the posting, sorted by name, without tracking parameters. The fragment never counts.
 * `/careers/job?id=1` and `/careers/job?id=2` are two postings; `/jobs/7?utm_source=x` and
 * `/jobs/7` are one.
 *
 * Keys are stored (`postings.external_id`) and must not move: a URL without a query (or with only
 * tracking parameters) keys exactly as it always has, `host + path` with no `?`. That is why the
 * path is not normalised further (no `//` collapsing, no percent-decoding, as `normalize-url`
 * would do): a key stored before must be found again.
 */

/**
 * Query parameters that say where a visitor came from, never which posting it is. Names compare
 * case-insensitively; a name ending in `*` is a prefix. Sources: the ad and mail platforms' own
 * click ids (Google, Microsoft, Meta, TikTok, LinkedIn, Mailchimp, HubSpot, Marketo) and the
 * applicant-source parameters of ATS job boards (Greenhouse `gh_src`, Lever `lever-source`,
 * SmartRecruiters, LinkedIn) and the generic `source` / `ref`.
 */
export const trackingParameters: readonly string[] = [
  // Campaign tags (Google Analytics and everyone since)
  'utm_*',
  'mtm_*',
  'pk_campaign',
  'pk_kwd',
  'pk_source',
  'pk_medium',
  // Ad click ids
  'gclid',
  'gclsrc',
  'dclid',
  'gbraid',
  'wbraid',
  '_ga',
  '_gl',
  'fbclid',
  'msclkid',
  'ttclid',
  'twclid',
  'li_fat_id',
  'yclid',
  'igshid',
  's_kwcid',
  // Mail platforms
  'mc_cid',
  'mc_eid',
  '_hsenc',
  '_hsmi',
  'hsctatracking',
  'mkt_tok',
  // Applicant source on job boards
  'gh_src',
  'lever-source',
  'lever-source[]',
  'lever-origin',
  'lever-via',
  'source',
  'ref',
  'referrer',
  'trk',
  'trackingid',
  'sr_source',
];

const exactNames = new Set(
  trackingParameters.filter((name) => !name.endsWith('*')).map((name) => name.toLowerCase()),
);
const prefixes = trackingParameters
  .filter((name) => name.endsWith('*'))
  .map((name) => name.slice(0, -1).toLowerCase());

export function isTrackingParameter(name: string): boolean {
  const lower = name.toLowerCase();
  return exactNames.has(lower) || prefixes.some((prefix) => lower.startsWith(prefix));
}

/**
 * The URL to fetch for a posting: as found, less its fragment and tracking parameters (the others
 * keep their order: the site may care). Returns a new URL.
 */
export function postingUrl(url: URL): URL {
  const clean = new URL(url.href);
  clean.hash = '';
  const kept = [...clean.searchParams].filter(([name]) => !isTrackingParameter(name));
  if (kept.length === [...clean.searchParams].length) return clean;
  clean.search = new URLSearchParams(kept).toString();
  return clean;
}

/** The natural key of a career-site posting (see the module comment). */
export function postingKey(url: URL): string {
  const pathname = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;
  const params = new URLSearchParams(
    [...url.searchParams].filter(([name]) => !isTrackingParameter(name)),
  );
  // Stable: repeated names keep their order (`?tag=b&tag=a` is not `?tag=a&tag=b`).
  params.sort();
  const query = params.toString();
  return `${url.host.toLowerCase()}${pathname}${query === '' ? '' : `?${query}`}`;
}
