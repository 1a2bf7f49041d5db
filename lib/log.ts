/**
 * The gateway log: `logs/gateway.log`, rotating at 5 MiB with 3 files kept, one line per
 * decision (docs/configuration.md), through LogTape.
 *
 * Secrets never reach the logger: no caller passes a secret, token or signature, and a field
 * whose name says it holds one is written as `[REDACTED]` by the formatter as a second line of
 * defence. (`@logtape/redaction` does the same job, at a cost per line that the ingest path
 * cannot afford.)
 *
 * @module
 */
import { getRotatingFileSink } from "@logtape/file";
import {
  configure,
  getStreamSink,
  type Logger,
  type LogLevel,
  type LogRecord,
  reset,
  type Sink,
  type TextFormatter,
} from "@logtape/logtape";
import { dirname } from "node:path";
import { writeAll } from "./config/fs.ts";
import { ConfigError, errorMessage } from "./errors.ts";

/** Size at which the log rotates, in bytes. */
export const LOG_MAX_BYTES = 5 * 1024 * 1024;
/** Rotated files kept besides the current one. */
export const LOG_MAX_FILES = 3;

/** Field names whose values are never written. */
const SECRET_FIELD = /secret|token|password|passphrase|authorization|signature|api_?key/i;

/**
 * Formats a record as one line: ISO time, level, category, the rendered message, then the
 * properties as `key=value` (values with spaces or quotes JSON-quoted). It runs once per
 * request, so it remembers which field names are secret and the text of the last millisecond.
 * @example `2026-11-21T12:00:00.000Z INFO ingest accepted gh issues.opened subscription=gh`
 */
export const lineFormatter: TextFormatter = (record) => {
  let line = isoTime(record.timestamp) + levelAndCategory(record.category, record.level);
  const message = record.message;
  for (let i = 0; i < message.length; i++) {
    const part = message[i];
    line += typeof part === "string" ? part : printable(part);
  }
  const properties = record.properties;
  for (const key of Object.keys(properties)) {
    const value = properties[key];
    if (value === undefined) continue;
    line += " " + key + "=" + (isSecretField(key) ? "[REDACTED]" : quoteValue(printable(value)));
  }
  return oneTerminalLine(line) + "\n";
};

// Text from requests (a name in the URL, a header) must not break a line in two, nor reach the
// terminal of whoever reads the log with `tail -f` as escape sequences (ESC, BEL, NUL...), nor
// reorder what it shows (the bidirectional overrides and isolates, U+202A-U+202E and
// U+2066-U+2069): line breaks become a space, the others a visible \u escape. Tabs stay.
// deno-lint-ignore no-control-regex
const ANY_CONTROL = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// deno-lint-ignore no-control-regex
const OTHER_CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
const LINE_BREAKS = /[\r\n\u2028\u2029]+/g;
const escape = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;

/**
 * Text from outside (a payload, a request, an error a platform or an agent sent back) as it can
 * be shown on one line of a terminal, as the log writes it: line breaks become a space, other
 * control characters (ESC, BEL, NUL, C1) and the bidirectional overrides a visible `\u` escape.
 * @param text any text
 * @returns the same text when it holds none of them (tabs stay)
 */
export function oneTerminalLine(text: string): string {
  return ANY_CONTROL.test(text)
    ? text.replace(LINE_BREAKS, " ").replace(OTHER_CONTROLS, escape)
    : text;
}

// Memos of pure functions, shared by every sink in the process: which field names are secret
// (bounded), and the ISO text of the last timestamp formatted. Neither can change an output.
const secretFields = new Map<string, boolean>();
let lastTime = { ms: NaN, text: "" };

function isSecretField(key: string): boolean {
  let secret = secretFields.get(key);
  if (secret === undefined) {
    secret = SECRET_FIELD.test(key);
    if (secretFields.size < 1000) secretFields.set(key, secret);
  }
  return secret;
}

// The text between the time and the message, per logger category (LogTape keeps one array per
// logger) and level: ` INFO ingest `.
const levelsAndCategories = new WeakMap<readonly string[], Map<string, string>>();

