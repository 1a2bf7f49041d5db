/**
 * What `deno task install` and `deno task compile` share: the permissions `agent` runs with,
 * the checkout they install, and Deno run as a subprocess with its error cut to one line.
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import denoConfig from "../deno.json" with { type: "json" };

/** The checkout: the folder of deno.json, deno.lock and main.ts. */
export const CHECKOUT: string = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * The permissions `agent` runs with, installed or compiled: every kind but FFI and imports from
 * remote hosts, so it loads no native library and no code it did not install with. Narrower
 * lists do not fit what it does: the home folder can be anywhere (`AGENT_HOME`), the LLM and
 * the targets are any host (`OPENAI_BASE_URL`, self-hosted API bases), a command agent is any
 * program, `.env` overrides any variable, and `sys` is for the umask that keeps its files
 * private (docs/running.md#installing-the-agent-command).
 */
export const AGENT_PERMISSIONS: readonly string[] = [
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-env",
  "--allow-run",
  "--allow-sys",
];

/** What a Deno subprocess left: whether it succeeded, and its standard error. */
export interface DenoResult {
  success: boolean;
  stderr: string;
}

/**
 * Runs `deno <args>` with the Deno running this script, its standard output passed through
 * and its standard error kept. Without colours (its error is read) and without Rust's
 * backtrace, whatever the environment says.
 * @param args Deno's arguments (`["compile", ...]`)
 * @returns whether it exited 0, and what it wrote to standard error
 */
export async function runDeno(args: string[]): Promise<DenoResult> {
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: CHECKOUT,
    env: { NO_COLOR: "1", RUST_BACKTRACE: "0" },
    stdin: "null",
    stdout: "inherit",
    stderr: "piped",
  }).output();
  return { success: output.success, stderr: new TextDecoder().decode(output.stderr) };
}

/**
 * Deno's error in one line: its `error:` line, followed by the innermost of the causes it lists
 * (where the reason is: `dns error`, `Connection refused`), without the backtrace.
 * @param stderr what Deno wrote to standard error
 * @returns the line, or `exited with an error` when Deno wrote none
 * @example
 * ```ts
 * oneLineError("error: Setting up\n\nCaused by:\n    0: sending\n    1: dns error\n");
 * // "Setting up: dns error"
 * ```
 */
export function oneLineError(stderr: string): string {
  const error = stderr.split("\n").find((line) => line.startsWith("error:"))
    ?.slice("error:".length).trim();
  const cause = innermostCause(stderr);
  if (error === undefined) return cause ?? "exited with an error";
  return cause === undefined ? error : `${error}: ${cause}`;
}

/**
 * The last of the causes a Deno error lists under `Caused by:` (`    4: Connection refused`).
 * @param stderr what Deno wrote to standard error
 * @returns the cause, or undefined when it lists none
 */
export function innermostCause(stderr: string): string | undefined {
  const causes = stderr.split("\n").map((line) => line.trim()).filter((line) =>
    /^\d+: /.test(line)
  );
  return causes.at(-1)?.replace(/^\d+: /, "");
}

/**
 * A path as the user meant it: relative to the folder `deno task` was started in (`INIT_CWD`,
 * which `deno task` sets; it runs the task itself in the checkout).
 * @param path absolute, or relative to where the user was
 * @returns the absolute path
 */
export function userPath(path: string): string {
  return resolve(Deno.env.get("INIT_CWD") ?? Deno.cwd(), path);
}

/** The agent's version, deno.json's `"version"`, for the lines these scripts print. */
export const VERSION: string = denoConfig.version;
