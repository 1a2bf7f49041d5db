/**
 * The shape every subcommand module exports, and the context `main.ts` builds for it.
 *
 * @module
 */

/**
 * What a command may touch. `main.ts` builds the real one; tests pass fakes. Nothing below
 * `main.ts` reads `Deno.args`, `Deno.env` or calls `Deno.exit`.
 */
export interface CommandContext {
  /** Process environment (not yet merged with `.env`; `loadConfig` does that). */
  env: Record<string, string | undefined>;
  /** Writes a line (or several) to standard output; a newline is appended. */
  stdout: (text: string) => void;
  /** Writes a line (or several) to standard error; a newline is appended. */
  stderr: (text: string) => void;
  /** Reads one line from standard input for interactive prompts; `null` at end of input. */
  readLine: (prompt: string) => Promise<string | null>;
  /**
   * Reads one line like {@link readLine}, without showing what is typed (a token). Absent, the
   * line is read with `readLine`.
   */
  readSecret?: (prompt: string) => Promise<string | null>;
  /** True when standard input and output are both a terminal (interactive prompts allowed). */
  isTerminal: boolean;
  /** HTTP client, for `webhook test`. */
  fetch: typeof fetch;
  /** Clock, in milliseconds since the epoch. */
  now: () => number;
  /**
   * Aborted when the process is asked to stop (SIGINT/SIGTERM); `gateway run` waits on it.
   * Reading it is what takes over the signals, so other commands stop on Ctrl-C as usual.
   */
  shutdownSignal: AbortSignal;
  /**
   * Aborted by a second SIGINT/SIGTERM after `shutdownSignal`: stop at once instead of waiting
   * for running work. Absent where nothing sends signals (tests).
   */
  hurrySignal?: AbortSignal;
}

/** One subcommand: `agent <group> <name> ...`. */
export interface Command {
  /** Words after `agent`, e.g. `["webhook", "subscribe"]`. */
  path: readonly string[];
  /** One-line summary shown by `agent --help`. */
  summary: string;
  /** Usage text shown by `--help` and after a usage error. */
  usage: string;
  /**
   * Runs the command.
   * @param argv the arguments after the command path
   * @param ctx what the command may touch
   * @returns the exit code: 0 success, 1 failure, 2 usage error
   * @throws UsageError, ConfigError, NotFoundError: turned into exit codes by `main.ts`
   * @example
   * ```ts
   * const ctx = fakeContext({ AGENT_HOME: home }); // tests/_helpers.ts
   * const code = await webhookList.run(["--json"], ctx); // argv after `agent webhook list`
   * // code 0; ctx.out holds what it printed
   * ```
   */
  run(argv: string[], ctx: CommandContext): Promise<number>;
}
