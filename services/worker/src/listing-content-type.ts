/** Content type of a stored body that is an ATS listing's JSON payload rather than a fetched page. */
export const LISTING_CONTENT_TYPE = 'application/vnd.gleaner.listing+json';
