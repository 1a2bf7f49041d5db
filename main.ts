/**
 * The `agent` executable: the only place that reads `Deno.args`, builds the real command
 * context and exits.
 *
 * @module
 */
import { type CommandContext, runCommand } from "./commands/mod.ts";

/** Builds the real context: process env, stdio, fetch, clock and the stop signal. */
function realContext(): CommandContext {
  const encoder = new TextEncoder();
  let shutdown: AbortController | undefined;
  const hurry = new AbortController();
  const typing: TypedAhead = { bytes: new Uint8Array() };
  return {
    env: Deno.env.toObject(),
    stdout: (text) => Deno.stdout.writeSync(encoder.encode(text + "\n")),
    stderr: (text) => Deno.stderr.writeSync(encoder.encode(text + "\n")),
    readLine: (question) =>
      Deno.stdin.isTerminal()
        ? readTyped(question, { echo: true, typing })
        : Promise.resolve(prompt(question.trimEnd())),
    readSecret: (question) =>
      Deno.stdin.isTerminal()
        ? readTyped(question, { echo: false, typing })
        : Promise.resolve(prompt(question.trimEnd())),
    isTerminal: Deno.stdin.isTerminal() && Deno.stdout.isTerminal(),
    fetch: globalThis.fetch,
    now: Date.now,
    // Only a command that asks for it (gateway run) takes over SIGINT/SIGTERM; every other
    // command keeps the default, so Ctrl-C stops it.
    get shutdownSignal() {
      if (!shutdown) {
        const controller = shutdown = new AbortController();
        for (const signal of ["SIGINT", "SIGTERM"] as const) {
          // The second one, while stopping, asks to stop now.
          Deno.addSignalListener(signal, () => {
            if (controller.signal.aborted) hurry.abort(signal);
            else controller.abort(signal);
          });
        }
      }
      return shutdown.signal;
    },
    hurrySignal: hurry.signal,
  };
}

/**
 * Reads a line from the terminal in raw mode: Enter ends it, Backspace erases, Ctrl-D on an
 * empty line gives null (no more input). Ctrl-C, which raw mode delivers as a byte rather than
 * a SIGINT, exits 130 as the signal would, at every question alike.
 * @param question written before reading
 * @param options `echo`: show what is typed (false for secrets: nothing is shown, nor left in
 *   the terminal's scrollback); `typing`: what was typed ahead of this question, and is left
 *   for the next one
 * @returns the line, without its Enter; null at the end of input
 */
async function readTyped(
  question: string,
  options: { echo: boolean; typing: TypedAhead },
): Promise<string | null> {
  return await inRawMode(question, async (interrupt) => {
    const line = new LineEditor();
    for (;;) {
      const bytes = await nextBytes(options.typing);
      if (bytes === null) return null;
      for (let i = 0; i < bytes.length; i++) {
        const key = line.take(bytes[i]);
        if (key.kind === "end") {
          // What was pasted after this line is the start of the next answer; the \n of a
          // pasted \r\n ends no second one. (Only within what arrived at once: an Enter typed
          // between two questions, in cooked mode, arrives as a lone \n, and is an answer.)
          const lineFeed = bytes[i] === 13 && bytes[i + 1] === 10 ? 1 : 0;
          options.typing.bytes = bytes.slice(i + 1 + lineFeed);
          return line.text();
        }
        if (key.kind === "interrupt") interrupt();
        if (key.kind === "endOfInput") return null;
        const echo = options.echo ? echoOf(key, bytes[i]) : undefined;
        if (echo) await Deno.stdout.write(echo);
      }
    }
  });
}

/**
 * Shows `question` and runs `read` with the terminal in raw mode, then puts it back and ends
 * the line. Killed while reading (SIGTERM, SIGHUP, SIGINT), the terminal must not stay raw with
 * echo off: it is put back and the program exits 130.
 * @param question written once the terminal is raw
 * @param read reads the answer; `interrupt` puts the terminal back and exits 130
 * @returns what `read` returns
 */
async function inRawMode<T>(
  question: string,
  read: (interrupt: () => never) => Promise<T>,
): Promise<T> {
  const encoder = new TextEncoder();
  const signals = ["SIGTERM", "SIGHUP", "SIGINT"] as const;
  const interrupt = (): never => {
    Deno.stdin.setRaw(false);
    Deno.stdout.writeSync(encoder.encode("\n"));
    Deno.exit(130);
  };
  for (const signal of signals) Deno.addSignalListener(signal, interrupt);
  // Raw before the question shows: an Enter typed once it shows must arrive as \r, not turned
  // into \n by the terminal's cooked mode.
  Deno.stdin.setRaw(true);
  await Deno.stdout.write(encoder.encode(question));
  try {
    return await read(interrupt);
  } finally {
    Deno.stdin.setRaw(false);
    for (const signal of signals) Deno.removeSignalListener(signal, interrupt);
    await Deno.stdout.write(encoder.encode("\n"));
  }
}

/**
 * What the terminal shows for a key: the byte typed, or for an erased character as many
 * backspaces, blanks and backspaces again as the columns it took; undefined for other keys.
 */
function echoOf(key: KeyAction, byte: number): Uint8Array | undefined {
  if (key.kind === "echo") return new Uint8Array([byte]);
  if (key.kind !== "erase") return undefined;
  const { columns } = key;
  return new TextEncoder().encode(
    "\b".repeat(columns) + " ".repeat(columns) + "\b".repeat(columns),
  );
}

