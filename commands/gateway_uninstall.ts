/**
 * `agent gateway uninstall`: stops and removes the systemd user unit `agent-gateway` that
 * `agent gateway install` wrote.
 *
 * Source: systemctl(1) for `--user disable --now | daemon-reload`.
 *
 * @module
 */
import { UsageError } from "../lib/errors.ts";
import { systemctl } from "./_systemctl.ts";
import { UNIT_NAME, unitPath } from "./_systemd_unit.ts";
import type { Command } from "./_command.ts";
import { parseFlags } from "./_flags.ts";

const uninstallUsage = `Usage: agent gateway uninstall

Stops the agent-gateway systemd user unit, disables it and removes its file. Events still
queued stay in the state database for the next \`agent gateway run\`.`;

/** `agent gateway uninstall`. */
export const gatewayUninstall: Command = {
  path: ["gateway", "uninstall"],
  summary: "Stop and remove the agent-gateway systemd user service",
  usage: uninstallUsage,
  async run(argv, ctx) {
    const { positionals } = parseFlags(argv, {}, uninstallUsage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${uninstallUsage}`);
    const path = unitPath(ctx.env);
    try {
      await Deno.lstat(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      ctx.stdout(`${UNIT_NAME} is not installed (no ${path}).`);
      return 0;
    }
    const stopped = await systemctl(["disable", "--now", UNIT_NAME], ctx.env);
    if (stopped.found && !stopped.ok) {
      ctx.stderr(
        `\`systemctl --user disable --now ${UNIT_NAME}\` failed: ${stopped.message}\n` +
          `${path} is left in place; run \`agent gateway uninstall\` again once systemd answers.`,
      );
      return 1;
    }
    await Deno.remove(path);
    if (stopped.found) await systemctl(["daemon-reload"], ctx.env);
    ctx.stdout(`Removed ${UNIT_NAME} (${path}); the gateway is stopped.`);
    return 0;
  },
};
