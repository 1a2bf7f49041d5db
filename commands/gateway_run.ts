/**
 * `agent gateway run`: starts the gateway in the foreground until SIGINT/SIGTERM
 * (docs/commands.md).
 *
 * @module
 */
import { type Config, loadConfig, platformDisabledMessage } from "../lib/config/mod.ts";
import { createDefaultConfig } from "../lib/config/config_file.ts";
import { ConflictError, UsageError } from "../lib/errors.ts";
import { hostAndPort } from "../lib/config/address.ts";
import { getLogger, type Logger } from "@logtape/logtape";
import { literalMessage, startLogging, stopLogging } from "../lib/log.ts";
import {
  type GatewayRoles,
  type RunningGateway,
  startGateway,
  STOP_DEADLINE_MS,
} from "../server/gateway.ts";
import { stateStoreName } from "../lib/state/open.ts";
import type { Command, CommandContext } from "./_command.ts";
import { parseFlags, wholeNumber } from "./_flags.ts";
import { withDashboardPort } from "./_dashboard_port.ts";
import { agentSummary, formatCheck, readinessChecks } from "./_readiness.ts";
import { tokenSummary } from "./_readiness_targets.ts";

const usage = `Usage: agent gateway run [--port N] [--dashboard-port N] [--quiet]
                         [--no-worker | --no-ingest]

Starts the webhook gateway. In a home folder without config.yaml it first creates one that
enables the platform on 127.0.0.1:8644. Once it listens, it says which agent provider, model
and base URL it uses and which targets have their token, and warns of what agent doctor finds
missing (a key, a token, a public address); it runs on all the same. Stop it with Ctrl-C or
SIGTERM: requests in flight and running agent work get 10 s in all (a second Ctrl-C or SIGTERM:
none); an agent run still going then is stopped (a command agent is killed) and its event goes
back to the queue, that attempt not counting toward max_attempts; queued work stays queued for
the next start. If the HTTP server stops accepting connections (out of file descriptors), the
gateway stops and exits 1.
Every decision is logged to ~/.agent/logs/gateway.log and, unless --quiet, to standard error.
The dashboard is served on a listener of its own, 127.0.0.1:8645 unless --dashboard-port (or
DASHBOARD_PORT, or dashboard: in config.yaml) says otherwise; agent dashboard logs you in.
With state.backend: postgres, gateways sharing the database may split the roles:
  --no-worker  ingest only: listen for webhooks (and send direct-mode messages), run no events
  --no-ingest  worker only: run the queued events, listen for no webhooks
With SQLite one gateway holds the home, so it does both (docs/running.md#splitting-the-roles).`;

