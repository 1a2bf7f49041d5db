/**
 * Counters, gauges and histograms kept in plain maps and written in the Prometheus text format
 * (version 0.0.4): https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
 *
 * The gateway's own metrics are kept here rather than in `prom-client`, so that the gateway does
 * not load that package at start: `prom-client` is loaded at the first scrape, for the process
 * metrics only (see `_registry.ts`).
 *
 * @module
 */

/** A metric family: its samples, in the text format. */
export interface Family {
  /** `# HELP`, `# TYPE` and the samples, each line ending in `\n`. */
  text(): string;
}

/** One series of a family: its label values, in the order of the family's label names. */
interface Series<Value> {
  labelValues: string[];
  value: Value;
}

/**
 * The series of a family by their labels, in the order they first appeared (as prom-client
 * lists them). A family without labels has its one series from the start.
 */
class SeriesMap<Value> {
  readonly #series = new Map<string, Series<Value>>();
  readonly #labelNames: readonly string[];
  readonly #initial: () => Value;

  constructor(labelNames: readonly string[], initial: () => Value) {
    this.#labelNames = labelNames;
    this.#initial = initial;
    if (labelNames.length === 0) this.get({});
  }

  /** The series of `labels`, created at its initial value when new. */
  get(labels: Record<string, string>): Series<Value> {
    // The key is built without an array: this runs for every request the gateway answers.
    let key = "";
    for (const name of this.#labelNames) key += `${labels[name] ?? ""}\u0000`;
    let series = this.#series.get(key);
    if (!series) {
      const labelValues = this.#labelNames.map((name) => labels[name] ?? "");
      this.#series.set(key, series = { labelValues, value: this.#initial() });
    }
    return series;
  }

  /** Every series. */
  all(): IterableIterator<Series<Value>> {
    return this.#series.values();
  }

  /** The labels of `series` as the text format writes them, with `extra` last. */
  labelText(series: Series<Value>, extra: [string, string][] = []): string {
    const pairs: [string, string][] = [
      ...this.#labelNames.map((name, i): [string, string] => [name, series.labelValues[i]]),
      ...extra,
    ];
    if (pairs.length === 0) return "";
    return `{${pairs.map(([name, value]) => `${name}="${escapeLabel(value)}"`).join(",")}}`;
  }
}

/** A counter or a gauge: one number per series. */
export class NumberFamily implements Family {
  readonly #name: string;
  readonly #header: string;
  readonly #series: SeriesMap<number>;
  readonly #collect?: (set: (value: number) => void) => void;

  /**
   * @param options the family's `name`, `help` and `type`; its `labelNames` (@default none); and
   *   for a gauge read at each scrape, `collect`, which sets the value of its one series
   */
  constructor(options: {
    name: string;
    help: string;
    type: "counter" | "gauge";
    labelNames?: readonly string[];
    collect?: (set: (value: number) => void) => void;
  }) {
    this.#name = options.name;
    this.#header = header(options.name, options.help, options.type);
    this.#series = new SeriesMap(options.labelNames ?? [], () => 0);
    this.#collect = options.collect;
  }

  /** Adds `by` (@default 1) to the series of `labels` (@default none). */
  inc(labels: Record<string, string> = {}, by = 1): void {
    this.#series.get(labels).value += by;
  }

  /** Sets the series of `labels` to `value`. */
  set(labels: Record<string, string>, value: number): void {
    this.#series.get(labels).value = value;
  }

  text(): string {
    this.#collect?.((value) => this.set({}, value));
    let text = this.#header;
    for (const series of this.#series.all()) {
      text += `${this.#name}${this.#series.labelText(series)} ${numberText(series.value)}\n`;
    }
    return text;
  }
}

/** What a histogram keeps of one series: observations per bucket (not cumulated), sum, count. */
interface Buckets {
  counts: number[];
  sum: number;
  count: number;
}

/** A histogram: cumulative `_bucket` series by `le`, `_sum` and `_count`. */
export class HistogramFamily implements Family {
  readonly #name: string;
  readonly #header: string;
  readonly #bounds: readonly number[];
  readonly #series: SeriesMap<Buckets>;

  /**
   * @param options the family's `name` and `help`, its bucket upper `bounds` (ascending, without
   *   `+Inf`), and its `labelNames` (@default none)
   */
  constructor(options: {
    name: string;
    help: string;
    bounds: readonly number[];
    labelNames?: readonly string[];
  }) {
    this.#name = options.name;
    this.#header = header(options.name, options.help, "histogram");
    this.#bounds = options.bounds;
    const initial = () => ({ counts: options.bounds.map(() => 0), sum: 0, count: 0 });
    this.#series = new SeriesMap(options.labelNames ?? [], initial);
  }

  /** Counts `value` in the series of `labels` (@default none). */
  observe(labels: Record<string, string>, value: number): void {
    const buckets = this.#series.get(labels).value;
    const index = this.#bounds.findIndex((bound) => value <= bound);
    if (index >= 0) buckets.counts[index]++;
    buckets.sum += value;
    buckets.count++;
  }

  text(): string {
    const name = this.#name;
    let text = this.#header;
    for (const series of this.#series.all()) {
      const { counts, sum, count } = series.value;
      let cumulated = 0;
      this.#bounds.forEach((bound, i) => {
        cumulated += counts[i];
        const labels = this.#series.labelText(series, [["le", numberText(bound)]]);
        text += `${name}_bucket${labels} ${cumulated}\n`;
      });
      text += `${name}_bucket${this.#series.labelText(series, [["le", "+Inf"]])} ${count}\n`;
      const labels = this.#series.labelText(series);
      text += `${name}_sum${labels} ${numberText(sum)}\n${name}_count${labels} ${count}\n`;
    }
    return text;
  }
}

function header(name: string, help: string, type: string): string {
  return `# HELP ${name} ${help.replaceAll("\\", "\\\\").replaceAll("\n", "\\n")}\n` +
    `# TYPE ${name} ${type}\n`;
}

/** A label value escaped as the text format requires: backslash, double quote, line feed. */
function escapeLabel(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

/** A sample value: `NaN`, `+Inf` and `-Inf` as the format spells them, else the number. */
function numberText(value: number): string {
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}
