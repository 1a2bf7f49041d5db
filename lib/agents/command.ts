/**
 * The `command` provider: runs a configured program (no shell) with the prompt on stdin and
 * takes its stdout as the answer. Works with any CLI agent that reads a prompt from stdin and
 * prints a reply, e.g. `command: ["claude", "--print"]` or `["llm", "-m", "gpt-4o-mini"]`.
 *
 * Standard input is the system prompt (base prompt and skills), a blank line, then the event
 * prompt, so a program that takes a single prompt still gets the skills. The environment is the
 * gateway's, plus `AGENT_EVENT_ID`, minus the gateway's own secrets ({@link WITHHELD_VARIABLES}):
 * the program reads untrusted payload text, so a prompt injection must not find the webhook
 * secret or the bot tokens there. Its own credentials (an LLM key) pass through.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { errorMessage } from "../errors.ts";
import { settledWithin } from "../worker/wait.ts";
import { AgentError, ConfigError } from "../errors.ts";
import type { AgentDeps, AgentRunner, AgentSettings } from "./mod.ts";

const STDERR_TAIL_CHARS = 500;

/**
 * Largest answer a `command` agent may print, in bytes (1 MiB): more is a failure, and the
 * program is killed. An answer of 50 MB once became one 50 MB log line, and 150 MB of database.
 */
export const MAX_OUTPUT_BYTES = 1_048_576;

/** Variables never passed to the agent program: the gateway's secrets and target tokens. */
export const WITHHELD_VARIABLES: ReadonlySet<string> = new Set([
  "WEBHOOK_SECRET",
  "TELEGRAM_BOT_TOKEN",
  "DISCORD_BOT_TOKEN",
  "SLACK_BOT_TOKEN",
  "GITHUB_TOKEN",
  "GH_TOKEN",
  "GITLAB_TOKEN",
]);

/**
 * Builds a runner that executes `settings.command`.
 * @param settings `command` (program and arguments) and `timeoutSeconds`
 * @param deps `env`: the program's environment, less {@link WITHHELD_VARIABLES} (nothing else
 *   is inherited)
 * @returns the runner. A run fails with a retryable AgentError on a non-zero exit (with the end
 *   of stderr), an empty stdout, a death by a signal, or a timeout (the program and its
 *   children are killed), the first two `unavailable` (the program's own failure, not only
 *   this prompt's: see {@link answerOf}); with a permanent one when the program cannot be
 *   started (not found, not executable, not a program). The run ends when the program exits:
 *   children still holding its stdout or stderr {@link PIPE_GRACE_AFTER_EXIT_MS} later are
 *   killed, and an exit 0 with output is an answer
 * @throws ConfigError when `command` is missing or empty
 */
export function createCommandRunner(settings: AgentSettings, deps: AgentDeps): AgentRunner {
  const argv = settings.command ?? [];
  if (argv.length === 0 || !argv[0]) {
    throw new ConfigError("agent.command must list the program and its arguments");
  }
  const [program, ...args] = argv;
  const env = Object.fromEntries(
    Object.entries(deps.env).filter((entry): entry is [string, string] =>
      entry[1] !== undefined && !WITHHELD_VARIABLES.has(entry[0])
    ),
  );

  return async ({ prompt, systemPrompt, eventId, signal }) => {
    const input = systemPrompt ? `${systemPrompt}\n\n${prompt}` : prompt;
    let child: Deno.ChildProcess;
    try {
      // Its own session and process group, so a timeout also kills what the program started.
      child = spawnInOwnSession(program, args, { ...env, AGENT_EVENT_ID: eventId });
    } catch (error) {
      const permanent = error instanceof Deno.errors.NotFound ||
        error instanceof Deno.errors.PermissionDenied;
      // Not found or not allowed will not change by itself; the rest (too many processes or
      // open files) holds for every run now, as a failed exit does.
      throw new AgentError(`Cannot start the agent command "${program}": ${errorMessage(error)}`, {
        permanent,
        unavailable: !permanent,
        cause: error,
      });
    }
    // Noted while it runs: if the gateway dies meanwhile, the next start kills the group.
    deps.processNotes?.started(child.pid, eventId);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, settings.timeoutSeconds * 1000);
    // A gateway that stops must not leave the program running: after a restart the event runs
    // again, and two programs would work on it at once.
    const stop = () => killGroup(child);
    signal?.addEventListener("abort", stop, { once: true });
    if (signal?.aborted) stop();
    const stopReading = new AbortController();
    try {
      let tooLong = false;
      const pipes = Promise.all([
        readUpTo(child.stdout, MAX_OUTPUT_BYTES, {
          onOverflow: () => {
            tooLong = true;
            killGroup(child);
          },
          signal: stopReading.signal,
        }),
        readUpTo(child.stderr, STDERR_TAIL_BYTES, { keep: "last", signal: stopReading.signal }),
        writeInput(child, input),
      ]);
      // Handled later, after the exit; this only keeps an early read error from counting as
      // an unhandled rejection meanwhile.
      pipes.catch(() => {});
      const status = await child.status;
      // The time limit is the program's: once it has exited, only the grace period remains.
      clearTimeout(timer);
      if (!await settledWithin(pipes, PIPE_GRACE_AFTER_EXIT_MS)) {
        // Something the program started still holds its stdout or stderr (a daemon, a
        // telemetry flusher): the answer is complete, so end that and keep what was read.
        killGroup(child);
        stopReading.abort();
      }
      const [stdout, stderr] = await pipes;
      const output = { ...status, stdout, stderr };
      if (tooLong) {
        throw new AgentError(
          `The agent command "${program}" printed more than ${MAX_OUTPUT_BYTES} bytes`,
        );
      }
      // A program that exited successfully keeps its answer, even if the stop or the time
      // limit came meanwhile.
      if (signal?.aborted && !output.success) {
        throw new AgentError(`The agent command "${program}" was stopped: the gateway is stopping`);
      }
      if (timedOut && !output.success) {
        throw new AgentError(
          `The agent command "${program}" did not finish within ${settings.timeoutSeconds} s`,
        );
      }
      return answerOf(program, output);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
      deps.processNotes?.ended(child.pid);
    }
  };
}

