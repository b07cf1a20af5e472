/**
 * The one list of headings that open a posting's requirements section, shared by the description
 * reader (`requirements.ts`) and the ATS adapters that get titled sections from their vendor
 * (Lever's `lists`). A heading matches when it starts with one of these phrases as whole words
 * ("Requirements", "Minimum qualifications", "What we're looking for:", "Ihr Profil").
 *
 * Decided against, and listed in `NOT_REQUIREMENT_HEADINGS` so that no phrase above takes them:
 * responsibilities ("What you'll do"), benefits ("What we offer", and "What you'll have", which
 * pages use for perks more often than for skills), and "Nice to have" / "Bonus points": optional
 * extras are not requirements. "Preferred qualifications" does count: pages list it beside
 * "Minimum qualifications" as part of the same bar.
 */

/** Ends a heading phrase: `\b` does not work after "é" ("Profil recherché"). */
const END = '(?![\\p{L}\\p{N}])';

/** Phrases (regular-expression sources over the lower-cased heading) that open requirements. */
export const REQUIREMENT_HEADINGS: readonly string[] = [
  // "Requirements", "Minimum qualifications", "Skills & experience", "Job requirements".
  '(?:(?:minimum|basic|preferred|required|key|essential|desired|core|technical|job|candidate|role|your)\\s+)?(?:requirements|qualifications|skills(?:\\s+(?:and|&)\\s+(?:experience|qualifications|abilities))?|experience(?:\\s+(?:and|&)\\s+(?:skills|qualifications))?)',
  'knowledge,?\\s+skills,?\\s+(?:and|&)\\s+abilities',
  "what\\s+(?:you(?:'ll|\\s+will)?\\s+(?:need|bring)|you\\s+have|we(?:'re|\\s+are)\\s+looking\\s+for|we\\s+look\\s+for|we\\s+expect|we\\s+require|we\\s+need|you\\s+should\\s+have|you\\s+need\\s+to\\s+succeed|it\\s+takes)",
  "who\\s+(?:you\\s+are|we(?:'re|\\s+are)\\s+looking\\s+for)",
  "must[\\s-]haves?|about\\s+you|your\\s+profile|you\\s+have|you\\s+are|you\\s+bring|your\\s+skills|your\\s+experience|your\\s+background|(?:the\\s+)?ideal\\s+candidate|is\\s+this\\s+you|you\\s+might\\s+be\\s+a\\s+(?:good\\s+)?fit|you(?:'ll|\\s+will)\\s+thrive|skills\\s+you(?:'ll|\\s+will)?\\s+need",
  // German.
  'anforderungen|voraussetzungen|qualifikationen|profil|ihr\\s+profil|dein\\s+profil|was\\s+(?:du|sie)\\s+mitbring(?:st|en)|das\\s+bring(?:st\\s+du|en\\s+sie)\\s+mit',
  // French.
  'profil\\s+recherché|votre\\s+profil|ton\\s+profil|compétences\\s+requises|ce\\s+que\\s+nous\\s+recherchons|qui\\s+(?:êtes-vous|es-tu)',
  // Dutch, Spanish, Italian, Portuguese.
  'wat\\s+(?:vragen\\s+wij|wij\\s+vragen|breng\\s+je\\s+mee|neem\\s+je\\s+mee)|jouw\\s+profiel|functie-?eisen|requisitos|perfil|lo\\s+que\\s+buscamos|requisiti|competenze',
];

/** Headings that are something else, though a phrase above may start them. */
export const NOT_REQUIREMENT_HEADINGS: readonly string[] = [
  "what\\s+you(?:'ll|\\s+will)\\s+(?:do|get|have|gain|learn|work\\s+on)",
  'nice[\\s-]to[\\s-]haves?|bonus(?:\\s+points)?|benefits|perks|what\\s+we\\s+offer|responsibilities',
];

const REQUIREMENT = new RegExp(`^(?:${REQUIREMENT_HEADINGS.join('|')})${END}`, 'u');
const NOT_REQUIREMENT = new RegExp(`^(?:${NOT_REQUIREMENT_HEADINGS.join('|')})${END}`, 'u');

/** A heading's text lower-cased, curly apostrophes straightened, bullets and colons trimmed. */
function headingKey(text: string): string {
  return text
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/^[^\p{L}]+/u, '')
    .replace(/[\s:.?!]+$/, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The heading's words, for callers that bound how long a heading may be. */
export function headingWordCount(text: string): number {
  return headingKey(text).split(' ').length;
}

/** True when a section with this heading lists the posting's requirements. */
export function isRequirementHeading(text: string): boolean {
  const key = headingKey(text);
  return !NOT_REQUIREMENT.test(key) && REQUIREMENT.test(key);
}
