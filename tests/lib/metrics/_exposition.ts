/**
 * Reads the Prometheus text format (version 0.0.4) as a scraper does, for the tests: every line
 * is a `# HELP`, a `# TYPE`, a blank, or a sample `name{label="value",...} number`; anything
 * else fails the test.
 * https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
 *
 * @module
 */

/** One sample line. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A scrape, read. */
export interface Exposition {
  /** The `# TYPE` of each metric family. */
  types: Map<string, string>;
  samples: Sample[];
  /**
   * The value of the one sample of `name` with exactly these labels.
   * @returns undefined when there is none
   */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** The samples of `name`, whatever their labels. */
  series(name: string): Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y;

/**
 * Reads a scrape's text.
 * @throws Error naming the first line that is not in the format
 */
export function readExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ")) continue;
    const type = line.match(/^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/);
    if (type) {
      types.set(type[1], type[2]);
      continue;
    }
    const sample = line.match(SAMPLE);
    if (!sample) throw new Error(`not a line of the text format: ${JSON.stringify(line)}`);
    samples.push({
      name: sample[1],
      labels: readLabels(sample[2] ?? "", line),
      value: number(sample[3]),
    });
  }
  const same = (a: Record<string, string>, b: Record<string, string>) =>
    Object.keys(a).length === Object.keys(b).length &&
    Object.entries(b).every(([key, value]) => a[key] === value);
  return {
    types,
    samples,
    value: (name, labels = {}) =>
      samples.find((sample) => sample.name === name && same(sample.labels, labels))?.value,
    series: (name) => samples.filter((sample) => sample.name === name),
  };
}

function readLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const at = LABEL.lastIndex;
    const label = LABEL.exec(text);
    if (!label || label.index !== at) throw new Error(`bad labels: ${JSON.stringify(line)}`);
    labels[label[1]] = label[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
  }
  return labels;
}

/** A sample value as Prometheus reads it (Go's `strconv.ParseFloat`: `NaN`, `Inf` in any case). */
function number(text: string): number {
  const special = text.toLowerCase();
  if (special === "+inf" || special === "inf") return Infinity;
  if (special === "-inf") return -Infinity;
  if (special === "nan") return NaN;
  const value = Number(text);
  if (Number.isNaN(value)) throw new Error(`not a sample value: ${text}`);
  return value;
}