/**
 * How long, in milliseconds, stdout and stderr may stay open after the program has exited
 * (1 s). A background child that inherited them (a wrapper's helper, a daemon, a telemetry
 * flusher) would otherwise hold the run until the timeout; past this grace period the rest of
 * the program's process group is killed and the run is judged on the program's exit status and
 * the output read so far. Long enough for output still in the pipe to be read.
 */
export const PIPE_GRACE_AFTER_EXIT_MS = 1_000;

/** Bytes of standard error kept for the error message (its end). */
const STDERR_TAIL_BYTES = 4096;

/**
 * Reads a stream to its end, or until `signal` aborts, keeping at most `maxBytes`: the first
 * ones, or with `keep: "last"` the last ones. `onOverflow` is called once when the stream
 * brings more. An abort cancels the stream and returns what was kept so far.
 */
async function readUpTo(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
  options: { keep?: "first" | "last"; onOverflow?: () => void; signal?: AbortSignal } = {},
): Promise<Uint8Array> {
  const reader = stream.getReader();
  // Cancelling ends the pending read at once, so no read is left running after an abort.
  const cancel = () => reader.cancel().catch(() => {});
  options.signal?.addEventListener("abort", cancel, { once: true });
  let kept = new Uint8Array(0);
  let overflowed = false;
  try {
    while (true) {
      const { done, value: chunk } = await reader.read();
      if (done) return kept;
      // Past the limit only the last bytes can still change what is kept; the rest drains.
      if (overflowed && options.keep !== "last") continue;
      const joined = new Uint8Array(kept.length + chunk.length);
      joined.set(kept);
      joined.set(chunk, kept.length);
      if (joined.length <= maxBytes) {
        kept = joined;
        continue;
      }
      kept = options.keep === "last" ? joined.slice(-maxBytes) : joined.slice(0, maxBytes);
      if (!overflowed) {
        overflowed = true;
        options.onOverflow?.();
      }
    }
  } finally {
    options.signal?.removeEventListener("abort", cancel);
    reader.releaseLock();
  }
}

/**
 * The `setsid` program (util-linux, busybox), in `/usr/bin` or `/bin` or else on the gateway's
 * PATH (NixOS has neither folder); undefined where there is none (macOS), and
 * {@link spawnInOwnSession} then uses Deno's `detached`.
 */
export const SETSID: string | undefined = (() => {
  try {
    return programPath("setsid", `/usr/bin:/bin:${Deno.env.get("PATH") ?? ""}`);
  } catch {
    return undefined;
  }
})();

/**
 * Starts `program` with its three standard streams piped, in a session (and process group) of
 * its own whose id is the child's pid, as Deno's `detached` does. But `detached` forks the
 * whole gateway to do it, and copying its page tables holds the event loop: 12.9 ms a start
 * (20.3 at most) in a process of 258 MiB on the 2-core machine, 20.1 ms in one of 600, against
 * 2.0 and 1.8 ms through `setsid` (`deno task bench:spawn`). So where there is a `setsid`
 * program, that is spawned without a fork, and it makes the session, then executes the program
 * under the same pid; elsewhere (macOS), `detached`. Through `setsid`, a program that cannot be
 * executed after all (a script whose interpreter is missing, a file this user may not run)
 * shows as `setsid`'s exit 126 or 127: see {@link startFailure}.
 * @param program a name looked up on `env.PATH` (on the gateway's own PATH when `env` has
 *   none, then on `/usr/bin:/bin`), or a path with a slash
 * @param args its arguments
 * @param env its whole environment
 * @param options `setsid`: the `setsid` program, or null to use `detached` (@default the one
 *   found in `/usr/bin`, `/bin` or on the gateway's PATH)
 * @returns the running child
 * @throws Deno.errors.NotFound when `program` is not found or not a file, PermissionDenied when
 *   it is not executable, and what `Deno.Command.spawn` throws
 */
