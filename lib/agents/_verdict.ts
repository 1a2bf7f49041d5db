/**
 * What a finished run of a `command` agent's program comes to: its answer, or the AgentError
 * that says why there is none, retryable or permanent (docs/configuration.md#the-agent-section).
 *
 * @module
 */
import { AgentError } from "../errors.ts";

/**
 * Largest answer a `command` agent may print, in bytes (1 MiB): more is a failure, and the
 * program is killed. A larger answer would become one huge log line and a huge row of the
 * state database.
 */
export const MAX_OUTPUT_BYTES = 1_048_576;

/** Characters of standard error quoted in an error message (its end). */
const STDERR_TAIL_CHARS = 500;

/**
 * What a run of a `command` agent came to: the program's exit, what it printed, and what cut it
 * short.
 */
export interface ProgramRun extends Deno.CommandStatus {
  /** Standard output, at most {@link MAX_OUTPUT_BYTES}. */
  stdout: Uint8Array;
  /** The end of standard error, as many bytes as the runner keeps. */
  stderr: Uint8Array;
  /** The program printed more than {@link MAX_OUTPUT_BYTES} and was killed. */
  tooLong: boolean;
  /** The time limit passed before the program exited, and it was killed. */
  timedOut: boolean;
}

/**
 * The answer of a finished run, or why there is none.
 * @param program the program's name, as error messages quote it
 * @param run what the run came to
 * @param options the time limit in seconds, and whether the gateway stopped the run
 * @returns the answer: stdout, trimmed
 * @throws AgentError retryable when the output was too long, or when the program failed after
 *   the gateway's stop or the time limit; else as {@link answerOf} says
 */
export function verdictOf(
  program: string,
  run: ProgramRun,
  { timeoutSeconds, stopped }: { timeoutSeconds: number; stopped: boolean },
): string {
  if (run.tooLong) {
    throw new AgentError(
      `The agent command "${program}" printed more than ${MAX_OUTPUT_BYTES} bytes`,
    );
  }
  // A program that exited successfully keeps its answer, even if the stop or the time limit
  // came meanwhile.
  if (stopped && !run.success) {
    throw new AgentError(`The agent command "${program}" was stopped: the gateway is stopping`);
  }
  if (run.timedOut && !run.success) {
    throw new AgentError(
      `The agent command "${program}" did not finish within ${timeoutSeconds} s`,
    );
  }
  return answerOf(program, run);
}

/**
 * The answer of a program that exited by itself: its stdout, trimmed.
 * @throws AgentError retryable and `unavailable` for a failed exit (with the end of stderr) or
 *   an empty stdout: the program's own failure, which the runs of other events are likely to
 *   meet too, so that the worker pauses new runs once two events in a row failed that way. A
 *   death by a signal (the kernel's out-of-memory killer, say) may be the prompt's own, and is
 *   only retryable. What {@link startFailure} finds is thrown as that says
 */
function answerOf(program: string, run: ProgramRun): string {
  const decoder = new TextDecoder();
  const wholeStderr = decoder.decode(run.stderr).trim();
  const notStarted = startFailure(program, run, wholeStderr);
  if (notStarted) throw notStarted;
  // Its last words say why, as often after an exit 0 with nothing printed as after a failure.
  const stderr = wholeStderr.slice(-STDERR_TAIL_CHARS);
  const said = stderr ? `: ${stderr}` : "";
  if (!run.success) {
    const how = run.signal ? `was killed by ${run.signal}` : `exited with ${run.code}`;
    throw new AgentError(`The agent command "${program}" ${how}${said}`, {
      unavailable: !run.signal,
    });
  }
  const answer = decoder.decode(run.stdout).trim();
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
  status: Deno.CommandStatus,
  stderr: string,
): AgentError | undefined {
  if (status.code !== 126 && status.code !== 127) return undefined;
  const report = stderr.split("\n", 1)[0];
  if (!/^setsid: (?:failed to execute|can't execute) /.test(report)) return undefined;
  const passing = /Text file busy|Cannot allocate memory|Resource temporarily unavailable/i
    .test(report);
  return new AgentError(`Cannot start the agent command "${program}": ${report}`, {
    permanent: !passing,
    unavailable: passing,
  });
}
