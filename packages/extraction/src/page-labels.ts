/**
 * A posting's short facts as pages label them, in every shape we have seen:
 *
 * - label and value as neighbours: `<dt>`/`<dd>`, `<th>`/`<td>`, two `<td>`s of a 2010 table
 *   layout, `<div class="label">`/`<div class="value">`, a `<h3>Location</h3>` and its paragraph;
 * - label and value in one run of text: "Location: Leeds", `<b>Location:</b> Leeds<br><b>Salary:
 *   </b> …`, `<strong>Standort</strong> Berlin`, a label on one line and its value on the next;
 * - an icon for a label: `<li><svg><title>Location</title>…</svg> Berlin</li>`, `<i class="fa
 *   fa-map-marker">`;
 * - an element named for its value: `class="job-location"`, `data-testid="company-name"`,
 *   `itemprop="hiringOrganization"` without an itemscope.
 *
 * Labels must be whole ("Location", "Job location:", "Lieu de travail"), not a prefix: a
 * sentence that starts with "Location matters: …" is not a fact. The first value found for a
 * field wins (facts sit above the description). Page furniture is skipped; side columns are
 * read, since they often hold the facts.
 */
import { childElements, type DomElement } from './dom.js';
import { findEmploymentType, normaliseEmploymentType } from './employment-type.js';
import { normaliseWhitespace } from './html-text.js';
import {
  hintsOf,
  isOutsideFurniture,
  nextElementSibling,
  shortTextOf,
  textContent,
  type PageIndex,
} from './page-index.js';

export interface LabelledValues {
  /** Under a label only a job title has: "Job title", "Vacancy", "Stellenbezeichnung". */
  title: string | null;
  /** Under a label that titles other things too: "Title", "Position", "Role". */
  roleTitle: string | null;
  company: string | null;
  location: string | null;
  /** "Remote", "Hybrid", "On-site" given apart from the location. */
  workplace: string | null;
  employmentType: string | null;
  salary: string | null;
  datePosted: string | null;
  /** Only a sign that the page is a posting; not part of the record. */
  closingDate: string | null;
  /** Only a sign that the page is a posting; not part of the record. */
  reference: string | null;
}

export type LabelKey = keyof LabelledValues;

export interface LabelReading {
  values: LabelledValues;
  /** Three or more different titles or locations under labels: a list of postings. */
  isListing: boolean;
}

// prettier-ignore
const LABEL_WORDS: readonly [LabelKey, string][] = [
  ['title', "(?:job|position|vacancy|role|post)\\s+(?:title|name)|job|vacancy|stellenbezeichnung|stellentitel|jobtitel|stelle|intitulé(?:\\s+du\\s+poste)?|titre\\s+du\\s+poste|poste|pracovná\\s+pozícia|pracovní\\s+pozice|stanowisko|puesto|vacature"],
  ['roleTitle', "title|position|role|post"],
  ['company', "company(?:\\s+name)?|employer|(?:hiring\\s+)?agency|organi[sz]ation|hiring\\s+(?:organi[sz]ation|company|manager's\\s+company)|unternehmen|arbeitgeber|firma|entreprise|société|employeur|spoločnosť|společnost|zamestnávateľ|zaměstnavatel|pracodawca|empresa|azienda|werkgever|bedrijf|työnantaja|arbetsgivare"],
  ['location', "(?:job|work|office|primary)\\s+locations?|locations?|place\\s+of\\s+work|work\\s*place|based(?:\\s+in)?|base|city|duty\\s+station|where|office|standort|arbeitsort|einsatzort|dienstort|ort|lieu(?:\\s+de\\s+travail|\\s+d'affectation)?|localisation|ville|locatie|werklocatie|standplaats|ubicación|lugar(?:\\s+de\\s+trabajo)?|sede|luogo(?:\\s+di\\s+lavoro)?|localização|local\\s+de\\s+trabalho|miesto(?:\\s+(?:výkonu\\s+)?práce)?|místo(?:\\s+(?:výkonu\\s+)?práce)?|lokalita|miejsce(?:\\s+pracy)?|lokalizacja|sijainti|arbetsort|arbejdssted"],
  ['workplace', "workplace(?:\\s+type)?|work\\s+(?:model|arrangement)|remote(?:\\s+work)?|arbeitsmodell|télétravail"],
  ['employmentType', "(?:employment|job|contract|work|position)\\s+type|type|commitment|(?:work\\s+)?schedule|hours|employment|working\\s+(?:hours|pattern)|contract|(?:job\\s+|employment\\s+)?status|anstellungsart|beschäftigungsart|vertragsart|arbeitszeit|type\\s+de\\s+contrat|contrat|type\\s+d'emploi|temps\\s+de\\s+travail"],
  ['salary', "salary(?:\\s+range)?|compensation|pay(?:\\s+range)?|base\\s+(?:pay|salary)|wage|remuneration|grade|gehalt|vergütung|rémunération|salaire"],
  ['datePosted', "date\\s+posted|posted(?:\\s+on)?|posting\\s+date|published(?:\\s+on)?|date(?:\\s+published)?|advertised|veröffentlicht(?:\\s+am)?|datum|date\\s+de\\s+publication|publié\\s+le"],
  ['closingDate', "closing\\s+date|closes|deadline|application\\s+deadline|apply\\s+by|bewerbungsfrist|date\\s+limite|date\\s+de\\s+clôture"],
  ['reference', "ref(?:erence)?(?:\\s+(?:no|number|code))?\\.?|(?:job|vacancy|requisition|req)\\s+(?:id|ref|reference|number|no|code)\\.?|kennziffer|référence"],
];

