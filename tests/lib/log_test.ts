import assert from "node:assert/strict";
import { join } from "node:path";
import { getLogger, type LogRecord } from "@logtape/logtape";
import {
  CONSOLE_BUFFER_LINES,
  lineFormatter,
  lineTemplate,
  startLogging,
  stopLogging,
  writeLine,
} from "../../lib/log.ts";
import { ConfigError } from "../../lib/errors.ts";
import { eventually } from "../_helpers.ts";

function record(
  timestamp: number,
  message: unknown[],
  properties: Record<string, unknown>,
): LogRecord {
  return {
    timestamp,
    level: "info",
    category: ["agent", "ingest"],
    message,
    rawMessage: "",
    properties,
  };
}

const T = Date.parse("2026-11-21T12:00:00.000Z");

Deno.test("lineFormatter writes time, level, category, message and key=value fields on one line", () => {
  const line = lineFormatter(record(T, ["accepted ", "gh", " ", "issues.opened", ""], {
    subscription: "gh",
    event: "issues.opened",
    attempts: 2,
    missing: undefined,
    reason: 'bad "quote" = yes',
    empty: "",
  }));
  assert.equal(
    line,
    "2026-11-21T12:00:00.000Z INFO ingest accepted gh issues.opened subscription=gh " +
      'event=issues.opened attempts=2 reason="bad \\"quote\\" = yes" empty=""\n',
  );
});

Deno.test("lineFormatter redacts fields named like secrets and keeps each record on one line", () => {
  const line = lineFormatter(record(T, ["rejected ", "gh\r\nFAKE 2026 line"], {
    secret: "s3cret",
    api_key: "k",
    Authorization: "Bearer t",
    subscription: "a\nb",
  }));
  assert.equal(line.split("\n").length, 2, "one line and its newline");
  assert.doesNotMatch(line, /s3cret|Bearer t|=k\b/);
  assert.match(line, /secret=\[REDACTED\] api_key=\[REDACTED\] Authorization=\[REDACTED\]/);
  assert.match(line, /rejected gh FAKE 2026 line/);
});