/** `agent gateway run`. */
export const gatewayRun: Command = {
  path: ["gateway", "run"],
  summary: "Start the webhook gateway",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, {
      port: { type: "string" },
      "dashboard-port": { type: "string" },
      quiet: { type: "boolean" },
      // Given as --no-worker and --no-ingest: false when given.
      worker: { type: "boolean" },
      ingest: { type: "boolean" },
    }, usage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${usage}`);
    const roles = { ingest: values.ingest !== false, worker: values.worker !== false };
    // Takes over SIGINT/SIGTERM now: one that arrives while the gateway starts (or just after
    // it says it listens) stops it gracefully instead of killing it.
    const shutdown = ctx.shutdownSignal;
    const config = await gatewayConfig(
      withDashboardPort(ctx, values["dashboard-port"]),
      values.port,
    );
    if (!config) return 1;
    refuseRoles(config, roles);
    await startLogging({ file: config.paths.log, console: !values.quiet });
    // Starts, stops and failed starts are in the log file too, which --quiet leaves as the only
    // record (a failed start's message is also printed on standard error).
    const log = getLogger(["agent", "gateway"]);
    for (const warning of config.warnings) log.warn(literalMessage(warning));
    try {
      const gateway = await start(config, { ctx, log, roles });
      const failure = await Promise.race([aborted(shutdown), gateway.failed]);
      if (failure) {
        log.fatal(failure.message); // on the console too, unless --quiet
        if (values.quiet) ctx.stderr(failure.message);
        await gateway.stop({ deadlineMs: STOP_DEADLINE_MS, hurry: ctx.hurrySignal });
        return 1;
      }
      await stopOnSignal(gateway, { ctx, log });
      return 0;
    } finally {
      await stopLogging();
    }
  },
};

/**
 * Refuses a split of the roles that cannot work: both left out (nothing would run), or either
 * with SQLite, whose home one gateway holds (no second process can do the other role).
 * @throws UsageError for both flags, or either without `state.backend: postgres`
 */
function refuseRoles(config: Config, roles: GatewayRoles): void {
  if (!roles.ingest && !roles.worker) {
    throw new UsageError("--no-worker and --no-ingest together leave the gateway nothing to do");
  }
  if (roles.ingest && roles.worker) return;
  if (config.state.backend === "sqlite") {
    const flag = roles.worker ? "--no-ingest" : "--no-worker";
    throw new UsageError(
      `${flag} splits the roles between gateways that share a PostgreSQL database ` +
        `(state.backend: postgres in ${config.paths.config}); with SQLite one gateway holds ` +
        "the home and does both, so run it without the flag (docs/running.md#splitting-the-roles)",
    );
  }
}

/**
 * The configuration the gateway runs with: `--port` over the environment's, and in a home
 * without `config.yaml` the default one, created first.
 * @param ctx the command's environment, and where the creation and a disabled platform are said
 * @param port the `--port` flag's value, if given
 * @returns the configuration, or null after saying the platform is disabled
 * @throws UsageError for a `--port` that is no port; ConfigError for a malformed configuration
 */
async function gatewayConfig(
  ctx: CommandContext,
  port: string | undefined,
): Promise<Config | null> {
  if (port !== undefined && !(wholeNumber(port) <= 65535)) {
    throw new UsageError(
      `--port must be a whole number from 0 to 65535 (0: any free port), not ${
        JSON.stringify(port)
      }`,
    );
  }
  const env = port === undefined ? ctx.env : { ...ctx.env, WEBHOOK_PORT: port };
  let config = await loadConfig(env);
  if (!config.configFileExists && await createDefaultConfig(config.paths.config)) {
    ctx.stdout(`Created ${config.paths.config} (webhook platform enabled)`);
    config = await loadConfig(env);
  }
  if (config.webhook.enabled) return config;
  ctx.stderr(platformDisabledMessage(config.paths, config.webhook.enabledBy));
  return null;
}

/**
 * Starts the gateway and says where it listens; a failed start is logged, and a port in use is
 * said as a ConflictError that names the settings to change.
 * @param options `ctx`: the command's fetch, clock and standard output; `log`: the gateway's
 *   logger
 * @throws ConflictError when the port is taken; whatever else stops the start
 */
async function start(
  config: Config,
  options: { ctx: CommandContext; log: Logger; roles: GatewayRoles },
): Promise<RunningGateway> {
  const { ctx, log, roles } = options;
  const serving = { fetch: ctx.fetch, now: ctx.now, dashboard: true, roles };
  const gateway = await startGateway(config, serving).catch(
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
  log.info("started on {url}", {
    url: gateway.url || "no webhook listener (--no-ingest)",
    pid: Deno.pid,
    state: stateStoreName(config),
    ...(roles.ingest && roles.worker ? {} : { roles: roles.ingest ? "ingest" : "worker" }),
  });
  await announce(config, gateway, options);
  return gateway;
}

/**
 * Says where the gateway listens and what it will use (provider, model, base URL, which
 * targets have their token: never a token), then logs each failed readiness check as a
 * warning (docs/commands.md#agent-doctor): the gateway runs on, whatever they say.
 * @param gateway the started gateway: its URL, and the port it really listens on
 * @param options `ctx`: standard output; `log`: the gateway's logger
 */
async function announce(
  config: Config,
  gateway: RunningGateway,
  options: { ctx: CommandContext; log: Logger },
): Promise<void> {
  // A check that cannot be made must not stop a gateway that already serves.
  const checks = await readinessChecks(config, {
    webhook: { ...config.webhook, port: gateway.port },
    files: false, // it opened both as it started
  }).catch((error) => error as Error);
  const problems = checks instanceof Error ? [] : checks.filter((check) => !check.ok);
  const ready = checks instanceof Error
    ? `not checked (${checks.message})`
    : problems.length === 0
    ? "✓"
    : `✗ ${problems.length} to fix: see the warnings, or run agent doctor`;
  const listening = gateway.url === ""
    ? "Gateway running the worker only (--no-ingest): no webhook listener\n"
    : `Gateway listening on ${gateway.url}\n` +
      `  health:   ${gateway.url}/health\n` +
      `  webhooks: ${gateway.url}/webhooks/<name>\n`;
  options.ctx.stdout(
    listening +
      (gateway.dashboardUrl
        ? `  dashboard: ${gateway.dashboardUrl} (log in: agent dashboard)\n`
        : "") +
      `  log:      ${config.paths.log}\n` +
      `  state:    ${stateStoreName(config)}\n` +
      `  agent:    ${agentSummary(config.agent)}\n` +
      `  tokens:   ${tokenSummary(config.env)}\n` +
      `  ready:    ${ready}`,
  );
  for (const line of problems.flatMap((check) => formatCheck(check).split("\n"))) {
    options.log.warn(literalMessage(line));
  }
}

/** Resolves (to undefined) once `signal` is aborted, or at once when it is already. */
function aborted(signal: AbortSignal): Promise<undefined> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(undefined);
    signal.addEventListener("abort", () => resolve(undefined), { once: true });
  });
}

/**
 * Stops the gateway after SIGINT/SIGTERM: requests in flight and running work get
 * {@link STOP_DEADLINE_MS}, or none after a second signal; each stage is said and logged.
 * @param options `ctx`: the hurry signal and standard output; `log`: the gateway's logger
 */
async function stopOnSignal(
  gateway: RunningGateway,
  options: { ctx: CommandContext; log: Logger },
): Promise<void> {
  const { ctx, log } = options;
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
}
