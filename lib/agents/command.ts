/**
 * The `command` provider: runs a configured program (no shell) with the prompt on stdin and
 * takes its stdout as the answer. Works with any CLI agent that reads a prompt from stdin and
 * prints a reply, e.g. `command: ["claude", "--print"]` or `["llm", "-m", "gpt-4o-mini"]`.
 *
 * Standard input is the system prompt (base prompt and skills), a blank line, then the event
 * prompt, so a program that takes a single prompt still gets the skills. The environment is the
 * gateway's, plus `AGENT_EVENT_ID` (and `AGENT_SESSION_FILE` for an event of a conversation, the
 * earlier turns as JSON: docs/subscriptions.md#conversations), minus the gateway's own secrets
 * ({@link WITHHELD_VARIABLES}): the program reads untrusted payload text, so a prompt injection
 * must not find the webhook secret or the bot tokens there. Its own credentials (an LLM key) pass
 * through.
 *
 * The program runs in a session of its own (`own_session.ts`), so that a timeout or a stop
 * kills what it started too.
 *
 * @module
 */
import { settledWithin } from "../worker/wait.ts";
import { AgentError, ConfigError, errorMessage } from "../errors.ts";
import { readUpTo, writeInput } from "./_pipes.ts";
import { MAX_OUTPUT_BYTES, type ProgramRun, verdictOf } from "./_verdict.ts";
import { killProcessGroup, spawnInOwnSession } from "./own_session.ts";
import { writeConversationFile } from "./conversation.ts";
import type { AgentDeps, AgentRequest, AgentRunner, AgentSettings } from "./mod.ts";

export { MAX_OUTPUT_BYTES };

/**
 * How long, in milliseconds, stdout and stderr may stay open after the program has exited
 * (1 s). A background child that inherited them (a wrapper's helper, a daemon, a telemetry
 * flusher) would otherwise hold the run until the timeout; past this grace period the rest of
 * the program's process group is killed and the run is judged on the program's exit status and
 * the output read so far. Long enough for output still in the pipe to be read.
 */
export const PIPE_GRACE_AFTER_EXIT_MS = 1_000;

/**
 * Variables never passed to the agent program or a transform: the gateway's secrets (the
 * webhook secret; the state database's URL, which holds its password, and libpq's password
 * variables) and the target tokens.
 */
export const WITHHELD_VARIABLES: ReadonlySet<string> = new Set([
  "WEBHOOK_SECRET",
  "DATABASE_URL",
  "PGPASSWORD",
  "PGPASSFILE",
  "TELEGRAM_BOT_TOKEN",
  "DISCORD_BOT_TOKEN",
  "SLACK_BOT_TOKEN",
  "GITHUB_TOKEN",
  "GH_TOKEN",
  "GITLAB_TOKEN",
]);

/** Bytes of standard error kept for the error message (its end). */
const STDERR_TAIL_BYTES = 4096;

/**
 * Builds a runner that executes `settings.command`.
 * @param settings `command` (program and arguments) and `timeoutSeconds`
 * @param deps `env`: the program's environment, less {@link WITHHELD_VARIABLES} (nothing else
 *   is inherited); `processNotes`: where the running program is noted
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
  const env = withoutWithheld(deps.env);
  const { timeoutSeconds } = settings;

  return async (request) => {
    const { prompt, systemPrompt, eventId, signal } = request;
    const input = systemPrompt ? `${systemPrompt}\n\n${prompt}` : prompt;
    const session = request.conversation && await writeConversationFile(request.conversation);
    try {
      const child = startProgram(program, args, {
        ...env,
        ...routeVariables(request),
        AGENT_EVENT_ID: eventId,
        ...(session ? { AGENT_SESSION_FILE: session.path } : {}),
      });
      // Noted while it runs: if the gateway dies meanwhile, the next start kills the group.
      deps.processNotes?.started(child.pid, eventId);
      try {
        const run = await superviseRun(child, input, { timeoutSeconds, signal });
        const stopped = signal?.aborted ?? false;
        // A program reports no model or token counts: only its answer is known.
        return { provider: "command", text: verdictOf(program, run, { timeoutSeconds, stopped }) };
      } finally {
        deps.processNotes?.ended(child.pid);
      }
    } finally {
      await session?.remove();
    }
  };
}

/**
 * A route's agent options as the program's environment: `AGENT_MODEL` (over the gateway's),
 * `AGENT_MAX_TOKENS` and `AGENT_TEMPERATURE`, each only when the route sets it. The program
 * decides what to make of them (docs/subscriptions.md#agent-options).
 */
