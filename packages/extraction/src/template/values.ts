/** What a slot's text looks like: a place, a date. */
import { isRemoteText, parseLocationText } from '../location.js';

const PLACE_WORDS =
  /\b(?:remote|hybrid|on-?site|united states|united kingdom|usa|uk|germany|france|canada|australia|india|netherlands|spain|ireland|deutschland|schweiz|österreich)\b/i;
const US_STATE_TAIL = /,\s*[A-Z]{2}(?:\s+\d{5})?$/;

/**
 * Whether a text reads as a place: "Boston, MA", "London, UK", "Remote - EMEA", "Berlin, Germany".
 * A bare word ("Boston") reads as anything, and counts only through a label or the reader.
 */
export function looksLikePlace(text: string): boolean {
  if (text.length < 2 || text.length > 80 || text.split(/\s+/).length > 8) return false;
  if (/[.!?]$/.test(text) || /\d{3,}/.test(text.replace(/\b\d{5}\b/, ''))) return false;
  if (isRemoteText(text) || PLACE_WORDS.test(text) || US_STATE_TAIL.test(text)) return true;
  const parsed = parseLocationText(text);
  return parsed.country !== null || (parsed.city !== null && parsed.region !== null);
}

/** "Posted on 2 March 2011" → "2 March 2011". */
export function stripDatePrefix(text: string): string {
  return text
    .replace(
      /^(?:(?:date\s+)?posted|published|listed|veröffentlicht|publié|added)\s*(?:on|am|le)?\s*[:\-–]?\s*/i,
      '',
    )
    .trim();
}

/**
 * A short value without the aside a page wrote after it: "NanoFrontier Inc. (Headquarters: Room
 * 215, …)", "Sendai or Tokyo (negotiable) / international travel required". A short bracket
 * ("(negotiable)", "(Remote)") is part of the value.
 */
export function withoutAside(text: string): string {
  const value = text
    .replace(/\s*\([^()]{25,}\)\s*$/, '')
    .replace(/\s+\/\s+(?=\p{Ll})[^/]*$/u, '')
    .trim();
  return value === '' ? text : value;
}

/** A line of several values: "Kaunas - UAB Daltra", "Berlin · Full-time". */
const PART_SEPARATOR = /\s+[-–—|·•/]\s+/;

/** The parts of a short line of several values, or none. */
export function splitParts(text: string): string[] {
  if (text.length > 300 || !PART_SEPARATOR.test(text)) return [];
  const parts = text.split(PART_SEPARATOR).map((part) => part.trim());
  // "Early Learning — Comprehensive early learning and childcare services …": a name, then prose.
  return parts.length <= 4 && parts.every((part) => part !== '') && (parts[0] ?? '').length <= 80
    ? parts
    : [];
}

/**
 * Nouns that name a role, in the languages of the boards Gleaner reads: a text holding one reads
 * as a job's title ("PyData maintainer", "Analista de finanzas"), seldom as an employer's name.
 */
const ROLE_WORDS = `engineer developer programmer manager director designer analyst architect
  consultant specialist scientist researcher writer editor lead head officer administrator
  assistant associate coordinator ordinator representative executive intern internship trainee
  apprentice technician operator nurse driver teacher accountant clerk agent advis[oe]r
  supervisor maintainer expert recruiter strategist producer postdoc postdoctoral phd fellow
  professor lecturer chef cook cashier mechanic electrician welder owner partner staff sdet sre
  cto ceo cfo coo vp tester artist animator leader author statistician paralegal journalist
  coach host educator cleaner copywriter marketer creator buyer president resident constable
  candidate secretary
  entwickler ingenieur leiter berater mitarbeiter referent sachbearbeiter
  développeur ingénieur responsable chargée? directeur stagiaire mécanicien opérateur
  installateur adjoint commis technicien conseiller préposé soudeur électricien ouvrier vendeur
  caissier livreur chauffeur
  desarrollador ingeniero analista jefe gerente asistente técnico operario vendedor
  administrativo encargado ejecutivo mercaderista
  medewerker ontwikkelaar adviseur
  vývojár manažér programátor špecialista účtovník vadybinink inžinier vadov`;

const ROLE_WORD = new RegExp(
  `(?:^|[^\\p{L}])(?:${ROLE_WORDS.split(/\s+/).join('|')})(?:e?s|a|as|ai|ka|ė|ės|in|innen)?(?![\\p{L}])`,
  'iu',
);

export function looksLikeRole(text: string): boolean {
  return text.length <= 120 && ROLE_WORD.test(text);
}

/** Words that say a heading announces a job: "Recruitment 2026", "Vacancy", "(part-time)". */
const POSTING_WORD =
  /(?:^|[^\p{L}])(?:recruitment|vacanc(?:y|ies)|hiring|jobs?|positions?|openings?|internships?|part[- ]time|full[- ]time|stelle|vacatures?|ofertas?|empleos?|postes?|darbas|pozícia)(?![\p{L}])/iu;

/** Whether a heading reads as a job's: it names a role or says it is a job. */
export function looksLikePostingTitle(text: string): boolean {
  return looksLikeRole(text) || (text.length <= 200 && POSTING_WORD.test(text));
}
