/**
 * The site's own name as this page writes it. A career site's company comes from the site, not
 * from a slot (og:site_name, `<title>`, a copyright line), and those write it their own way: the
 * `<title>`'s "Crunch" where the page says "Crunch.io", a logo's "GOJEK" where the text says
 * "GO-JEK", "Randstad Chile" where the page calls itself "randstad". A posting's company is the
 * name as the page shows it, and a page that shows it nowhere in its text (only in a logo or the
 * `<title>`) shows no company.
 */

/** Letters and digits, lower case: "GO-JEK", "Go-Jek" and "GOJEK" are one name. */
function nameKey(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');
}

/**
 * A run of words joined by at most one of "-.&'’" or a space each: the text a name form is cut
 * from. Inside an address ("jobs@crunch.io", "www.crunch.io/jobs") it is no name.
 */
const WORD_RUN = /(?<![\p{L}\p{N}@/.])[\p{L}\p{N}]+(?:(?:[-.&'’]| (?! ))[\p{L}\p{N}]+)*/gu;
/** A shorter form must keep a word of the name this long ("randstad" of "Randstad Chile"). */
const MIN_PREFIX_CHARS = 4;

interface Form {
  text: string;
  key: string;
  order: number;
}

/**
 * The form of `name` the page's visible text uses: the same letters and digits ("GO-JEK" for
 * "GOJEK"), the name with a suffix joined by "." or "-" ("Crunch.io" for "Crunch"), or its first
 * words ("randstad" for "Randstad Chile"). The most complete form wins, then the first on the
 * page. Null when the text never names it.
 */
export function pageFormOf(name: string, texts: Iterable<string>): string | null {
  const key = nameKey(name);
  if (key.length < 2) return null;
  // Where the name's words end, in its key: "randstad|chile".
  const wordEnds = new Set<number>();
  let length = 0;
  for (const word of name.match(/[\p{L}\p{N}]+/gu) ?? []) {
    length += word.toLowerCase().length;
    wordEnds.add(length);
  }
  let best: Form | null = null;
  let order = 0;
  const consider = (text: string, formKey: string): void => {
    order++;
    if (best === null || formKey.length > best.key.length) best = { text, key: formKey, order };
  };
  for (const text of texts) {
    for (const match of text.matchAll(WORD_RUN)) {
      const run = match[0];
      // The run's words, each with where it starts: a form starts at one of them.
      const words = [...run.matchAll(/[\p{L}\p{N}]+/gu)];
      for (const [startIndex, startWord] of words.entries()) {
        // "www.crunch.io": a word after a dot is a domain's, not a name's start.
        const start = startWord.index ?? 0;
        if (start > 0 && run[start - 1] === '.') continue;
        let formKey = '';
        for (let endIndex = startIndex; endIndex < words.length; endIndex++) {
          const word = words[endIndex] as RegExpMatchArray;
          const wordIndex = word.index ?? 0;
          const joiner = endIndex === startIndex ? '' : run.slice(wordIndex - 1, wordIndex);
          const nextKey = formKey + word[0].toLowerCase();
          const end = wordIndex + word[0].length;
          if (key.startsWith(nextKey)) {
            formKey = nextKey;
            if (
              formKey === key ||
              (wordEnds.has(formKey.length) && formKey.length >= MIN_PREFIX_CHARS)
            )
              consider(run.slice(start, end), formKey);
            continue;
          }
          // "Crunch.io" for "Crunch": the whole name, then a suffix joined without a space.
          if (formKey === key && (joiner === '.' || joiner === '-'))
            consider(run.slice(start, end), nextKey);
          break;
        }
      }
    }
  }
  return (best as Form | null)?.text ?? null;
}

/** Whether two texts are one name: the same letters and digits, or one the other's start. */
export function isSameName(a: string, b: string): boolean {
  const keyA = nameKey(a);
  const keyB = nameKey(b);
  if (keyA.length < 2 || keyB.length < 2) return false;
  return keyA.startsWith(keyB) || keyB.startsWith(keyA);
}