const LABELS: readonly [LabelKey, RegExp][] = LABEL_WORDS.map(([key, words]) => [
  key,
  new RegExp(`^(?:${words})$`, 'i'),
]);
/** Every label at once: one test rejects the many texts that are none (labelKey runs per element). */
const ANY_LABEL = new RegExp(`^(?:${LABEL_WORDS.map(([, words]) => words).join('|')})$`, 'i');

/** The field a label names, from its text: "Job Location:" → location. */
export function labelKey(text: string): LabelKey | null {
  if (text.length > 40) return null;
  const key = text
    .replace(/[\s:：*]+$/, '')
    .replace(/\s+/g, ' ')
    .trim();
  if (key === '' || !ANY_LABEL.test(key)) return null;
  for (const [field, pattern] of LABELS) if (pattern.test(key)) return field;
  return null;
}

const HINTS: readonly [LabelKey, RegExp][] = [
  [
    'title',
    /(?:^|[\s_-])(?:job|position|posting|vacancy|opening)[-_]?(?:title|name|headline)\b|\bjobtitle\b/i,
  ],
  ['location', /location|joblocation|job-?loc\b|(?:^|[\s_-])city\b|\bstandort\b/i],
  ['employmentType', /commitment|employment-?type|job-?type|contract-?type|time-?type|job_type/i],
  ['workplace', /workplace|remote-?type|work-?model/i],
  ['salary', /salary|compensation|pay-?range/i],
  ['datePosted', /date-?posted|posted-?(?:on|date)|job-?date|posting-?date/i],
  [
    'company',
    /company-?name|employer|hiring-?org|(?:^|[\s_-])(?:company|agency)(?:$|[\s_])|hiringorganization|org-?name/i,
  ],
];

const ICON_HINTS: readonly [LabelKey, RegExp][] = [
  ['location', /location|map|marker|pin\b|place|globe|geo/i],
  ['employmentType', /briefcase|clock|contract|job-?type|schedule|work-?icon/i],
  ['datePosted', /calendar|date/i],
  ['company', /building|company|employer/i],
  ['salary', /money|salary|wallet|currency|banknote/i],
];

const BLOCK_TAGS = new Set([
  'p',
  'div',
  'ul',
  'ol',
  'li',
  'table',
  'tr',
  'dl',
  'section',
  'article',
  'header',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
]);
const PAIR_CONTAINERS = new Set(['dl', 'tr', 'tbody', 'thead', 'table']);
const FORM_TAGS = new Set(['select', 'option', 'input', 'textarea', 'button', 'form', 'label']);
const ICON_TAGS = new Set(['svg', 'img', 'i']);

/**
 * Elements of the page's content read for labels, in document order: facts sit above or beside
 * the description, and a list of postings shows three different values long before this; a
 * 2 MB page of 80,000 elements would otherwise cost half a second here.
 */
const MAX_ELEMENTS_READ = 6000;

/** The longest value a label may have: a location, a date, a salary range. */
const MAX_VALUE = 160;

