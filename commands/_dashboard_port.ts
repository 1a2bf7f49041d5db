/**
 * `gateway run --dashboard-port N` (docs/dashboard.md): the dashboard's port for this run, over
 * `DASHBOARD_PORT` and `dashboard.port`, as `--port` is over the webhook port's settings.
 *
 * @module
 */
import { UsageError } from "../lib/errors.ts";
import type { CommandContext } from "./_command.ts";
import { wholeNumber } from "./_flags.ts";

/**
 * The command's context with `--dashboard-port` as its `DASHBOARD_PORT`, which `loadConfig`
 * puts over `.env` and `config.yaml`.
 * @param ctx the command's context
 * @param port the flag's value, if given
 * @returns the context, unchanged when the flag is not given
 * @throws UsageError for a value that is no port
 */
export function withDashboardPort(ctx: CommandContext, port: string | undefined): CommandContext {
  if (port === undefined) return ctx;
  if (!(wholeNumber(port) <= 65535)) {
    throw new UsageError(
      `--dashboard-port must be a whole number from 0 to 65535 (0: any free port), not ${
        JSON.stringify(port)
      }`,
    );
  }
  return { ...ctx, env: { ...ctx.env, DASHBOARD_PORT: port } };
}
