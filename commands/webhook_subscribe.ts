/**
 * `agent webhook subscribe <name>`: creates or updates a dynamic subscription
 * (docs/subscriptions.md).
 *
 * @module
 */
import { webhookUrl } from "../lib/config/mod.ts";
import { UsageError } from "../lib/errors.ts";
import { checkName, refuseStatic } from "../lib/subscriptions/routes.ts";
import { AUTH_NAMES, NAME_PATTERN, type Subscription } from "../lib/subscriptions/mod.ts";
import { updateSubscriptionsOf } from "../lib/subscriptions/source.ts";
import { homeChannelOf } from "../lib/targets/mod.ts";
import type { Command } from "./_command.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags } from "./_flags.ts";
import { addressCheck, agentCheck } from "./_readiness.ts";
import { advertisedWebhook } from "./_running_gateway.ts";
import { untilGatewaySeesChange } from "../lib/subscriptions/subscription_edits.ts";
import { checkAuthNone, checkSkills } from "../lib/subscriptions/subscribe_checks.ts";
import { eventFilterWarnings, optionsToRecord } from "../lib/subscriptions/subscribe_options.ts";
import { storeMerged } from "../lib/subscriptions/subscribe_merge.ts";
import { coalesceSummary } from "../lib/subscriptions/coalesce_options.ts";
import { sessionSummary } from "../lib/subscriptions/session_options.ts";

const usage = `Usage: agent webhook subscribe <name> [options]

Creates the subscription <name>, or updates it (given options replace, omitted ones are kept).
<name> must match ${NAME_PATTERN.source}.

Options:
  --prompt TEXT            prompt template with {dot.path} placeholders (default: the whole payload)
  --events LIST            comma-separated event types, e.g. issues,pull_request.opened
                           (default, or --events all: every event)
  --filter EXPR            a CEL expression over the payload and headers that must be true,
                           e.g. 'pull_request.base.ref == "main"'; repeatable, all must hold
                           (--filter true alone removes them)
  --description TEXT       free text shown by list
  --skills LIST            comma-separated skill names from ~/.agent/skills
  --deliver TARGET         log (default), telegram, discord, slack, github_comment, gitlab_comment, origin
                           telegram:<chat>[:<thread>], discord:<channel>, slack:<channel>:
                           the target and its --deliver-chat-id in one
  --deliver-chat-id ID     chat, channel or item on the target
  --deliver-thread T       thread in the chat, rendered per event: a Telegram topic id, a Slack
                           thread_ts, a Discord thread id (none: remove it)
  --deliver-only           direct delivery: send the rendered prompt itself, no agent run
                           (--no-deliver-only switches an existing subscription back)
  --format FORMAT          markdown: render for each chat (agent default); plain: as written
  --secret SECRET          HMAC secret (default: 32 random bytes, kept on update)
  --rate-limit N           requests per minute for this subscription
  --model NAME             model of this subscription's agent runs (over agent.model)
  --max-tokens N           most tokens an answer may have (a whole number ≥ 1)
  --temperature T          sampling temperature, 0 to 2
  --system-prompt TEXT     instructions added to the system prompt, after the skills
  --transform 'PROG ARGS'  a program (no shell) given the payload JSON on stdin that prints the
                           JSON the prompt is rendered from, or {"skip": true} ('' removes it)
  --transform-timeout S    the transform's time limit in seconds (default 5)
  --coalesce S             fold the events of one key that arrive within S seconds of each
                           other into one agent run (none: stop coalescing)
  --coalesce-key T         the key's template, e.g. '{repository.full_name}#{issue.number}'
                           (default: the --session template)
  --coalesce-max S         the longest a window stays open after its first event (default 300)
  --session T              one conversation per rendered key, e.g.
                           '{repository.full_name}#{issue.number}': a run gets the earlier
                           turns of its key, after them ('' removes it)
  --session-budget N       most tokens of earlier turns a run is given (default 4000)
  --auth SCHEME            accept only this signature scheme (${AUTH_NAMES.join(", ")});
                           none: unsigned requests, only while the gateway listens on loopback
  --json                   print the result as JSON`;

const options = {
  prompt: { type: "string" },
  events: { type: "string" },
  filter: { type: "string", multiple: true },
  description: { type: "string" },
  skills: { type: "string" },
  deliver: { type: "string" },
  "deliver-chat-id": { type: "string" },
  "deliver-thread": { type: "string" },
  "deliver-only": { type: "boolean" },
  format: { type: "string" },
  secret: { type: "string" },
  "rate-limit": { type: "string" },
  model: { type: "string" },
  "max-tokens": { type: "string" },
  temperature: { type: "string" },
  "system-prompt": { type: "string" },
  transform: { type: "string" },
  "transform-timeout": { type: "string" },
  coalesce: { type: "string" },
  "coalesce-key": { type: "string" },
  "coalesce-max": { type: "string" },
  session: { type: "string" },
  "session-budget": { type: "string" },
  auth: { type: "string" },
  json: { type: "boolean" },
} as const;

