/**
 * Stored with every extracted record so that a change in extraction rules can be told apart
 * from a change on the page, and old records re-extracted. Bump it (date plus counter) whenever
 * the output for some page would change.
 *
 * 2026-11-22.2: sanitised description plus descriptionText; normalised employment types, salary
 * periods, text salaries and locations, dates; requirements from description sections; RDFa,
 * page-markup postings and title/company fallbacks; listing pages rejected.
 * 2026-11-26.1: page-markup postings of many more shapes (labelled pairs in tables, definition
 * lists and bold labels; titles in elements named for them; several h1s; "About the job" pages);
 * SVG `<title>`s never read as page titles; "Portland, OR" and "Bordeaux (33)" as locations.
 * 2026-11-26.2: posting-level salaryCurrency; currencies beyond $ (S$, HK$, ₹, ISO codes checked
 * against ISO 4217), a bare $ by the job's country; one shared list of requirement headings.
 * 2026-12-05.1: pages read with their site's learned template (decision 0028); a question
 * ("Don't see your role here?") never a title; place, employer and job-title labels in more
 * languages; an "Employer / Role" line read part by part.
 */
export const EXTRACTOR_VERSION = '2026-12-05.1';