function routeVariables(
  request: Pick<AgentRequest, "model" | "maxTokens" | "temperature">,
): Record<string, string> {
  const variables: Record<string, string> = {};
  if (request.model) variables.AGENT_MODEL = request.model;
  if (request.maxTokens !== undefined) variables.AGENT_MAX_TOKENS = String(request.maxTokens);
  if (request.temperature !== undefined) variables.AGENT_TEMPERATURE = String(request.temperature);
  return variables;
}

/** The set variables of `env`, less {@link WITHHELD_VARIABLES}. */
function withoutWithheld(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] =>
      entry[1] !== undefined && !WITHHELD_VARIABLES.has(entry[0])
    ),
  );
}

/**
 * Starts the program in a session of its own.
 * @throws AgentError permanent when it is not found or not allowed (which will not change by
 *   itself); otherwise (too many processes or open files) retryable and `unavailable`, since
 *   that holds for every run now, as a failed exit does
 */
function startProgram(
  program: string,
  args: string[],
  env: Record<string, string>,
): Deno.ChildProcess {
  try {
    return spawnInOwnSession(program, args, env);
  } catch (error) {
    const permanent = error instanceof Deno.errors.NotFound ||
      error instanceof Deno.errors.PermissionDenied;
    throw new AgentError(`Cannot start the agent command "${program}": ${errorMessage(error)}`, {
      permanent,
      unavailable: !permanent,
      cause: error,
    });
  }
}

/**
 * Runs the started program to its exit, within the time limit: the group is killed when the
 * limit passes or `signal` aborts (a gateway that stops must not leave the program running:
 * after a restart the event runs again, and two programs would work on it at once).
 */
async function superviseRun(
  child: Deno.ChildProcess,
  input: string,
  { timeoutSeconds, signal }: { timeoutSeconds: number; signal?: AbortSignal },
): Promise<ProgramRun> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killProcessGroup(child);
  }, timeoutSeconds * 1000);
  const stop = () => killProcessGroup(child);
  signal?.addEventListener("abort", stop, { once: true });
  if (signal?.aborted) stop();
  try {
    // The time limit is the program's: once it has exited, only the grace period remains.
    const output = await readUntilExit(child, input, () => clearTimeout(timer));
    return { ...output, timedOut };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", stop);
  }
}

/**
 * Writes the prompt, reads stdout and stderr, and waits for the program's exit, then at most
 * {@link PIPE_GRACE_AFTER_EXIT_MS} for the pipes to close.
 * @param onExit called as soon as the program has exited
 */
async function readUntilExit(
  child: Deno.ChildProcess,
  input: string,
  onExit: () => void,
): Promise<Omit<ProgramRun, "timedOut">> {
  const stopReading = new AbortController();
  let tooLong = false;
  const onOverflow = () => {
    tooLong = true;
    killProcessGroup(child);
  };
  const pipes = Promise.all([
    readUpTo(child.stdout, MAX_OUTPUT_BYTES, { onOverflow, signal: stopReading.signal }),
    readUpTo(child.stderr, STDERR_TAIL_BYTES, { keep: "last", signal: stopReading.signal }),
    writeInput(child, input),
  ]);
  // Handled after the exit; this only keeps an early read error from counting as an unhandled
  // rejection meanwhile.
  pipes.catch(() => {});
  const status = await child.status;
  onExit();
  if (!await settledWithin(pipes, PIPE_GRACE_AFTER_EXIT_MS)) {
    // Something the program started still holds its stdout or stderr (a daemon, a telemetry
    // flusher): the answer is complete, so end that and keep what was read.
    killProcessGroup(child);
    stopReading.abort();
  }
  const [stdout, stderr] = await pipes;
  return { ...status, stdout, stderr, tooLong };
}
