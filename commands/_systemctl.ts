/**
 * Talking to the user's systemd with `systemctl --user` (systemctl(1)): whether it is here,
 * and the steps that load, enable and (re)start the `agent-gateway` unit.
 *
 * @module
 */
import type { CommandContext } from "./_command.ts";
import { UNIT_NAME } from "./_systemd_unit.ts";

/** What a `systemctl --user` call did. */
export interface SystemctlResult {
  ok: boolean;
  /** What it printed on standard error, trimmed; or why it could not run. */
  message: string;
  /** False when there is no `systemctl` to run. */
  found: boolean;
}

/**
 * Runs `systemctl --user <args>` with exactly `env` as its environment (systemctl(1)).
 * @param args the subcommand and its arguments, e.g. `["enable", UNIT_NAME]`
 * @param env the environment to run it with (the user's session bus is found through it)
 * @returns whether it succeeded and what it printed on standard error; `found: false` when
 *   there is no `systemctl` on the PATH
 * @throws Deno errors other than NotFound from starting the program
 */
export async function systemctl(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<SystemctlResult> {
  const clean: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) clean[key] = value;
  try {
    const output = await new Deno.Command("systemctl", {
      args: ["--user", ...args],
      env: clean,
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    const message = new TextDecoder().decode(output.stderr).trim();
    return { ok: output.success, message, found: true } satisfies SystemctlResult;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { ok: false, message: "systemctl not found", found: false } satisfies SystemctlResult;
    }
    throw error;
  }
}

/**
 * Whether systemd's `systemctl` is here; when not, says what to do instead. Nothing is written
 * where systemd is not: the user gets the unit to adapt instead.
 * @param ctx the command's environment, and standard error
 * @returns true when `systemctl` runs
 */
export async function systemdFound(ctx: CommandContext): Promise<boolean> {
  if ((await systemctl(["--version"], ctx.env)).found) return true;
  ctx.stderr(
    "systemd's systemctl is not available here, so there is no user service to install.\n" +
      "Run `agent gateway run` under your own supervisor; `agent gateway install --print` " +
      "shows the systemd unit to adapt.",
  );
  return false;
}

/**
 * Runs `systemctl --user daemon-reload` and `enable`, then with `start` `reset-failed` and
 * `restart`; at the first that fails, prints the commands left to run by hand.
 * @param ctx the command's environment, and standard error
 * @param options `path`: the unit file written; `start`: whether to (re)start the service
 * @returns whether every step succeeded
 */
export async function enableUnit(
  ctx: CommandContext,
  options: { path: string; start: boolean },
): Promise<boolean> {
  const steps = [["daemon-reload"], ["enable", UNIT_NAME]];
  // reset-failed first: after 5 failed starts in a minute systemd refuses a restart too.
  if (options.start) steps.push(["reset-failed", UNIT_NAME], ["restart", UNIT_NAME]);
  for (const step of steps) {
    const result = await systemctl(step, ctx.env);
    if (result.ok) continue;
    ctx.stderr(
      `Wrote ${options.path}, but \`systemctl --user ${step.join(" ")}\` failed: ` +
        `${result.message}\nOnce your user's systemd is reachable (a login session, or ` +
        "`loginctl enable-linger $USER`), run:\n" +
        steps.map((s) => `  systemctl --user ${s.join(" ")}`).join("\n"),
    );
    return false;
  }
  return true;
}