/** `agent webhook subscribe`. */
export const webhookSubscribe: Command = {
  path: ["webhook", "subscribe"],
  summary: "Create or update a webhook subscription",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, options, usage);
    if (positionals.length !== 1) throw new UsageError(`Expected one <name>.\n\n${usage}`);
    const name = positionals[0];
    checkName(name, "subscribe");
    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    refuseStatic(config, name, "subscribe");
    const changes = optionsToRecord(values);
    if (changes.auth === "none") checkAuthNone(config);
    if (changes.skills?.length) {
      await checkSkills(changes.skills, { skillsDir: config.paths.skills, warn: ctx.stderr });
    }

    const nowIso = new Date(ctx.now()).toISOString();
    const { record, updated, warnings } = await updateSubscriptionsOf(
      config,
      (records) => {
        const stored = storeMerged(records, name, { changes, nowIso, config });
        return { ...stored, updated: stored.existing !== undefined };
      },
    );
    // A new name is looked up afresh by the gateway; a changed one may be cached a moment.
    if (updated) await untilGatewaySeesChange(config);
    for (const warning of [...warnings, ...eventFilterWarnings(changes.events)]) {
      ctx.stderr(`Warning: ${warning}`);
    }
    if (record.disabled) {
      ctx.stderr(
        `Warning: "${name}" is disabled: the gateway answers its requests as an unknown name's ` +
          `(404) until: agent webhook enable ${name}`,
      );
    }
    // As for a target's token: the subscription is kept, but its runs fail until this is fixed.
    const agent = agentCheck(config);
    if (!record.deliver_only && !agent.ok) ctx.stderr(`Warning: ${agent.text}`);
    const webhook = await advertisedWebhook(config);
    const url = webhookUrl(webhook, name);
    if (values.json) {
      ctx.stdout(JSON.stringify({ name, webhook_url: url, ...record }, null, 2));
      return 0;
    }
    const verb = updated ? "Updated" : "Created";
    ctx.stdout(describe(record, { name, url, verb, env: config.env }));
    if (!addressCheck(webhook, config.paths).ok) {
      ctx.stdout(
        "Senders elsewhere cannot use a localhost URL: agent doctor shows how to get a public " +
          "one (a tunnel or a reverse proxy, then public_url).",
      );
    }
    return 0;
  },
};

/**
 * The human-readable summary printed by `subscribe`.
 * @param record the subscription as stored
 * @param options `name` and `url`: the subscription's; `verb`: "Created" or "Updated"; `env`:
 *   the configuration's environment, for the home channel a chat target falls back to
 */
function describe(
  record: Subscription,
  options: { name: string; url: string; verb: string; env: Record<string, string | undefined> },
): string {
  const { name, url, verb, env } = options;
  // An empty --prompt is no prompt: the gateway sends the default one.
  const prompt = record.prompt || "(none: the whole JSON payload is sent)";
  const preview = prompt.length > 100 ? `${prompt.slice(0, 100)}…` : prompt;
  const home = homeChannelOf(record.deliver ?? "log");
  const chat = record.deliver_extra?.chat_id
    ? ` (chat ${record.deliver_extra.chat_id})`
    : home && env[home]
    ? ` (chat ${env[home]}, from ${home})`
    : "";
  const secret = record.auth === "none"
    ? "none asked for (--auth none: unsigned requests, on a loopback address only)"
    : record.secret;
  return [
    `${verb} subscription "${name}"`,
    `  URL:     ${url}`,
    `  Secret:  ${secret}`,
    `  Events:  ${record.events?.length ? record.events.join(", ") : "all"}`,
    ...(record.filters ?? []).map((filter) => `  Filter:  ${filter}`),
    `  Deliver: ${record.deliver ?? "log"}${chat}` +
    (record.deliver_extra?.thread ? `, thread ${record.deliver_extra.thread}` : ""),
    `  Mode:    ${record.deliver_only ? "direct delivery (no agent run)" : "agent run"}` +
    (record.format ? `, sent as ${record.format}` : ""),
    `  Prompt:  ${preview}`,
    ...(record.transform ? [`  Transform: ${record.transform}`] : []),
    ...(record.coalesce ? [`  Coalesce: ${coalesceSummary(record)}`] : []),
    ...(record.session ? [`  Session: ${sessionSummary(record)}`] : []),
    ...(record.rate_limit ? [`  Limit:   ${record.rate_limit} requests/minute`] : []),
    "",
    "Configure the sender with this URL and secret, then try it: agent webhook test " + name,
  ].join("\n");
}