Deno.test("lineFormatter shows control characters from requests as escapes, not raw", () => {
  const name = "x\x1b[31mFAKE\x1b[2K\x07\x00\x7f\x9b\tend";
  const line = lineFormatter(record(T, ["rejected ", name], { subscription: name }));
  const raw = [...line.slice(0, -1)].filter((char) => {
    const code = char.charCodeAt(0);
    return (code < 0x20 && char !== "\t") || (code >= 0x7f && code <= 0x9f);
  });
  assert.deepEqual(raw, [], "no raw control character");
  assert.match(line, /rejected x\\u001b\[31mFAKE\\u001b\[2K\\u0007\\u0000\\u007f\\u009b\tend/);
  assert.ok(line.endsWith("\n"));
});

Deno.test("lineFormatter shows bidirectional overrides as escapes and line separators as spaces", () => {
  const line = lineFormatter(record(T, ["push\u202egnp.exe\u2066x\u2028y"], {}));
  assert.match(line, /push\\u202egnp\.exe\\u2066x y\n$/);
});

Deno.test("lineFormatter gives every record its own time", () => {
  const times = [T, T, T + 1, T + 60_000].map((ms) =>
    lineFormatter(record(ms, ["x"], {})).slice(0, 24)
  );
  assert.deepEqual(times, [
    "2026-11-21T12:00:00.000Z",
    "2026-11-21T12:00:00.000Z",
    "2026-11-21T12:00:00.001Z",
    "2026-11-21T12:01:00.000Z",
  ]);
});

Deno.test("a log that cannot be created is a one-line error naming it, not a stack trace", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agent-log-" });
  try {
    // `logs` is a file here, so its folder cannot be made (as on a read-only home, even as root).
    await Deno.writeTextFile(join(dir, "logs"), "");
    const file = join(dir, "logs", "gateway.log");
    await assert.rejects(
      startLogging({ file }),
      (error: Error) =>
        error instanceof ConfigError &&
        error.message.startsWith(`Cannot write the gateway log ${file}: `),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a line reaches gateway.log within about a second while the process keeps running", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agent-log-" });
  const file = join(dir, "logs", "gateway.log");
  await startLogging({ file });
  try {
    getLogger(["agent", "ingest"]).info("accepted {subscription}", { subscription: "gh" });
    const started = performance.now();
    const text = await eventually(async () => {
      const text = await Deno.readTextFile(file).catch(() => "");
      return text.includes("accepted gh") ? text : undefined;
    }, { timeoutMs: 5_000, what: "the line in gateway.log" });
    assert.match(text, /INFO ingest accepted gh subscription=gh\n$/);
    assert.ok(performance.now() - started < 1_900, "written by the once-a-second flush");
  } finally {
    await stopLogging();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeLine writes the record and the line that logger.info writes for the same template", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agent-log-" });
  const file = join(dir, "gateway.log");
  const records: LogRecord[] = [];
  await startLogging({ file, extraSinks: [(record) => records.push(record)] });
  const template = "accepted {subscription} {event}: {reason}";
  const properties = {
    subscription: "gh",
    event: "issues.opened",
    reason: "x y",
    delivery_id: "d-1",
  };
  try {
    const logger = getLogger(["agent", "ingest"]);
    logger.info(template, properties);
    writeLine(logger, "info", lineTemplate(template), properties);
    logger.warn(template, properties);
    writeLine(logger, "warning", lineTemplate(template), properties);
    // Below the configured level: dropped, as logger.debug drops it.
    writeLine(logger, "debug", lineTemplate(template), properties);
  } finally {
    await stopLogging();
  }
  const [viaInfo, viaWriteLine, viaWarn, viaWriteWarning] = records.map((record) => ({
    ...record,
    message: [...record.message],
    properties: { ...record.properties },
    timestamp: 0,
  }));
  assert.equal(records.length, 4);
  assert.deepEqual(viaWriteLine, viaInfo);
  assert.deepEqual(viaWriteWarning, viaWarn);
  const lines = (await Deno.readTextFile(file)).trimEnd().split("\n").map((line) => line.slice(24));
  const text = "ingest accepted gh issues.opened: x y subscription=gh event=issues.opened " +
    'reason="x y" delivery_id=d-1';
  assert.deepEqual(lines, [
    ` INFO ${text}`,
    ` INFO ${text}`,
    ` WARNING ${text}`,
    ` WARNING ${text}`,
  ]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("lineTemplate refuses what LogTape would read differently", () => {
  assert.deepEqual(lineTemplate("ping {subscription}").keys, ["subscription"]);
  assert.deepEqual(lineTemplate("no placeholder").texts, ["no placeholder"]);
  for (const raw of ["a {b.c}", "a {{b}}", "a {b", "a }"]) {
    assert.throws(() => lineTemplate(raw), /not a plain log template/, raw);
  }
});

Deno.test("a console that stops taking lines holds a bounded backlog, and the file gets every line", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "gateway.log");
  let written = 0;
  let unblock!: () => void;
  const blocked = new Promise<void>((resolve) => unblock = resolve);
  // Standard error on a pipe nobody reads: the first write never finishes until unblocked.
  const console = new WritableStream<Uint8Array>({
    async write() {
      await blocked;
      written += 1;
    },
  });
  await startLogging({ file, console });
  const log = getLogger(["agent", "ingest"]);
  const lines = 20 * CONSOLE_BUFFER_LINES;
  try {
    for (let i = 0; i < lines; i++) log.warn("rejected {n}: unknown subscription", { n: i });
  } finally {
    unblock();
    await stopLogging();
  }
  // Unbounded, each line waited for the console: all 20,000 would be written after the stop.
  assert.ok(written > 0 && written <= 3 * CONSOLE_BUFFER_LINES, `${written} lines written`);
  const text = await Deno.readTextFile(file);
  assert.equal(text.split("\n").filter((line) => line.includes("rejected")).length, lines);
  await Deno.remove(dir, { recursive: true });
});