export function readLabelledValues(page: PageIndex): LabelReading {
  const values: LabelledValues = {
    title: null,
    roleTitle: null,
    company: null,
    location: null,
    workplace: null,
    employmentType: null,
    salary: null,
    datePosted: null,
    closingDate: null,
    reference: null,
  };
  const seen = { title: new Set<string>(), location: new Set<string>() };
  const set = (key: LabelKey, raw: string): void => {
    // "Bath, Somerset · Full-time": a separator ends the value.
    let text = normaliseWhitespace(raw)
      .split(/\s[·|•]\s/)[0]
      ?.replace(/^[:\-–—|·,\s]+|[\s|·•,;]+$/g, '');
    if (text === undefined || text === '' || text.length > MAX_VALUE) return;
    if (labelKey(text) !== null) return;
    if (key === 'location' && /^[£$€\d]/.test(text)) return;
    // "Norwich, with travel across Norfolk": the place ends where prose starts.
    if (key === 'location') text = text.split(/,\s+(?=\p{Ll}\p{L}*\s+\p{Ll})/u)[0] ?? text;
    // "Position: Full Time Permanent" names the kind of job, not the job.
    if (key === 'roleTitle' && normaliseEmploymentType(text, true) !== null) {
      values.employmentType ??= text;
      return;
    }
    // "Contract: Permanent" then "Working pattern: Full time": the value that names a kind wins.
    if (
      key === 'employmentType' &&
      values.employmentType !== null &&
      findEmploymentType(values.employmentType) === null &&
      findEmploymentType(text) !== null
    )
      values.employmentType = text;
    values[key] ??= text;
    if (key === 'title' || key === 'location') seen[key].add(text.toLowerCase());
  };

  let read = 0;
  for (const element of page.elements) {
    if (FORM_TAGS.has(element.name) || !isOutsideFurniture(page, element)) continue;
    if (++read > MAX_ELEMENTS_READ) break;
    const children = childElements(element);
    const isInline = !children.some((child) => BLOCK_TAGS.has(child.name));

    // A label beside its value: <dt>/<dd>, <th>/<td>, <td>/<td>, <h3>/<p>, <span>/<span>.
    const text = shortTextOf(element, 300);
    const key = text === null ? null : labelKey(text);
    if (key !== null) {
      const value = nextElementSibling(element);
      const valueText = value === null ? null : shortTextOf(value, MAX_VALUE);
      if (valueText !== null && !FORM_TAGS.has(value?.name ?? '')) set(key, valueText);
      continue;
    }
    // Rows and definition lists pair their cells above; read as one run, a value would swallow
    // the next label.
    if (text === null || text === '' || PAIR_CONTAINERS.has(element.name)) continue;
    // A wrapper of one element is named for what it wraps: <div data-testid="companyLocation">
    // <div>Reno, NV</div></div>.
    if (!isInline) {
      if (children.length === 1 && text.length <= 120) readHints(element, text, set);
      continue;
    }
    if (readInlineLabels(element, set)) continue;
    if (text.length > 120) continue;
    const icon = iconKey(children[0]);
    if (icon !== null && startsWithElement(element)) {
      set(icon, text);
      continue;
    }
    readHints(element, text, set);
  }
  return {
    values,
    isListing: seen.title.size >= 3 || seen.location.size >= 3,
  };
}

/**
 * "Location: Leeds<br>Hours: Part-time", "<b>Location:</b> Leeds <b>Salary:</b> …", "<strong>
 * Standort</strong><br>Berlin": segments of inline content, each started by a label (a child
 * element that is one, or a "Label:" at the start of a line). Whether any label was found.
 */
