/**
 * The gateway log: `logs/gateway.log`, rotating at 5 MiB with 3 files kept, one logfmt line per
 * decision (CONTRACT §1). Fields whose names look like secrets (`secret`, `token`, `password`,
 * `authorization`, ...) are redacted by `@logtape/redaction` before they reach any sink.
 *
 * @module
 */
import { getRotatingFileSink } from "@logtape/file";
import {
  configure,
  getConsoleSink,
  getLogfmtFormatter,
  type LogRecord,
  reset,
  type Sink,
} from "@logtape/logtape";
import { DEFAULT_REDACT_FIELDS, redactByField } from "@logtape/redaction";
import { dirname } from "node:path";

/** Size at which the log rotates, in bytes. */
export const LOG_MAX_BYTES = 5 * 1024 * 1024;
/** Rotated files kept besides the current one. */
export const LOG_MAX_FILES = 3;

/** Field-name patterns redacted from every log record. */
const REDACT_FIELDS = [...DEFAULT_REDACT_FIELDS, /secret/i, /token/i, /signature/i];

/**
 * Configures LogTape for one process: the rotating gateway log, plus standard error when
 * `console` is set. Call once; dispose with {@link stopLogging}.
 * @param options.file path of `gateway.log` (its folder is created); omit to skip the file
 * @param options.console also write lines to standard error
 * @param options.extraSinks more sinks (tests capture records with one)
 */
export async function startLogging(
  options: { file?: string; console?: boolean; extraSinks?: ((record: LogRecord) => void)[] },
): Promise<void> {
  const formatter = getLogfmtFormatter();
  const sinks: Record<string, Sink> = {};
  if (options.file) {
    await Deno.mkdir(dirname(options.file), { recursive: true, mode: 0o700 });
    sinks.file = redactByField(
      getRotatingFileSink(options.file, {
        maxSize: LOG_MAX_BYTES,
        maxFiles: LOG_MAX_FILES,
        formatter,
        // Buffered: one write per 16 KiB or 250 ms keeps logging off the ingest hot path.
        bufferSize: 16_384,
        flushInterval: 250,
      }),
      { fieldPatterns: REDACT_FIELDS },
    );
  }
  if (options.console) {
    sinks.console = redactByField(getConsoleSink({ formatter }), { fieldPatterns: REDACT_FIELDS });
  }
  options.extraSinks?.forEach((sink, i) => {
    sinks[`extra${i}`] = redactByField(sink, { fieldPatterns: REDACT_FIELDS });
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

/** Flushes and closes the log sinks. */
export async function stopLogging(): Promise<void> {
  await reset();
}