export function spawnInOwnSession(
  program: string,
  args: string[],
  env: Record<string, string>,
  { setsid = SETSID }: { setsid?: string | null } = {},
): Deno.ChildProcess {
  const options = {
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env,
    clearEnv: true,
  } as const;
  if (!setsid) return new Deno.Command(program, { ...options, args, detached: true }).spawn();
  const path = programPath(program, env.PATH ?? Deno.env.get("PATH") ?? "/usr/bin:/bin");
  return new Deno.Command(setsid, { ...options, args: ["--", path, ...args] }).spawn();
}

/**
 * Where `program` is, found as `execvp` finds it: a name with a slash is a path, any other is
 * looked for in each folder of `searchPath` (an empty entry is the working folder).
 * @returns its absolute path
 * @throws Deno.errors.NotFound when there is no such file; PermissionDenied when the files
 *   found are not executable
 */
function programPath(program: string, searchPath: string): string {
  const candidates = program.includes("/")
    ? [program]
    : searchPath.split(":").map((folder) => join(folder || ".", program));
  let notExecutable: string | undefined;
  let notFile: string | undefined;
  for (const candidate of candidates) {
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(candidate);
    } catch {
      continue;
    }
    if (!info.isFile) {
      notFile ??= candidate;
      continue;
    }
    if (info.mode !== null && (info.mode & 0o111) === 0) {
      notExecutable ??= candidate;
      continue;
    }
    return resolve(candidate);
  }
  if (notExecutable) throw new Deno.errors.PermissionDenied(`${notExecutable} is not executable`);
  if (program.includes("/")) {
    throw new Deno.errors.NotFound(notFile ? `${notFile} is not a file` : "no such file");
  }
  throw new Deno.errors.NotFound("not found on PATH");
}

/**
 * The answer of a program that exited by itself: its stdout, trimmed.
 * @throws AgentError retryable and `unavailable` for a failed exit (with the end of stderr) or
 *   an empty stdout: the program's own failure, which the runs of other events are likely to
 *   meet too, so that the worker pauses new runs once two events in a row failed that way (see
 *   `lib/worker/_pause.ts`). A broken program tried for every event of a burst at once had cut
 *   agent-mode ingest to 449 req/s, against 7,689 with the pause (`deno task bench:spawn`). A
 *   death by a signal (the kernel's out-of-memory killer, say) may be the prompt's own, and is
 *   only retryable. What {@link startFailure} finds is thrown as that says
 */
function answerOf(
  program: string,
  output: Deno.CommandStatus & { stdout: Uint8Array; stderr: Uint8Array },
): string {
  const decoder = new TextDecoder();
  const wholeStderr = decoder.decode(output.stderr).trim();
  const notStarted = startFailure(program, output, wholeStderr);
  if (notStarted) throw notStarted;
  // Its last words say why, as often after an exit 0 with nothing printed as after a failure.
  const stderr = wholeStderr.slice(-STDERR_TAIL_CHARS);
  const said = stderr ? `: ${stderr}` : "";
  if (!output.success) {
    const how = output.signal ? `was killed by ${output.signal}` : `exited with ${output.code}`;
    throw new AgentError(`The agent command "${program}" ${how}${said}`, {
      unavailable: !output.signal,
    });
  }
  const answer = decoder.decode(output.stdout).trim();
  if (!answer) {
    throw new AgentError(`The agent command "${program}" printed nothing${said}`, {
      unavailable: true,
    });
  }
  return answer;
}

/**
 * `setsid`'s own report that it could not execute the program (util-linux: exit 127 for a
 * missing file, 126 for the other errors, "setsid: failed to execute <path>: <reason>"; busybox:
 * "setsid: can't execute '<path>': <reason>"), which Deno's spawn would have thrown: a script
 * whose interpreter is missing, a file this user may not execute, one that is not a program.
 * @returns the AgentError to throw: permanent, as a program that cannot be found is, unless the
 *   reason may pass (a file being written, memory, a process limit), then retryable and
 *   `unavailable`; or undefined when the program did run
 */
function startFailure(
  program: string,
  output: Deno.CommandStatus,
  stderr: string,
): AgentError | undefined {
  if (output.code !== 126 && output.code !== 127) return undefined;
  const report = stderr.split("\n", 1)[0];
  if (!/^setsid: (?:failed to execute|can't execute) /.test(report)) return undefined;
  const passing = /Text file busy|Cannot allocate memory|Resource temporarily unavailable/i
    .test(report);
  return new AgentError(`Cannot start the agent command "${program}": ${report}`, {
    permanent: !passing,
    unavailable: passing,
  });
}

/** Writes the prompt and closes stdin; a program that exits without reading is not an error. */
async function writeInput(child: Deno.ChildProcess, input: string): Promise<void> {
  const writer = child.stdin.getWriter();
  try {
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
  } catch {
    // EPIPE: the program did not read its input; its exit status tells the rest.
  }
}

/**
 * Kills the program's process group, or the program alone when there is no group yet: just
 * after the spawn, `setsid` may not have made it, and killing `setsid` then means the program
 * never starts.
 */
function killGroup(child: Deno.ChildProcess): void {
  try {
    Deno.kill(-child.pid, "SIGKILL");
  } catch {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }
}
