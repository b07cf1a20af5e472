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
const PART_SEPARATOR = /\s+[-–—|·•]\s+/;

/** The parts of a short line of several values, or none. */
export function splitParts(text: string): string[] {
  if (text.length > 300 || !PART_SEPARATOR.test(text)) return [];
  const parts = text.split(PART_SEPARATOR).map((part) => part.trim());
  // "Early Learning — Comprehensive early learning and childcare services …": a name, then prose.
  return parts.length <= 4 && parts.every((part) => part !== '') && (parts[0] ?? '').length <= 80
    ? parts
    : [];
}
