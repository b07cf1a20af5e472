/**
 * A strict reader of the Prometheus text exposition format, version 0.0.4
 * (prometheus.io/docs/instrumenting/exposition_formats), for tests: it throws on what Prometheus's
 * own parser (Go's `expfmt.TextParser`, behind `promtool check metrics`) rejects, and on the rules of
 * the format that parser lets through: a family's lines in one group, no series twice, histogram
 * buckets cumulative with a `+Inf` bucket equal to `_count`.
 *
 * Why not an npm parser: `parse-prometheus-text-format` (the one maintained package) is lenient —
 * it accepts any metric name and any value text — and folds every series of a labelled histogram
 * into one, losing their labels, which is exactly what `gleaner_run_duration_seconds` has. A
 * Prometheus-maintained JavaScript parser does not exist, and `promtool check metrics` would
 * need Debian's whole `prometheus` package on every machine that runs the tests.
 *
 * Checked per line: metric and label names, label value escapes (`\\`, `\"`, `\n` only), a
 * float value as Go parses it (`NaN`, `+Inf`, `-Inf` included), an optional integer timestamp, the
 * final newline. Per family: at most one HELP and one TYPE, both before its samples; its samples
 * together; sample names that fit its type (`_bucket`/`_sum`/`_count`, `le` and `quantile`); no
 * series twice. Per histogram series: `le` bounds increasing, cumulative counts that never
 * decrease, a `+Inf` bucket equal to `_count`, and a `_sum`.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface MetricFamily {
  name: string;
  type: MetricType;
  help: string | undefined;
  samples: Sample[];
}

export class ExpositionError extends Error {
  constructor(lineNumber: number, line: string, problem: string) {
    super(`line ${lineNumber}: ${problem}: ${JSON.stringify(line)}`);
  }
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME_START = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const TYPES = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(text: string): number | undefined {
  if (FLOAT.test(text)) return Number(text);
  // Go's ParseFloat also takes these spellings, case-insensitively.
  const lower = text.toLowerCase();
  if (lower === 'nan') return Number.NaN;
  if (lower === '+inf' || lower === 'inf') return Number.POSITIVE_INFINITY;
  if (lower === '-inf') return Number.NEGATIVE_INFINITY;
  return undefined;
}

/** Reads `name{labels} value [timestamp]`; throws a plain message on any deviation. */
function parseSample(line: string): Sample {
  let index = 0;
  const nameEnd = line.search(/[{ \t]/);
  if (nameEnd <= 0) throw new Error('no metric name followed by a value');
  const name = line.slice(0, nameEnd);
  if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name "${name}"`);
  index = nameEnd;
  const labels: Record<string, string> = {};
  if (line[index] === '{') {
    index += 1;
    for (;;) {
      while (line[index] === ' ' || line[index] === '\t') index += 1;
      if (line[index] === '}') {
        index += 1;
        break;
      }
      const labelMatch = LABEL_NAME_START.exec(line.slice(index));
      if (!labelMatch) throw new Error('invalid label name');
      const labelName = labelMatch[0];
      if (labelName.startsWith('__')) throw new Error(`reserved label name "${labelName}"`);
      if (labelName in labels) throw new Error(`label "${labelName}" given twice`);
      index += labelName.length;
      if (line[index] !== '=' || line[index + 1] !== '"')
        throw new Error(`label "${labelName}" is not followed by ="`);
      index += 2;
      let value = '';
      for (;;) {
        const char = line[index];
        if (char === undefined) throw new Error('unterminated label value');
        index += 1;
        if (char === '"') break;
        if (char === '\\') {
          const escaped = line[index];
          index += 1;
          if (escaped === '\\') value += '\\';
          else if (escaped === '"') value += '"';
          else if (escaped === 'n') value += '\n';
          else throw new Error(`invalid escape "\\${escaped}" in a label value`);
        } else value += char;
      }
      labels[labelName] = value;
      if (line[index] === ',') index += 1;
      else if (line[index] !== '}') throw new Error('label value not followed by , or }');
    }
  }
  const rest = line.slice(index);
  if (!/^[ \t]/.test(rest)) throw new Error('no blank between the series and its value');
  const fields = rest.trim().split(/[ \t]+/);
  if (fields.length > 2) throw new Error('text after the value and timestamp');
  const value = parseValue(fields[0] ?? '');
  if (value === undefined) throw new Error(`invalid value "${fields[0]}"`);
  if (fields[1] !== undefined && !/^-?\d+$/.test(fields[1]))
    throw new Error(`invalid timestamp "${fields[1]}"`);
  return { name, labels, value };
}

/** The family a sample name belongs to, given its family's type (`x_bucket` is part of histogram `x`). */
function sampleFits(family: MetricFamily, sample: Sample): boolean {
  const { name, type } = family;
  if (type === 'histogram') {
    if (sample.name === `${name}_bucket`) return 'le' in sample.labels;
    return (
      (sample.name === `${name}_sum` || sample.name === `${name}_count`) && !('le' in sample.labels)
    );
  }
  if (type === 'summary') {
    if (sample.name === name) return 'quantile' in sample.labels;
    return sample.name === `${name}_sum` || sample.name === `${name}_count`;
  }
  return sample.name === name;
}

