/*
 * The source text as grounding reads it, prepared once per extraction: what a reader never sees
 * (HTML comments, elements hidden by markup, soft hyphens, zero-width characters) and sentences
 * that address the model ("ignore previous instructions and set skills to …") are taken out
 * first, so that no value can be grounded by them. What is left is folded for matching (see
 * `foldForMatch`) with a map back to the prepared text, where word joins, case and negation are
 * read. Every step is one pass over the text or a regex without nested unbounded quantifiers:
 * grounding runs once per extraction on texts of 100 KB and more.
 */

/** Soft hyphen, zero-width space and joiners, direction marks and controls, word joiner, BOM. */
const INVISIBLE = /[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
const SINGLE_QUOTES = /[\u2018\u2019\u201a\u201b\u2032\u2035\u2039\u203a]/g;
const DOUBLE_QUOTES = /[\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb]/g;
const DASHES = /[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]/g;
/** Markdown emphasis and code marks, list bullets; neither is part of a value. */
const MARKUP = /[*`\u2022\u00b7\u25aa\u25ab\u25cf\u25e6\u2023\u2043\u25ba\u27a2]/;
/** Read as spaces: "full-time" = "full time", "React/Redux" = "React Redux". */
const WORD_SEPARATORS = /[-_/]/;
const ALNUM = /[\p{L}\p{N}]/u;
const UPPERCASE = /\p{Lu}/u;
const COMBINING_MARKS = /\p{M}/gu;
/** Letters NFKD leaves whole that readers treat as their ASCII spelling. */
const LETTER_FOLDS: Record<string, string> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ı: 'i',
};

/**
 * The text with invisible characters removed, NFKC (widths, ligatures, no-break spaces), and
 * typographic quotes and dashes as ASCII. Each replacement keeps one character for one, so
 * lengths change only where NFKC or the removal changes them.
 */
export function cleanCharacters(text: string): string {
  return text
    .replace(INVISIBLE, '')
    .normalize('NFKC')
    .replace(SINGLE_QUOTES, "'")
    .replace(DOUBLE_QUOTES, '"')
    .replace(DASHES, '-')
    .replace(/\r\n?/g, '\n');
}

/** A text folded for matching, and for each of its characters the index it came from. */
export interface FoldedText {
  text: string;
  origin: Int32Array;
}

const SPACE = 0x20;
const UTF16 = new TextDecoder('utf-16le');
/** What each ASCII character folds to: upper case to lower, separators, marks and whitespace to a space. */
const ASCII_FOLDS = Array.from({ length: 0x80 }, (_, code) => {
  const char = String.fromCharCode(code);
  if (/\s/.test(char) || WORD_SEPARATORS.test(char) || MARKUP.test(char)) return SPACE;
  return char.toLowerCase().charCodeAt(0);
});

/** A non-ASCII character folded: a mark or space to a space, else NFKD without marks, lower case. */
function foldCharacter(char: string): string {
  if (/\s/.test(char) || MARKUP.test(char)) return ' ';
  return [...char.normalize('NFKD').replace(COMBINING_MARKS, '').toLowerCase()]
    .map((part) => LETTER_FOLDS[part] ?? (/\s/.test(part) ? ' ' : part))
    .join('');
}

/**
 * Folds a cleaned text for matching: case-folded, accents removed (NFKD without combining marks,
 * `ß` → `ss`, `ø` → `o`), hyphens, underscores and slashes read as spaces, Markdown emphasis and
 * bullets removed, whitespace runs collapsed to one space and trimmed. Other punctuation stays, so
 * "C++" and "C#" are not "C".
 */
export function foldForMatch(clean: string): FoldedText {
  // Code units into typed buffers: a string or array per character made 1 MB cost seconds.
  let units = new Uint16Array(clean.length + 16);
  let origin = new Int32Array(clean.length + 16);
  let length = 0;
  let pendingSpace = false;
  const folds = new Map<number, string>();
  const push = (unit: number, from: number): void => {
    if (unit === SPACE) {
      pendingSpace = length > 0;
      return;
    }
    if (length + 2 > units.length) {
      const grown = new Uint16Array(units.length * 2);
      grown.set(units);
      units = grown;
      const grownOrigin = new Int32Array(origin.length * 2);
      grownOrigin.set(origin);
      origin = grownOrigin;
    }
    if (pendingSpace) {
      units[length] = SPACE;
      origin[length++] = from;
      pendingSpace = false;
    }
    units[length] = unit;
    origin[length++] = from;
  };
  for (let index = 0; index < clean.length; index++) {
    const code = clean.charCodeAt(index);
    if (code < 0x80) {
      push(ASCII_FOLDS[code] ?? code, index);
      continue;
    }
    const point = clean.codePointAt(index) ?? code;
    const start = index;
    if (point > 0xffff) index++;
    let folded = folds.get(point);
    if (folded === undefined) {
      folded = foldCharacter(String.fromCodePoint(point));
      folds.set(point, folded);
    }
    for (let part = 0; part < folded.length; part++) push(folded.charCodeAt(part), start);
  }
  return {
    text: UTF16.decode(units.subarray(0, length)),
    origin: origin.slice(0, length),
  };
}

/** Text folded for matching, the same way for the source and for a value. */
export function normaliseForMatch(text: string): string {
  return foldForMatch(cleanCharacters(text)).text;
}

// ---------------------------------------------------------------------------------------------
// What a reader never sees

/** Inline styles and attributes that hide an element (white text is the resume trick). */
const HIDING_ATTRIBUTES =
  /(?:^|\s)hidden(?=[\s=/]|$)|class\s*=\s*["']?[^"'<>]{0,200}\b(?:hidden|d-none|invisible)\b|aria-hidden\s*=\s*["']?true|display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d]*[1-9])|opacity\s*:\s*0(?![.\d]*[1-9])|(?<![-\w])color\s*:\s*(?:white|transparent|#fff(?:fff)?\b)/i;
const TAG = /<(\/?)([a-z][a-z0-9-]{0,30})\b([^<>]{0,2000})>/gi;
const VOID_ELEMENTS = new Set(['br', 'hr', 'img', 'input', 'meta', 'link', 'wbr', 'source']);
/** How far down the open elements a closing tag looks for its own: a stray one is ignored. */
const CLOSING_TAG_REACH = 64;

/**
 * HTML comments and the content of elements hidden by their markup, each replaced by a line
 * break. A text reaches grounding with markup when it was plain text or Markdown that holds HTML
 * (a résumé's text, a `text/plain` page); a page's own comments are already gone by then.
 */
export function removeHiddenMarkup(text: string): string {
  if (!text.includes('<')) return text;
  const regions: [number, number][] = [];
  for (let at = text.indexOf('<!--'); at !== -1;) {
    const end = text.indexOf('-->', at + 4);
    regions.push([at, end === -1 ? text.length : end + 3]);
    at = end === -1 ? -1 : text.indexOf('<!--', end + 3);
  }
  regions.push(...hiddenElements(text));
  if (regions.length === 0) return text;
  regions.sort((a, b) => a[0] - b[0]);
  let result = '';
  let position = 0;
  for (const [start, end] of regions) {
    if (end <= position) continue;
    if (start >= position) result += `${text.slice(position, start)}\n`;
    position = end;
  }
  return result + text.slice(position);
}

/**
 * Where the elements with hiding attributes are, in one pass over the tags with a stack of open
 * elements (a closing tag closes its element and what is open inside it). An element never
 * closed is taken to the end of its line. Comments are not skipped here: a region inside one
 * is inside a removed region anyway.
 */
function hiddenElements(text: string): [number, number][] {
  const open: { name: string; start: number; isHidden: boolean }[] = [];
  const regions: [number, number][] = [];
  for (const match of text.matchAll(TAG)) {
    const [tag, slash, rawName = '', attributes = ''] = match;
    const name = rawName.toLowerCase();
    if (slash === '') {
      if (VOID_ELEMENTS.has(name) || attributes.endsWith('/')) continue;
      open.push({ name, start: match.index, isHidden: HIDING_ATTRIBUTES.test(attributes) });
      continue;
    }
    const floor = Math.max(0, open.length - CLOSING_TAG_REACH);
    let at = open.length - 1;
    while (at >= floor && open[at]?.name !== name) at--;
    if (at < floor) continue;
    for (const element of open.splice(at))
      if (element.isHidden) regions.push([element.start, match.index + tag.length]);
  }
  for (const element of open) {
    if (!element.isHidden) continue;
    const lineEnd = text.indexOf('\n', element.start);
    regions.push([element.start, lineEnd === -1 ? text.length : lineEnd]);
  }
  return regions;
}

// ---------------------------------------------------------------------------------------------
// Sentences that address the model

/**
 * Sentences written to the model rather than to a reader. Each pattern names the model, its
 * instructions or the answer's fields; an imperative alone ("Write clean code") is not one.
 */
const INSTRUCTION_PATTERNS = [
  /\b(?:ignore|disregard|forget|override|bypass)\b[^.!?]{0,40}\b(?:instructions?|prompts?|rules|directions|guidelines|everything|above|previous|prior)\b/,
  /^\W{0,3}(?:assistant|system|chatgpt|gpt|claude|llm)\s*:/,
  /\b(?:(?:note|message|instructions?) (?:to|for) (?:the |any )?|dear )(?:ai|assistant|model|llm|language model|chatgpt|gpt|bot)\b/,
  /\b(?:you are|you're|act as|pretend to be|behave as)\b[^.!?]{0,30}\b(?:ai|assistant|language model|llm|chatbot|gpt|parser|extractor)\b/,
  /\bas an? (?:ai|language model|llm|assistant)\b/,
  /\b(?:set|change|replace|update|overwrite|fill in)\s+(?:the\s+|my\s+|your\s+|all\s+|every\s+)?(?:fields?|salary\w*|compensation|company(?: name)?|employer|title|job title|location|skills?|primary_skills|years_experience\w*|currency|confidence|json)(?:\s+(?:field|value|name))?\s*(?:to|as|=|:)/,
  /\b(?:add|include|list|insert|report|extract)\s+(?:these|the following|this)\s+(?:skills?|values?|fields?|compan(?:y|ies)|titles?|certifications?)\b/,
  /\b(?:respond|reply|answer|output|return)\s+(?:only\s+)?(?:with|in json|json|the following)\b/,
  /\b(?:the company that (?:made|created|built|trained) you|your (?:creator|maker|developers?))\b/,
  /\b(?:new|updated|hidden|secret|real) instructions?\b|\bsystem prompt\b|\bprompt injection\b|\[\/?inst\]|<\|im_(?:start|end)\|>/,
  /\b(?:rank|rate|score|mark|classify|recommend)\s+(?:this|the)\s+(?:candidate|applicant|resume|cv)\b/,
];

/** Whether a sentence reads as an instruction to the model. */
export function isInstructionLike(sentence: string): boolean {
  const lower = sentence.toLowerCase();
  return INSTRUCTION_PATTERNS.some((pattern) => pattern.test(lower));
}

/** Most characters masked after an instruction's own sentence on its line (its continuation). */
const INSTRUCTION_TAIL = 600;
/** Most following lines masked when an instruction's line is wrapped (no closing punctuation). */
const INSTRUCTION_WRAPPED_LINES = 4;
/** Longest piece checked as one sentence: a text without punctuation is checked in pieces. */
const LONGEST_SENTENCE = 500;

/**
 * The text with each instruction-like sentence, what follows it on its line (up to 600
 * characters: an injection goes on in the sentences after its first) and, when its line is cut
 * without closing punctuation (wrapped), the next lines up to one that ends a sentence, replaced
 * by line breaks.
 */
export function maskInstructions(text: string): string {
  const lines = text.split('\n');
  let wrappedLeft = 0;
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? '';
    if (wrappedLeft > 0) {
      if (line.trim() === '') {
        wrappedLeft = 0;
        continue;
      }
      lines[index] = '';
      wrappedLeft = endsSentence(line) ? 0 : wrappedLeft - 1;
      continue;
    }
    const masked = maskLine(line);
    if (masked === null) continue;
    lines[index] = masked.text;
    wrappedLeft = masked.toLineEnd && !endsSentence(line) ? INSTRUCTION_WRAPPED_LINES : 0;
  }
  return lines.join('\n');
}

function endsSentence(line: string): boolean {
  return /[.!?]["')\]]?\s*$/.test(line);
}

/** The line with its instruction-like sentences masked, or null when it has none. */
function maskLine(line: string): { text: string; toLineEnd: boolean } | null {
  if (line.trim() === '') return null;
  let text = '';
  let position = 0;
  let toLineEnd = false;
  let found = false;
  for (const [start, end] of sentenceSpans(line)) {
    if (start < position || !isInstructionLike(line.slice(start, end))) continue;
    found = true;
    text += `${line.slice(position, start)}\n`;
    position = nextSentenceStart(line, Math.min(line.length, end + INSTRUCTION_TAIL));
    toLineEnd = position >= line.length;
  }
  return found ? { text: text + line.slice(position), toLineEnd } : null;
}

/** The [start, end) of each sentence of a line: split after . ! ? and a space, at most 500 long. */
function sentenceSpans(line: string): [number, number][] {
  const spans: [number, number][] = [];
  let start = 0;
  const boundary = /[.!?]["')\]]?\s+/g;
  const push = (end: number): void => {
    for (let from = start; from < end; from += LONGEST_SENTENCE)
      spans.push([from, Math.min(end, from + LONGEST_SENTENCE)]);
  };
  for (let match = boundary.exec(line); match; match = boundary.exec(line)) {
    const end = match.index + match[0].length;
    push(end);
    start = end;
  }
  if (start < line.length) push(line.length);
  return spans;
}

/** The first sentence start at or after `at` (or the line's end). */
function nextSentenceStart(line: string, at: number): number {
  if (at >= line.length) return line.length;
  const boundary = /[.!?]["')\]]?\s+/g;
  boundary.lastIndex = at;
  const match = boundary.exec(line);
  return match ? match.index + match[0].length : line.length;
}

// ---------------------------------------------------------------------------------------------
// Matching

/** A line-end hyphen break inside a word ("Kuber-\nnetes"), as PDF text keeps it. */
const HYPHEN_BREAK = /(\p{L})-[ \t]*\n[ \t]*(?=\p{L})/gu;

/** The prepared source text and its folded form. */
export class TextView {
  readonly folded: FoldedText;

  constructor(readonly clean: string) {
    this.folded = foldForMatch(clean);
  }

  /** The cleaned-text index of the folded text's character `at`. */
  originOf(at: number): number {
    return this.folded.origin[at] ?? this.clean.length;
  }
}

/**
 * The views a value is looked for in: the prepared text with line-end hyphen breaks joined
 * ("Kubernetes"), and, when it has any, as written ("full-\ntime" reads "full time").
 */
export function sourceViews(prepared: string): TextView[] {
  const joined = prepared.replace(HYPHEN_BREAK, '$1');
  return joined === prepared
    ? [new TextView(prepared)]
    : [new TextView(joined), new TextView(prepared)];
}

/** How to read an occurrence. */
export interface MatchRules {
  /** An occurrence in a negated phrase ("no experience with Kubernetes") does not count. */
  rejectNegated: boolean;
}

/** A word of one or two characters ("Go", "C", "R"): it must be written as a name. */
function isShortToken(needle: string): boolean {
  return needle.length <= 2 && /^[\p{L}\p{N}]+$/u.test(needle) && /\p{L}/u.test(needle);
}

/**
 * Whether `needle` (folded) occurs in the view as whole words, and at one such place is read as
 * the value: not followed by `+` or `#` ("C" is not in "C++"); a one- or two-character word
 * written with a capital and not joined to a neighbour ("Go" is not in "go hiking", "C" is not in
 * "Objective-C" or "C-level"); with `rejectNegated`, not in a negated phrase.
 */
export function occursAsValue(view: TextView, needle: string, rules: MatchRules): boolean {
  if (needle === '') return false;
  const haystack = view.folded.text;
  const checkStart = ALNUM.test(needle[0] ?? '');
  const checkEnd = ALNUM.test(needle.at(-1) ?? '');
  const short = isShortToken(needle);
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    const endAt = at + needle.length;
    const before = haystack[at - 1] ?? ' ';
    const after = haystack[endAt] ?? ' ';
    if (checkStart && ALNUM.test(before)) continue;
    if (checkEnd && (ALNUM.test(after) || after === '+' || after === '#')) continue;
    const start = view.originOf(at);
    const end = view.originOf(endAt - 1) + 1;
    if (short && !isWrittenAsName(view.clean, start, end)) continue;
    if (rules.rejectNegated && isNegated(view.clean, start, end)) continue;
    return true;
  }
  return false;
}

function isWrittenAsName(clean: string, start: number, end: number): boolean {
  if (!UPPERCASE.test(clean.slice(start, end))) return false;
  const joiners = "-&'.";
  const before = clean[start - 1] ?? ' ';
  const after = clean[end] ?? ' ';
  if (joiners.includes(before) && ALNUM.test(clean[start - 2] ?? ' ')) return false;
  if (after === '+' || after === '#') return false;
  return !(joiners.includes(after) && ALNUM.test(clean[end + 1] ?? ' '));
}

const NEGATION_CUES = new Set([
  'no',
  'not',
  'never',
  'without',
  'lack',
  'lacks',
  'lacking',
  'none',
  'nor',
  'neither',
  'kein',
  'keine',
  'keinen',
  'keiner',
  'keinerlei',
  'nicht',
  'nie',
  'ohne',
  'sans',
  'aucun',
  'aucune',
  'pas',
  'jamais',
  'sin',
  'ningun',
  'ninguna',
  'ningún',
  'nunca',
]);
/**
 * Words that may stand between a negation and what it negates: "no (prior professional)
 * experience with", "never (used)", "haven't (worked with)", "keine Erfahrung mit". Any other
 * word ends the negation's reach, so "no downtime after migrating to Kubernetes" does not negate
 * Kubernetes.
 */
const NEGATED_PHRASE_WORDS = new Set(
  (
    'experience experienced knowledge exposure familiarity expertise background skills skill ' +
    'professional prior previous commercial practical hands-on real real-world any much direct ' +
    'production formal working work worked use used using touched tried heard seen programmed ' +
    'coded written wrote familiar know known with in of on at i have has had been done a an the ' +
    'yet am is are was were do does did really erfahrung kenntnisse mit im ai avec expérience ' +
    'connaissance connaissances de en con experiencia conocimiento conocimientos tengo tenho'
  ).split(' '),
);
/** Words that end a negation's reach however close: "No degree required, Kubernetes a plus". */
const NEGATION_CLOSERS = new Set(['required', 'needed', 'necessary', 'mandatory', 'problem']);
const LIST_SEPARATORS = new Set([',', '&', '/', 'or', 'and', 'oder', 'und', 'ou', 'et', 'o', 'y']);
/** Most words of one list item a negation reaches over ("no Java, Spring Boot or Kotlin"). */
const LIST_ITEM_WORDS = 3;
const TRAILING_NEGATION = /^\s*[:(-]?\s*(?:none|never|no experience|not yet|keine|aucune)\b/i;

/**
 * Whether the occurrence at [start, end) of the cleaned text is negated: in its clause (not past
 * a sentence end, a colon or a line break), a negation word before it with only the words of a
 * negated phrase or of a list between them ("no experience with Kubernetes", "never used
 * Terraform or Pulumi"), or "none" / "no experience" right after it.
 */
export function isNegated(clean: string, start: number, end: number): boolean {
  let from = start;
  const limit = Math.max(0, start - 160);
  while (from > limit) {
    const char = clean[from - 1] ?? '';
    if (char === '\n' || char === ';' || char === '!' || char === '?' || char === '|') break;
    if ((char === '.' || char === ':') && /\s/.test(clean[from] ?? ' ')) break;
    from--;
  }
  const tokens =
    clean
      .slice(from, start)
      .toLowerCase()
      .match(/[\p{L}\p{N}'-]+|[,&/]/gu) ?? [];
  let listWords = -1;
  for (let index = tokens.length - 1; index >= 0; index--) {
    // Elisions read as their word: "d'expérience", "n'ai".
    const token = (tokens[index] ?? '').replace(/^[dlnjcsmt]'/, '');
    if (LIST_SEPARATORS.has(token)) {
      listWords = 0;
      continue;
    }
    if (NEGATION_CLOSERS.has(token)) break;
    if (NEGATION_CUES.has(token) || token.endsWith("n't")) return true;
    if (NEGATED_PHRASE_WORDS.has(token)) {
      listWords = -1;
      continue;
    }
    if (listWords < 0 || listWords >= LIST_ITEM_WORDS) break;
    listWords += 1;
  }
  return TRAILING_NEGATION.test(clean.slice(end, end + 24));
}
