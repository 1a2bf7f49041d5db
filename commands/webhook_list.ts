/**
 * `agent webhook list`: every dynamic subscription and static route with its URL, events,
 * filters, target and secret, whether it is disabled, and warnings about what the gateway
 * refuses or cannot serve: records it cannot read, hidden names, skills gone, secrets no sender
 * can satisfy, `auth: none` off loopback (docs/commands.md).
 *
 * @module
 */
import { type Config, webhookUrl } from "../lib/config/mod.ts";
import { UsageError } from "../lib/errors.ts";
import { isLoopbackHost, routesAndHidden } from "../lib/subscriptions/routes.ts";
import { secretProblem } from "../lib/subscriptions/file_store.ts";
import { findSkill, listSkills } from "../lib/agents/skills.ts";
import { currentSecret, type Route } from "../lib/subscriptions/mod.ts";
import type { Command } from "./_command.ts";
import { coalesceSummary } from "../lib/subscriptions/coalesce_options.ts";
import { sessionSummary } from "../lib/subscriptions/session_options.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags } from "./_flags.ts";
import { advertisedWebhook } from "./_running_gateway.ts";
import { DEFAULT_TRANSFORM_TIMEOUT_SECONDS } from "../lib/transforms/mod.ts";

const usage = `Usage: agent webhook list [--json]

Lists subscriptions (from webhook_subscriptions.json) and static routes (from config.yaml)
with their URL, events, filters, target and secret; a disabled one is marked [disabled].`;

