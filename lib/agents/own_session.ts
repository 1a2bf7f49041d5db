/**
 * Starting a `command` agent in a session (and process group) of its own, and killing that
 * group: a timeout or a stop then also ends what the program started, and the next start of a
 * gateway that died can find what is left (`_leftovers.ts`).
 *
 * Deno's `detached` makes such a session, but it forks the whole gateway to do it, and copying
 * the page tables of a large process holds the event loop meanwhile. So where there is a
 * `setsid` program, that is spawned instead (no fork): it makes the session, then executes the
 * program under the same pid. `deno task bench:spawn` compares the two.
 *
 * @module
 */
import { programPath } from "./_program_path.ts";

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
 * its own whose id is the child's pid: through {@link SETSID} where there is one, else with
 * Deno's `detached`. Through `setsid`, a program that cannot be executed after all (a script
 * whose interpreter is missing, a file this user may not run) does not throw here: it shows as
 * `setsid`'s exit 126 or 127 and its report on stderr.
 * @param program a name looked up on `env.PATH` (on the gateway's own PATH when `env` has
 *   none, then on `/usr/bin:/bin`), or a path with a slash
 * @param args its arguments
 * @param env its whole environment (nothing else is inherited)
 * @param options `setsid`: the `setsid` program, or null to use `detached` (@default
 *   {@link SETSID})
 * @returns the running child
 * @throws Deno.errors.NotFound when `program` is not found or not a file, PermissionDenied when
 *   it is not executable, and what `Deno.Command.spawn` throws
 * @example
 * ```ts
 * const child = spawnInOwnSession("llm", ["-m", "gpt-4o-mini"], { PATH: "/usr/bin:/bin" });
 * // ... later, to end it with everything it started:
 * killProcessGroup(child);
 * ```
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
 * Kills (SIGKILL) the process group of a child started by {@link spawnInOwnSession}, or the
 * child alone when there is no group yet: just after the spawn, `setsid` may not have made it,
 * and killing `setsid` then means the program never starts. Never throws.
 * @param child the child; its pid is its group's id
 */
export function killProcessGroup(child: Deno.ChildProcess): void {
  try {
    Deno.kill(-child.pid, "SIGKILL");
  } catch {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }
}