function levelAndCategory(category: readonly string[], level: string): string {
  let byLevel = levelsAndCategories.get(category);
  if (byLevel === undefined) levelsAndCategories.set(category, byLevel = new Map());
  let text = byLevel.get(level);
  if (text === undefined) {
    text = ` ${level.toUpperCase()} ${category.slice(1).join(".")} `;
    byLevel.set(level, text);
  }
  return text;
}

function isoTime(ms: number): string {
  if (ms !== lastTime.ms) lastTime = { ms, text: new Date(ms).toISOString() };
  return lastTime.text;
}

function printable(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
}

const NEEDS_QUOTES = /[\s"=]/;

function quoteValue(text: string): string {
  return text === "" || NEEDS_QUOTES.test(text) ? JSON.stringify(text) : text;
}

/**
 * A log message template read once: the text between its `{name}` placeholders, and their
 * names. See {@link lineTemplate}.
 */
export interface LineTemplate {
  /** The template as written, e.g. `accepted {subscription} {event}`. */
  readonly raw: string;
  /** The text around the placeholders: one more entry than `keys`. */
  readonly texts: readonly string[];
  /** The property named by each placeholder, in order. */
  readonly keys: readonly string[];
}

/**
 * Reads a message template of the lines written on every request, for {@link writeLine}.
 * @param raw the template, e.g. `accepted {subscription} {event}`: placeholders are plain
 *   property names, as LogTape reads them (no `{{`, no dotted paths)
 * @returns the template, split
 * @throws Error when a placeholder is not a plain name (a mistake in the program)
 */
export function lineTemplate(raw: string): LineTemplate {
  const texts: string[] = [];
  const keys: string[] = [];
  let rest = raw;
  for (let match = PLACEHOLDER.exec(rest); match; match = PLACEHOLDER.exec(rest)) {
    texts.push(rest.slice(0, match.index));
    keys.push(match[1]);
    rest = rest.slice(match.index + match[0].length);
  }
  if (/[{}]/.test(rest)) throw new Error(`not a plain log template: ${raw}`);
  texts.push(rest);
  return { raw, texts, keys };
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/;

/**
 * Writes the same record as `logger[level](template.raw, properties)` (same sinks, filters and
 * line), without LogTape parsing the template and copying the properties on every call, which
 * is most of the cost of a line written once per request. It hands LogTape the finished record
 * through `Logger.emit`, with the logger's category set, which LogTape (2.4) then dispatches as
 * is. Unlike `logger.info`, it adds no implicit context (`withContext`) and leaves lazy values
 * unresolved; the gateway uses neither.
 * @param logger the logger, e.g. `getLogger(["agent", "ingest"])`
 * @param level the level
 * @param template from {@link lineTemplate}
 * @param properties the record's properties; those the placeholders name fill them in
 * @example
 * ```ts
 * const ACCEPTED = lineTemplate("accepted {subscription} {event}"); // once, at module load
 * writeLine(getLogger(["agent", "ingest"]), "info", ACCEPTED, {
 *   subscription: "gh",
 *   event: "issues.opened",
 *   event_id: "evt_1", // not in the message: written as event_id=evt_1
 * });
 * ```
 */
export function writeLine(
  logger: Logger,
  level: LogLevel,
  template: LineTemplate,
  properties: Record<string, unknown>,
): void {
  const { texts, keys } = template;
  const message: unknown[] = [texts[0]];
  for (let i = 0; i < keys.length; i++) message.push(properties[keys[i]], texts[i + 1]);
  const record: LogRecord = {
    category: logger.category,
    level,
    message,
    rawMessage: template.raw,
    timestamp: Date.now(),
    properties,
  };
  logger.emit(record);
}

/**
 * Lines the console sink buffers before it writes: at most twice as many are buffered, and one
 * batch more is being written.
 */
export const CONSOLE_BUFFER_LINES = 1000;

/**
 * Configures LogTape for one process: the rotating gateway log, plus standard error when
 * `console` is set. Call once; dispose with {@link stopLogging}. Records of the `agent`
 * category at `info` and above are written, and LogTape's own warnings.
 * @param options.file path of `gateway.log` (its folder is created, mode 0700; the file mode
 *   0600); omit to skip the file
 * @param options.console also write lines to standard error (or, for tests, to this stream);
 *   lines it cannot keep up with are dropped there, not in the file
 * @param options.extraSinks more sinks (tests capture records with one)
 * @throws ConfigError naming the log file when its folder or the file cannot be created (a
 *   read-only home)
 * @example
 * ```ts
 * await startLogging({ file: join(home, "logs", "gateway.log"), console: true });
 * getLogger(["agent", "worker"]).info("delivered {event_id}", { event_id: "evt_1" });
 * await stopLogging(); // writes what is buffered
 * ```
 */
export async function startLogging(
  options: {
    file?: string;
    console?: boolean | WritableStream<Uint8Array>;
    extraSinks?: ((record: LogRecord) => void)[];
  },
): Promise<void> {
  const sinks: Record<string, Sink> = {};
  if (options.file) sinks.file = await fileSink(options.file);
  if (options.console) {
    sinks.console = consoleSink(options.console === true ? stderrWithoutClose() : options.console);
  }
  options.extraSinks?.forEach((sink, i) => {
    sinks[`extra${i}`] = sink;
  });
  await configure({
    reset: true,
    sinks,
    loggers: [
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: Object.keys(sinks) },
      { category: ["agent"], lowestLevel: "info", sinks: Object.keys(sinks) },
    ],
  });
}

/**
 * The rotating file sink of `gateway.log`, buffered and non-blocking: lines are written once
 * per 256 KiB or per second, and the fsync after each write runs off the event loop, since
 * writing and syncing small batches on it would slow the ingest path. A graceful stop writes everything; a crash loses about the
 * last second of lines, while the events it had acknowledged are committed in the state
 * database.
 * @throws ConfigError naming the file when its folder or the file cannot be created
 */
async function fileSink(file: string): Promise<Sink> {
  try {
    await Deno.mkdir(dirname(file), { recursive: true, mode: 0o700 });
    // Opened here, as the sink opens it, so that an unwritable file fails with its name.
    (await Deno.open(file, { append: true, create: true, mode: 0o600 })).close();
  } catch (error) {
    throw new ConfigError(`Cannot write the gateway log ${file}: ${errorMessage(error)}`, {
      file,
      cause: error,
    });
  }
  return getRotatingFileSink(file, {
    maxSize: LOG_MAX_BYTES,
    maxFiles: LOG_MAX_FILES,
    formatter: lineFormatter,
    bufferSize: 262_144,
    flushInterval: 1000,
    nonBlocking: true,
  });
}

/**
 * The console sink, bounded: at most three times {@link CONSOLE_BUFFER_LINES} lines wait for
 * `stream`, the oldest dropped past that (the file has them all). Writing each line as it
 * came would keep one pending write per line for as long as a slow reader (a pipe) lags, and a
 * stop would wait for the backlog. A crash loses up to 100 ms of console lines.
 */
function consoleSink(stream: WritableStream<Uint8Array>): Sink {
  return getStreamSink(stream, {
    formatter: lineFormatter,
    nonBlocking: { bufferSize: CONSOLE_BUFFER_LINES, flushInterval: 100 },
  });
}

/**
 * Standard error as a stream whose close leaves standard error open: {@link stopLogging}
 * closes the sinks' streams, and closing `Deno.stderr.writable` would close the process's
 * standard error, so the error message of a failed start (printed after) would be lost.
 */
function stderrWithoutClose(): WritableStream<Uint8Array> {
  return new WritableStream({ write: (chunk) => writeAll(Deno.stderr, chunk) });
}

/** Flushes and closes the log sinks. */
export async function stopLogging(): Promise<void> {
  await reset();
}

/**
 * `text` as a LogTape message written as it is: braces are LogTape's placeholders, and a chat
 * id, a path, a key of config.yaml or a reason quoting a record may hold some.
 * @param text the whole line, already composed
 * @returns the message to pass to a logger, with its braces doubled
 * @example
 * ```ts
 * log.warn(literalMessage(`subscription "x": deliver_extra {chat_id} is not a string`));
 * ```
 */
export function literalMessage(text: string): string {
  return text.replaceAll("{", "{{").replaceAll("}", "}}");
}