/** `agent webhook list`. */
export const webhookList: Command = {
  path: ["webhook", "list"],
  summary: "List subscriptions and static routes with their URLs and secrets",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, { json: { type: "boolean" } }, usage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${usage}`);
    const loaded = await loadEnabledConfig(ctx);
    if (!loaded) return 1;
    const { routes, hidden, unusable } = await routesAndHidden(loaded);
    for (const name of hidden) {
      ctx.stderr(
        `Warning: subscription "${name}" in ${loaded.paths.subscriptions} is never served: ` +
          "config.yaml has a static route of that name, which wins. Rename or remove it in " +
          "that file.",
      );
    }
    for (const problem of unusable.values()) {
      ctx.stderr(`Warning: ${problem}; the gateway refuses its requests until it is fixed.`);
    }
    for (const problem of await skillProblems(routes, loaded.paths.skills)) {
      ctx.stderr(`Warning: ${problem}`);
    }
    for (const route of routes) {
      const problem = secretProblem(route, loaded.webhook.secret);
      if (problem !== undefined) ctx.stderr(`Warning: "${route.name}": ${problem}`);
      if (route.auth === "none" && !isLoopbackHost(loaded.webhook.host)) {
        ctx.stderr(
          `Warning: "${route.name}" has auth none, served only while the gateway listens on a ` +
            `loopback address; it is set to listen on ${loaded.webhook.host}, so its requests ` +
            "are refused (404).",
        );
      }
    }
    const config = { ...loaded, webhook: await advertisedWebhook(loaded) };
    if (values.json) {
      const rows = routes.map((route) => ({
        ...route,
        secret: currentSecret(route, config.webhook.secret),
        webhook_url: webhookUrl(config.webhook, route.name),
      }));
      ctx.stdout(JSON.stringify(rows, null, 2));
      return 0;
    }
    if (routes.length === 0) {
      ctx.stdout("No subscriptions yet. Create one: agent webhook subscribe <name>");
      return 0;
    }
    ctx.stdout(routes.map((route) => describeRoute(route, config, ctx.now())).join("\n\n"));
    return 0;
  },
};

/**
 * What is wrong with the skills the routes ask for: each skill no longer installed, or whose
 * `SKILL.md` became unusable, since their agent runs fail for good until it is back.
 * @param routes the routes listed
 * @param skillsDir the home's `skills` folder
 * @returns one line per route and skill
 */
async function skillProblems(routes: Route[], skillsDir: string): Promise<string[]> {
  if (!routes.some((route) => route.skills?.length)) return [];
  const listing = await listSkills(skillsDir).catch((error: Error) => error);
  if (listing instanceof Error) return [listing.message];
  return routes.flatMap((route) =>
    (route.skills ?? []).flatMap((name) => {
      const asks = `"${route.name}" asks for the skill "${name}"`;
      try {
        if (findSkill(listing, name)) return [];
        return [`${asks}, which is not installed in ${skillsDir}: its agent runs fail`];
      } catch (error) {
        return [`${asks}: ${(error as Error).message}; its agent runs fail`];
      }
    })
  );
}

/**
 * One route as `list` prints it: its URL, events, target, secrets still accepted at `nowMs`
 * and the settings it has.
 * @param config the configuration, with the webhook settings URLs are made from
 * @param nowMs the clock, in milliseconds
 * @returns the route's lines, joined
 */
function describeRoute(route: Route, config: Config, nowMs: number): string {
  // An empty secret is none, as the gateway reads it (`currentSecret`).
  const secret = route.auth === "none" ? "(none asked for: auth none)" : route.secret ||
    (currentSecret(route, config.webhook.secret) === undefined
      ? "(none: requests are refused with 403)"
      : `${config.webhook.secret} (global secret)`);
  const extra = route.deliver_extra;
  const thread = extra?.thread !== undefined ? `, thread ${extra.thread}` : "";
  const chat = extra?.chat_id || thread ? ` (chat ${extra?.chat_id ?? "home"}${thread})` : "";
  const lines = [
    `${route.name}${route.origin === "static" ? "  [static, config.yaml]" : ""}` +
    (route.disabled ? "  [disabled]" : ""),
    `  URL:      ${webhookUrl(config.webhook, route.name)}`,
    `  Events:   ${route.events?.length ? route.events.join(", ") : "all"}`,
    ...(route.filters ?? []).map((filter) => `  Filter:   ${filter}`),
    ...(route.transform
      ? [
        `  Transform: ${route.transform} (time limit ${
          route.transform_timeout ?? DEFAULT_TRANSFORM_TIMEOUT_SECONDS
        } s)`,
      ]
      : []),
    `  Deliver:  ${route.deliver ?? "log"}${chat}${route.deliver_only ? " (direct)" : ""}` +
    (route.format ? `, as ${route.format}` : ""),
    `  Secret:   ${secret}`,
  ];
  for (const previous of route.previous_secrets ?? []) {
    if (Date.parse(previous.expires_at) > nowMs) {
      lines.push(`  Previous: ${previous.secret} (valid until ${previous.expires_at})`);
    }
  }
  if (route.description) lines.push(`  About:    ${route.description}`);
  if (route.skills?.length) lines.push(`  Skills:   ${route.skills.join(", ")}`);
  if (route.auth === "none") lines.push("  Auth:     none (unsigned requests, on loopback only)");
  else if (route.auth) lines.push(`  Auth:     ${route.auth} only`);
  if (route.disabled) {
    const undo = route.origin === "static"
      ? "remove disabled in config.yaml"
      : `agent webhook enable ${route.name}`;
    lines.push(`  Disabled: its requests are answered 404, as an unknown name's (${undo})`);
  }
  if (route.rate_limit) lines.push(`  Limit:    ${route.rate_limit} requests/minute`);
  if (route.coalesce) lines.push(`  Coalesce: ${coalesceSummary(route)}`);
  if (route.session) lines.push(`  Session:  ${sessionSummary(route)}`);
  const agent = agentOptionsText(route);
  if (agent) lines.push(`  Agent:    ${agent}`);
  if (route.system_prompt) lines.push(`  System:   ${route.system_prompt.replace(/\s+/g, " ")}`);
  return lines.join("\n");
}

/** `model gpt-4o, max 500 tokens, temperature 0.2`: what the route sets over `agent.*`. */
function agentOptionsText(route: Route): string {
  return [
    route.model ? `model ${route.model}` : "",
    route.max_tokens === undefined ? "" : `max ${route.max_tokens} tokens`,
    route.temperature === undefined ? "" : `temperature ${route.temperature}`,
  ].filter((part) => part).join(", ");
}
