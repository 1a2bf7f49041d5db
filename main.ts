/**
 * The `agent` executable: the only place that reads `Deno.args`, builds the real command
 * context and exits.
 *
 * @module
 */
import { runCommand } from "./commands/mod.ts";
import type { CommandContext } from "./commands/_command.ts";
import { ConfigError, NotFoundError, UsageError } from "./lib/errors.ts";

/** Builds the real context: process env, stdio, fetch, clock and the stop signal. */
function realContext(): CommandContext {
  const shutdown = new AbortController();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => shutdown.abort(signal));
  }
  const encoder = new TextEncoder();
  return {
    env: Deno.env.toObject(),
    stdout: (text) => Deno.stdout.writeSync(encoder.encode(text + "\n")),
    stderr: (text) => Deno.stderr.writeSync(encoder.encode(text + "\n")),
    readLine: (question) => Promise.resolve(prompt(question.trimEnd())),
    isTerminal: Deno.stdin.isTerminal(),
    fetch: globalThis.fetch,
    now: Date.now,
    shutdownSignal: shutdown.signal,
  };
}

/** Runs the CLI and turns typed errors into exit codes: usage 2, other known failures 1. */
async function main(argv: string[]): Promise<number> {
  const ctx = realContext();
  try {
    return await runCommand(argv, ctx);
  } catch (error) {
    if (error instanceof UsageError) {
      ctx.stderr(`Error: ${error.message}`);
      return error.exitCode;
    }
    if (error instanceof ConfigError || error instanceof NotFoundError) {
      ctx.stderr(`Error: ${error.message}`);
      return error.exitCode;
    }
    if (error instanceof Deno.errors.AddrInUse) {
      ctx.stderr(`Error: the port is already in use (${error.message}); set another with --port`);
      return 1;
    }
    ctx.stderr(`Error: ${error instanceof Error ? error.stack : String(error)}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