function readInlineLabels(
  element: DomElement,
  set: (key: LabelKey, value: string) => void,
): boolean {
  let found = false;
  let current: { key: LabelKey; value: string } | null = null;
  let line = '';
  const close = (): void => {
    if (current !== null && current.value.trim() !== '') set(current.key, current.value);
    if (current !== null && current.value.trim() !== '') current = null;
  };
  const endLine = (): void => {
    if (current === null) {
      const pairs = labelledPairs(line);
      if (pairs.length > 0) found = true;
      for (const [key, value] of pairs) set(key, value);
    } else close();
    line = '';
  };
  for (const child of element.children as { type?: string; data?: string; name?: string }[]) {
    if (child.type === 'text') {
      if (current === null) line += child.data ?? '';
      else current.value += child.data ?? '';
      continue;
    }
    if (child.type !== 'tag') continue;
    const childElement = child as DomElement;
    if (childElement.name === 'br') {
      endLine();
      continue;
    }
    const childText = shortTextOf(childElement, 40);
    const key = childText === null ? null : labelKey(childText);
    // A label element: "<b>Location:</b>". Without a colon it must stand first on its line.
    if (key !== null && (line.trim() === '' || /:\s*$/.test(childText ?? ''))) {
      if (current === null && line.trim() !== '') endLine();
      close();
      current = { key, value: '' };
      found = true;
      continue;
    }
    const text = textContent(childElement);
    if (current === null) line += text;
    else current.value += ` ${text}`;
  }
  endLine();
  return found;
}

const COLON = /([\p{L}][\p{L}'’.\s]{0,39}?)\s*[:：]\s*/gu;

/**
 * "Location: Eindhoven, Netherlands Type: Full-time" → location and type. A label is the last one
 * to four words before a colon that name a field; the line must start with one.
 */
export function labelledPairs(line: string): [LabelKey, string][] {
  const text = normaliseWhitespace(line);
  const starts: { key: LabelKey; start: number; end: number }[] = [];
  COLON.lastIndex = 0;
  for (let match = COLON.exec(text); match !== null; match = COLON.exec(text)) {
    const words = (match[1] ?? '').trim().split(' ');
    for (let count = Math.min(4, words.length); count >= 1; count--) {
      const label = words.slice(-count).join(' ');
      const key = labelKey(label);
      if (key === null) continue;
      const start =
        match.index + (match[0].lastIndexOf(label) === -1 ? 0 : match[0].lastIndexOf(label));
      starts.push({ key, start, end: match.index + match[0].length });
      break;
    }
    if (starts.length > 8) break;
  }
  if (starts.length === 0 || starts[0]?.start !== 0) return [];
  return starts.map((label, index) => [
    label.key,
    text.slice(label.end, starts[index + 1]?.start ?? text.length),
  ]);
}

function readHints(
  element: DomElement,
  text: string,
  set: (key: LabelKey, value: string) => void,
): void {
  const hints = hintsOf(element);
  for (const [field, pattern] of HINTS) {
    if (pattern.test(hints)) set(field, withoutLeadingLabel(text, field));
  }
}

function startsWithElement(element: DomElement): boolean {
  for (const child of element.children as { type?: string; data?: string }[]) {
    if (child.type === 'tag') return true;
    if (child.type === 'text' && (child.data ?? '').trim() !== '') return false;
  }
  return false;
}

/** The field an icon stands for: an SVG's `<title>` or aria-label, an image's alt, a font icon's class. */
function iconKey(icon: DomElement | undefined): LabelKey | null {
  if (icon === undefined) return null;
  const isIcon =
    ICON_TAGS.has(icon.name) ||
    (icon.name === 'span' && /icon/i.test(icon.attribs.class ?? '') && textContent(icon) === '');
  if (!isIcon) return null;
  const attributes = icon.attribs;
  let description = `${attributes['aria-label'] ?? ''} ${attributes.alt ?? ''} ${attributes.class ?? ''} ${attributes['data-icon'] ?? ''} ${attributes['data-testid'] ?? ''}`;
  // <span class="icon-list-icon"><i class="fas fa-map-marker-alt"></i></span>
  for (const child of childElements(icon))
    description += ` ${child.attribs.class ?? ''} ${child.attribs['aria-label'] ?? ''}`;
  if (icon.name === 'svg') {
    for (const child of childElements(icon)) {
      if (child.name === 'title' || child.name === 'use')
        description += ` ${textContent(child)} ${child.attribs.href ?? child.attribs['xlink:href'] ?? ''}`;
    }
  }
  const direct = labelKey(normaliseWhitespace(description));
  if (direct !== null) return direct;
  for (const [field, pattern] of ICON_HINTS) if (pattern.test(description)) return field;
  return null;
}

/** "Location Berlin" in an element classed "job-location" → "Berlin". */
function withoutLeadingLabel(text: string, field: LabelKey): string {
  const match = /^([^:]{2,40}):\s*(.+)$/.exec(text);
  if (match !== null && labelKey(match[1] ?? '') === field) return match[2] ?? '';
  return text;
}
