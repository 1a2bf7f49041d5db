/**
 * Running a transform program (docs/subscriptions.md#transforms): the payload's JSON on its
 * stdin, its stdout read up to a bound, the end of its stderr kept for the error, killed with
 * everything it started at the time limit or when the gateway stops. It runs in a session of
 * its own, as a `command` agent does (`lib/agents/own_session.ts`).
 *
 * @module
 */
import { killProcessGroup, spawnInOwnSession } from "../agents/own_session.ts";
import { WITHHELD_VARIABLES } from "../agents/command.ts";
import { errorMessage } from "../errors.ts";

/** A transform that did not give JSON to render from: its exit, its output, or its time. */
export class TransformError extends Error {
  /** @param message what went wrong, with the end of the program's stderr when it said why */
  constructor(message: string) {
    super(message);
    this.name = "TransformError";
  }
}

/** Most bytes of stdout a transform may print (1 MiB): more fails the run, and it is killed. */
export const MAX_TRANSFORM_OUTPUT_BYTES = 1_048_576;

/** Bytes of stderr kept (its end), and characters of them quoted in the error. */
const STDERR_TAIL_BYTES = 4096;
const STDERR_TAIL_CHARS = 500;

/**
 * How long, in ms, stdout and stderr may stay open after the program exited: a background
 * child holding them would otherwise hold the run to its time limit.
 */
const PIPE_GRACE_MS = 500;

/** What a finished program came to. */
export interface ProgramOutput {
  status: Deno.CommandStatus;
  /** Its stdout, at most {@link MAX_TRANSFORM_OUTPUT_BYTES}. */
  stdout: Uint8Array;
  /** The end of its stderr, decoded and trimmed. */
  stderr: string;
}

/**
 * Runs `argv` with `input` on stdin, within `timeoutSeconds`.
 * @param argv the program and its arguments (`transformArgv`)
 * @param input the payload's JSON text
 * @param options `timeoutSeconds`: the time limit; `signal`: kills it (the gateway stops);
 *   `env`: its environment, less the gateway's secrets (@default {the gateway's own})
 * @returns what it printed, once it exited
 * @throws TransformError when it cannot be started, prints too much, exits with a failure (the
 *   end of its stderr quoted), outlives the limit, is stopped, or its output cannot be read
 */
export async function runProgram(
  argv: readonly string[],
  input: string,
  options: { timeoutSeconds: number; signal?: AbortSignal; env?: Record<string, string> },
): Promise<ProgramOutput> {
  const [program, ...args] = argv;
  let child: Deno.ChildProcess;
  try {
    child = spawnInOwnSession(program, args, withoutSecrets(options.env ?? Deno.env.toObject()));
  } catch (error) {
    throw new TransformError(`Cannot start the transform "${program}": ${errorMessage(error)}`);
  }
  const cut = { timedOut: false, tooLong: false, stopped: false };
  const kill = (why: keyof typeof cut) => {
    cut[why] = true;
    killProcessGroup(child);
  };
  const timer = setTimeout(() => kill("timedOut"), options.timeoutSeconds * 1000);
  const stop = () => kill("stopped");
  options.signal?.addEventListener("abort", stop, { once: true });
  if (options.signal?.aborted) stop();
  try {
    const output = await readAll(child, input, () => kill("tooLong")).catch((error) => {
      killProcessGroup(child);
      throw new TransformError(`Cannot read the transform "${program}": ${errorMessage(error)}`);
    });
    if (cut.tooLong) {
      throw new TransformError(
        `The transform "${program}" printed more than ${MAX_TRANSFORM_OUTPUT_BYTES} bytes`,
      );
    }
    if (output.status.success) return output;
    if (cut.stopped) throw new TransformError(`The transform "${program}" was stopped`);
    if (cut.timedOut) {
      throw new TransformError(
        `The transform "${program}" did not finish within ${options.timeoutSeconds} s and was ` +
          `killed${said(output.stderr)}`,
      );
    }
    const { code, signal } = output.status;
    const how = signal ? `was killed by ${signal}` : `exited with ${code}`;
    throw new TransformError(`The transform "${program}" ${how}${said(output.stderr)}`);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", stop);
  }
}

/** `: <the end of stderr>`, or nothing when it said nothing. */
export function said(stderr: string): string {
  return stderr ? `: ${stderr.slice(-STDERR_TAIL_CHARS)}` : "";
}

/** The environment less {@link WITHHELD_VARIABLES}: the program reads untrusted payloads. */
function withoutSecrets(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(([name]) => !WITHHELD_VARIABLES.has(name)),
  );
}

/** Writes the input, reads both pipes, waits for the exit and then briefly for the pipes. */
async function readAll(
  child: Deno.ChildProcess,
  input: string,
  onOverflow: () => void,
): Promise<ProgramOutput> {
  const stopReading = new AbortController();
  const pipes = Promise.all([
    readBounded(child.stdout, MAX_TRANSFORM_OUTPUT_BYTES, {
      onOverflow,
      signal: stopReading.signal,
    }),
    readBounded(child.stderr, STDERR_TAIL_BYTES, { keepLast: true, signal: stopReading.signal }),
    writeInput(child, input),
  ]);
  pipes.catch(() => {}); // judged after the exit
  const status = await child.status;
  const timer = setTimeout(() => {
    killProcessGroup(child);
    stopReading.abort();
  }, PIPE_GRACE_MS);
  try {
    const [stdout, stderr] = await pipes;
    return { status, stdout, stderr: new TextDecoder().decode(stderr).trim() };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads a stream to its end (or until `signal` aborts), keeping at most `maxBytes`: the first
 * ones, or the last with `keepLast`; `onOverflow` is called once past the bound.
 */
async function readBounded(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
  options: { keepLast?: boolean; onOverflow?: () => void; signal: AbortSignal },
): Promise<Uint8Array> {
  const reader = stream.getReader();
  const cancel = () => reader.cancel().catch(() => {});
  options.signal.addEventListener("abort", cancel, { once: true });
  let kept = new Uint8Array(0);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return kept;
      const joined = new Uint8Array(kept.length + value.length);
      joined.set(kept);
      joined.set(value, kept.length);
      if (joined.length <= maxBytes) kept = joined;
      else if (options.keepLast) kept = joined.slice(-maxBytes);
      else {
        kept = joined.slice(0, maxBytes);
        options.onOverflow?.();
        return kept;
      }
    }
  } finally {
    options.signal.removeEventListener("abort", cancel);
    reader.releaseLock();
  }
}

/** Writes the payload and closes stdin; a program that does not read it is not an error. */
async function writeInput(child: Deno.ChildProcess, input: string): Promise<void> {
  const writer = child.stdin.getWriter();
  try {
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
  } catch {
    // EPIPE: it exited without reading; its exit status tells the rest.
  }
}