const seriesKey = (sample: Sample) =>
  `${sample.name}{${Object.entries(sample.labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
    .join(',')}}`;

function checkHistogram(family: MetricFamily): void {
  const series = new Map<string, { buckets: [number, number][]; sum?: number; count?: number }>();
  for (const sample of family.samples) {
    const { le, ...rest } = sample.labels;
    const key = seriesKey({ name: '', labels: rest, value: 0 });
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (sample.name.endsWith('_bucket')) {
      const bound = parseValue(le ?? '');
      if (bound === undefined || Number.isNaN(bound))
        throw new Error(`${family.name}${key}: invalid le "${le}"`);
      entry.buckets.push([bound, sample.value]);
    } else if (sample.name.endsWith('_sum')) entry.sum = sample.value;
    else entry.count = sample.value;
  }
  for (const [key, { buckets, sum, count }] of series) {
    const where = `${family.name}${key}`;
    for (let i = 1; i < buckets.length; i += 1) {
      if (!(buckets[i]![0] > buckets[i - 1]![0])) throw new Error(`${where}: le not increasing`);
      if (buckets[i]![1] < buckets[i - 1]![1]) throw new Error(`${where}: buckets not cumulative`);
    }
    const last = buckets.at(-1);
    if (!last || last[0] !== Number.POSITIVE_INFINITY) throw new Error(`${where}: no +Inf bucket`);
    if (count === undefined || sum === undefined) throw new Error(`${where}: no _sum or _count`);
    if (last[1] !== count) throw new Error(`${where}: +Inf bucket ${last[1]} != _count ${count}`);
  }
}

/** Parses a whole exposition strictly; the families in their order of appearance. */
export function parseExposition(text: string): Map<string, MetricFamily> {
  if (!text.endsWith('\n')) throw new Error('the exposition does not end with a newline');
  const families = new Map<string, MetricFamily>();
  const finished = new Set<string>();
  const typed = new Set<string>();
  let current: MetricFamily | undefined;
  const lines = text.slice(0, -1).split('\n');
  const family = (name: string, lineNumber: number, line: string): MetricFamily => {
    if (current?.name === name) return current;
    if (finished.has(name) || families.has(name))
      throw new ExpositionError(lineNumber, line, `family ${name} appears in two places`);
    if (current) finished.add(current.name);
    current = { name, type: 'untyped', help: undefined, samples: [] };
    families.set(name, current);
    return current;
  };
  lines.forEach((line, index) => {
    const lineNumber = index + 1;
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const meta = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(line);
      if (!meta) return; // a plain comment
      const [, keyword, name = '', rest = ''] = meta;
      if (!METRIC_NAME.test(name))
        throw new ExpositionError(lineNumber, line, `invalid metric name "${name}"`);
      const target = family(name, lineNumber, line);
      if (keyword === 'HELP') {
        if (target.help !== undefined) throw new ExpositionError(lineNumber, line, 'second HELP');
        if (/\\[^\\n]/.test(rest.replace(/\\\\/g, '')))
          throw new ExpositionError(lineNumber, line, 'invalid escape in HELP');
        target.help = rest.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'));
      } else {
        if (target.samples.length > 0 || typed.has(name))
          throw new ExpositionError(lineNumber, line, 'TYPE after samples or a second TYPE');
        typed.add(name);
        if (!TYPES.has(rest as MetricType))
          throw new ExpositionError(lineNumber, line, `unknown type "${rest}"`);
        target.type = rest as MetricType;
      }
      return;
    }
    let sample: Sample;
    try {
      sample = parseSample(line);
    } catch (error) {
      throw new ExpositionError(lineNumber, line, (error as Error).message);
    }
    // A sample belongs to the current family when its name fits that family's type.
    const owner =
      current && sampleFits(current, sample) ? current : family(sample.name, lineNumber, line);
    if (!sampleFits(owner, sample))
      throw new ExpositionError(
        lineNumber,
        line,
        `sample does not fit ${owner.type} ${owner.name}`,
      );
    owner.samples.push(sample);
  });
  for (const entry of families.values()) {
    const seen = new Set<string>();
    for (const sample of entry.samples) {
      const key = seriesKey(sample);
      if (seen.has(key)) throw new Error(`series ${key} appears twice`);
      seen.add(key);
    }
    if (entry.type === 'histogram') checkHistogram(entry);
  }
  return families;
}

/** The value of one series, or undefined when the exposition has no such series. */
export function sampleValue(
  families: Map<string, MetricFamily>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const familyName = families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
  const wanted = seriesKey({ name, labels, value: 0 });
  return families.get(familyName)?.samples.find((sample) => seriesKey(sample) === wanted)?.value;
}