/**
 * The next bytes typed: those typed ahead of the question first, else what standard input
 * gives next.
 * @param typing what was typed ahead; emptied
 * @returns the bytes, or null at the end of input
 */
async function nextBytes(typing: TypedAhead): Promise<Uint8Array | null> {
  const ahead = typing.bytes;
  typing.bytes = new Uint8Array();
  if (ahead.length > 0) return ahead;
  const chunk = new Uint8Array(256);
  const count = await Deno.stdin.read(chunk);
  return count === null ? null : chunk.slice(0, count);
}

/** Bytes typed or pasted after the Enter that ended an answer: the start of the next one. */
interface TypedAhead {
  bytes: Uint8Array;
}

/**
 * What a key typed does to the line: nothing, end it (Enter), stop the program (Ctrl-C), end
 * the input (Ctrl-D on an empty line), show the byte, or erase a character of `columns`.
 */
type KeyAction =
  | { kind: "none" | "end" | "interrupt" | "endOfInput" | "echo" }
  | { kind: "erase"; columns: number };

/** The line being typed, one byte at a time, in UTF-8. */
class LineEditor {
  #typed: number[] = [];
  /** Where an escape sequence (an arrow or function key) stands. */
  #escape: "none" | "start" | "sequence" = "none";

  /**
   * Takes one byte typed.
   * @param byte a byte from the terminal in raw mode
   * @returns what it does to the line
   */
  take(byte: number): KeyAction {
    if (this.#inEscape(byte)) return { kind: "none" };
    if (byte === 13 || byte === 10) return { kind: "end" };
    if (byte === 3) return { kind: "interrupt" };
    if (byte === 4 && this.#typed.length === 0) return { kind: "endOfInput" };
    if (byte === 127 || byte === 8) {
      const columns = this.#eraseCharacter();
      return columns === 0 ? { kind: "none" } : { kind: "erase", columns };
    }
    if (byte < 32) return { kind: "none" };
    this.#typed.push(byte);
    return { kind: "echo" };
  }

  /** The line typed so far. */
  text(): string {
    return new TextDecoder().decode(new Uint8Array(this.#typed));
  }

  /**
   * Whether `byte` belongs to an escape sequence. Arrow and function keys send ESC [ ... or
   * ESC O ..., ending with a byte from @ to ~: not part of the answer. After a lone Escape, the
   * next key is typed as usual.
   */
  #inEscape(byte: number): boolean {
    if (this.#escape === "sequence") {
      if (byte >= 0x40 && byte <= 0x7e) this.#escape = "none";
      return true;
    }
    if (this.#escape === "start") {
      this.#escape = byte === 0x5b || byte === 0x4f ? "sequence" : "none";
      if (this.#escape === "sequence") return true;
    }
    if (byte !== 27) return false;
    this.#escape = "start";
    return true;
  }

  /**
   * Erases the last character: its UTF-8 continuation bytes (10xxxxxx), then its first byte.
   * @returns the columns it took on the terminal; 0 when the line is empty
   */
  #eraseCharacter(): number {
    const typed = this.#typed;
    if (typed.length === 0) return 0;
    const character: number[] = [];
    while (typed.length > 1 && (typed.at(-1)! & 0xc0) === 0x80) character.unshift(typed.pop()!);
    character.unshift(typed.pop()!);
    return columnsOf(new TextDecoder().decode(new Uint8Array(character)));
  }
}

/**
 * How many terminal columns a character takes: two for East Asian wide and full-width
 * characters and emoji (Unicode's East Asian Width W and F, in the main blocks), else one.
 * @param character one character
 */
function columnsOf(character: string): number {
  const code = character.codePointAt(0) ?? 0;
  const wide = (code >= 0x1100 && code <= 0x115f) || (code >= 0x2e80 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) || (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) || (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) || (code >= 0x1f300 && code <= 0x1faff) ||
    (code >= 0x20000 && code <= 0x3fffd);
  return wide ? 2 : 1;
}

/**
 * Makes every file and folder the CLI creates from now on private to the user (umask 077): the
 * state database holds payloads and the log their events, and neither SQLite (which creates
 * `gateway.db`, and gives its `-wal` and `-shm` the same mode) nor LogTape (a log file after
 * rotation) takes a mode. Programs started from here (a command agent) inherit it. Not on
 * Windows, which has no umask: files there take their folder's access rules.
 */
function privateFiles(): void {
  if (Deno.build.os !== "windows") Deno.umask(0o077);
}

/**
 * Runs the CLI and turns errors into exit codes: a typed error's own code (usage 2, others 1,
 * an unavailable state database included) with its message; anything unexpected 1 with its
 * stack.
 */
async function main(argv: string[]): Promise<number> {
  privateFiles();
  const ctx = realContext();
  try {
    return await runCommand(argv, ctx);
  } catch (error) {
    if (error instanceof Error && typeof (error as { exitCode?: unknown }).exitCode === "number") {
      ctx.stderr(`Error: ${error.message}`);
      return (error as Error & { exitCode: number }).exitCode;
    }
    ctx.stderr(`Error: ${error instanceof Error ? error.stack : String(error)}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
