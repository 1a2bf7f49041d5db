/**
 * `agent gateway run`: starts the gateway in the foreground until SIGINT/SIGTERM (CONTRACT §10).
 *
 * @module
 */
import { loadConfig, platformDisabledMessage } from "../lib/config/mod.ts";
import { createDefaultConfig } from "../lib/config/config_file.ts";
import { ConflictError, UsageError } from "../lib/errors.ts";
import { hostAndPort } from "../lib/config/address.ts";
import { getLogger } from "@logtape/logtape";
import { startLogging, stopLogging } from "../lib/log.ts";
import { startGateway, STOP_DEADLINE_MS } from "../server/gateway.ts";
import type { Command } from "./_command.ts";
import { parseFlags, wholeNumber } from "./_shared.ts";

const usage = `Usage: agent gateway run [--port N] [--quiet]

Starts the webhook gateway. In a home folder without config.yaml it first creates one that
enables the platform on 127.0.0.1:8644. Stop it with Ctrl-C or SIGTERM: requests in flight
and running agent work get 10 s in all (a second Ctrl-C or SIGTERM: none); an agent run still
going then is stopped (a command agent is killed) and its event goes back to the queue, that
attempt not counting toward max_attempts; queued work stays queued for the next start. If the
HTTP server stops accepting connections (out of file descriptors), the gateway stops and exits 1.
Every decision is logged to ~/.agent/logs/gateway.log and, unless --quiet, to standard error.`;

/** `agent gateway run`. */
export const gatewayRun: Command = {
  path: ["gateway", "run"],
  summary: "Start the webhook gateway",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, {
      port: { type: "string" },
      quiet: { type: "boolean" },
    }, usage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${usage}`);
    // Takes over SIGINT/SIGTERM now: one that arrives while the gateway starts (or just after
    // it says it listens) stops it gracefully instead of killing it.
    const shutdown = ctx.shutdownSignal;
    if (values.port !== undefined && !(wholeNumber(values.port) <= 65535)) {
      throw new UsageError(
        `--port must be a whole number from 0 to 65535 (0: any free port), not ${
          JSON.stringify(values.port)
        }`,
      );
    }
    const env = values.port === undefined ? ctx.env : { ...ctx.env, WEBHOOK_PORT: values.port };
    let config = await loadConfig(env);
    if (!config.configFileExists && await createDefaultConfig(config.paths.config)) {
      ctx.stdout(`Created ${config.paths.config} (webhook platform enabled)`);
      config = await loadConfig(env);
    }
    if (!config.webhook.enabled) {
      ctx.stderr(platformDisabledMessage(config.paths, config.webhook.enabledBy));
      return 1;
    }
    await startLogging({ file: config.paths.log, console: !values.quiet });
    // Starts, stops and failed starts are in the log file too, which --quiet leaves as the only
    // record (a failed start's message is also printed on standard error).
    const log = getLogger(["agent", "gateway"]);
    for (const warning of config.warnings) log.warn(warning);
    try {
      const gateway = await startGateway(config, { fetch: ctx.fetch, now: ctx.now }).catch(
        (error) => {
          if (error instanceof Deno.errors.AddrInUse) {
            const { host, port } = config.webhook;
            error = new ConflictError(
              `Cannot listen on ${hostAndPort(host, port)}: another program already does; set ` +
                "another port with --port (or WEBHOOK_PORT, or port: in config.yaml)",
            );
          }
          log.fatal("cannot start: {reason}", { reason: (error as Error).message, pid: Deno.pid });
          throw error;
        },
      );
      log.info("started on {url}", { url: gateway.url, pid: Deno.pid });
      ctx.stdout(
        `Gateway listening on ${gateway.url}\n` +
          `  health:   ${gateway.url}/health\n` +
          `  webhooks: ${gateway.url}/webhooks/<name>\n` +
          `  log:      ${config.paths.log}`,
      );
      const failure = await Promise.race([
        new Promise<undefined>((resolve) => {
          if (shutdown.aborted) resolve(undefined);
          shutdown.addEventListener("abort", () => resolve(undefined), { once: true });
        }),
        gateway.failed,
      ]);
      if (failure) {
        log.fatal(failure.message); // on the console too, unless --quiet
        if (values.quiet) ctx.stderr(failure.message);
        await gateway.stop({ deadlineMs: STOP_DEADLINE_MS, hurry: ctx.hurrySignal });
        return 1;
      }
      ctx.stdout(
        "Stopping: finishing requests in flight, queued events stay queued " +
          "(Ctrl-C again to stop running work now)",
      );
      ctx.hurrySignal?.addEventListener("abort", () => {
        ctx.stdout("Stopping now: running agent work is stopped and runs again at the next start");
      }, { once: true });
      log.info("stopping on a signal");
      await gateway.stop({ deadlineMs: STOP_DEADLINE_MS, hurry: ctx.hurrySignal });
      log.info("stopped");
      ctx.stdout("Gateway stopped");
      return 0;
    } finally {
      await stopLogging();
    }
  },
};
