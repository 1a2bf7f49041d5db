/**
 * `agent webhook subscribe <name>`: creates or updates a dynamic subscription (CONTRACT §3).
 *
 * @module
 */
import { webhookUrl } from "../lib/config.ts";
import { ConfigError, UsageError } from "../lib/errors.ts";
import { checkName, refuseStatic } from "../lib/routes.ts";
import { findSkill, listSkills } from "../lib/skills.ts";
import { checkRecord, NAME_PATTERN, type Subscription } from "../lib/subscription.ts";
import { updateSubscriptions, wrongFieldType } from "../lib/subscription_store.ts";
import { isSchemeName, SCHEME_NAMES } from "../lib/signatures/mod.ts";
import { homeChannelOf, TARGET_NAMES, validateTarget } from "../lib/targets/mod.ts";
import type { Command } from "./_command.ts";
import {
  advertisedWebhook,
  commaList,
  generateSecret,
  loadEnabledConfig,
  parseFlags,
  untilGatewaySeesChange,
  wholeNumber,
} from "./_shared.ts";

const usage = `Usage: agent webhook subscribe <name> [options]

Creates the subscription <name>, or updates it (given options replace, omitted ones are kept).
<name> must match ${NAME_PATTERN.source}.

Options:
  --prompt TEXT            prompt template with {dot.path} placeholders (default: the whole payload)
  --events LIST            comma-separated event types, e.g. issues,pull_request.opened
                           (default, or --events all: every event)
  --description TEXT       free text shown by list
  --skills LIST            comma-separated skill names from ~/.agent/skills
  --deliver TARGET         log (default), telegram, discord, slack, github_comment, gitlab_comment, origin
  --deliver-chat-id ID     chat, channel or item on the target
  --deliver-only           direct delivery: send the rendered prompt itself, no agent run
                           (--no-deliver-only switches an existing subscription back)
  --secret SECRET          HMAC secret (default: 32 random bytes, kept on update)
  --rate-limit N           requests per minute for this subscription
  --auth SCHEME            accept only this signature scheme (${SCHEME_NAMES.join(", ")})
  --json                   print the result as JSON`;

const options = {
  prompt: { type: "string" },
  events: { type: "string" },
  description: { type: "string" },
  skills: { type: "string" },
  deliver: { type: "string" },
  "deliver-chat-id": { type: "string" },
  "deliver-only": { type: "boolean" },
  secret: { type: "string" },
  "rate-limit": { type: "string" },
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
    if (changes.skills?.length) {
      await checkSkills(changes.skills, { skillsDir: config.paths.skills, warn: ctx.stderr });
    }

    const nowIso = new Date(ctx.now()).toISOString();
    const { record, updated, warnings } = await updateSubscriptions(
      config.paths.subscriptions,
      (records) => {
        const existing = Object.hasOwn(records, name) ? records[name] : undefined;
        const merged: Subscription = { ...existing, ...changes };
        // A field of the wrong type in a record edited by hand stays unless this command gives
        // it anew: the record would still be refused by the gateway, so it is not written.
        // Checked first, before anything reads the fields.
        if (typeof merged.created_at !== "string") delete merged.created_at; // set below
        if (existing !== undefined && wrongFieldType(existing) !== undefined) {
          try {
            const where = `subscription "${name}" in ${config.paths.subscriptions}`;
            checkRecord(merged as Record<string, unknown>, where, config.paths.subscriptions);
          } catch (error) {
            if (!(error instanceof ConfigError)) throw error;
            throw new ConfigError(
              `${error.message}; fix it in the file, or give it anew with its flag where it has one`,
              { file: config.paths.subscriptions },
            );
          }
        }
        // Another target without a chat id of its own: the old target's chat means nothing
        // there (a Telegram chat is not a Slack channel), so the new one uses its home channel.
        // The log target has no chats: a chat id given while it was the target was for the next.
        const retargeted = changes.deliver !== undefined && changes.deliver !== existing?.deliver &&
          (existing?.deliver ?? "log") !== "log";
        if (retargeted && changes.deliver_extra === undefined && merged.deliver_extra) {
          const { chat_id: _, ...rest } = merged.deliver_extra;
          if (Object.keys(rest).length) merged.deliver_extra = rest;
          else delete merged.deliver_extra;
        }
        merged.deliver ??= "log";
        // An empty secret counts as none (403): a new one replaces it.
        merged.secret ||= generateSecret(merged.auth);
        merged.created_at ??= nowIso;
        merged.updated_at = nowIso;
        const warnings = validateTarget({
          target: merged.deliver,
          chatId: merged.deliver_extra?.chat_id,
          deliverOnly: merged.deliver_only ?? false,
          env: config.env,
        });
        if (changes.secret !== undefined || changes.auth !== undefined) {
          warnings.push(...checkSecretForScheme(merged.secret, merged.auth));
        }
        records[name] = merged;
        return { record: merged, updated: existing !== undefined, warnings };
      },
    );
    // A new name is looked up afresh by the gateway; a changed one may be cached a moment.
    if (updated) await untilGatewaySeesChange(config);
    for (const warning of [...warnings, ...eventFilterWarnings(changes.events)]) {
      ctx.stderr(`Warning: ${warning}`);
    }
    const url = webhookUrl(await advertisedWebhook(config), name);
    if (values.json) {
      ctx.stdout(JSON.stringify({ name, webhook_url: url, ...record }, null, 2));
      return 0;
    }
    ctx.stdout(describe(name, url, record, updated ? "Updated" : "Created", config.env));
    return 0;
  },
};

/**
 * Reads `--events`: a list, or `all` for every event (an empty filter). An empty value is
 * refused: it is more likely an unset shell variable than a wish to receive everything.
 * @throws UsageError for an empty value
 */
function eventFilter(value: string): string[] {
  const events = commaList(value) ?? [];
  if (events.length === 1 && events[0] === "all") return [];
  if (events.length === 0) {
    throw new UsageError(
      "--events is empty: list event types (issues,pull_request.opened), or give --events all " +
        "to receive every event",
    );
  }
  return events;
}

/**
 * The schemes whose senders send the secret itself as a header value (`X-Gitlab-Token`,
 * `Authorization: Bearer`), rather than signing with it.
 */
const HEADER_TOKEN_SCHEMES: readonly string[] = ["gitlab", "bearer"];

/** Visible ASCII, with spaces inside only: what a header value can carry unchanged. */
const HEADER_TOKEN = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * Checks that a subscription's secret can work under its scheme.
 * @param secret the secret the subscription will have
 * @param auth its pinned scheme, if any
 * @returns warnings: a Standard Webhooks secret not written `whsec_<base64>`, which the
 *   providers' libraries cannot sign with
 * @throws UsageError for a gitlab or bearer secret that a header cannot carry (letters outside
 *   ASCII, control characters, blanks at either end): no sender could ever authenticate
 */
function checkSecretForScheme(secret: string, auth: string | undefined): string[] {
  if (auth !== undefined && HEADER_TOKEN_SCHEMES.includes(auth) && !HEADER_TOKEN.test(secret)) {
    throw new UsageError(
      `--auth ${auth} senders send the secret as a header, which carries only ASCII letters, ` +
        "digits and punctuation (spaces inside): this secret could never match. Give another " +
        "--secret, or none for a generated one",
    );
  }
  if (auth === "standard" && !secret.startsWith("whsec_")) {
    return [
      "the secret does not start with whsec_: Standard Webhooks libraries expect " +
      "whsec_<base64> and cannot sign with it. `agent webhook rotate-secret` makes one",
    ];
  }
  return [];
}

/**
 * Warns of `--events` entries that no event can match: filters compare whole types (CONTRACT
 * §6), with no wildcards, and `all` means every event only on its own.
 * @param events the filter being stored, if `--events` was given
 * @returns one warning per such entry
 */
function eventFilterWarnings(events: string[] | undefined): string[] {
  return (events ?? []).flatMap((entry) => {
    if (entry.includes("*")) {
      return [
        `--events "${entry}" matches no event: types are compared whole, without wildcards ` +
        "(give each type, or --events all for every event)",
      ];
    }
    if (entry === "all") {
      return ['--events "all" with other types is a type named "all": alone, it means every event'];
    }
    return [];
  });
}

/** Turns the given flags into the record fields they replace. */
function optionsToRecord(values: Record<string, string | boolean | undefined>): Subscription {
  const text = (key: string) => values[key] as string | undefined;
  const record: Subscription = {};
  if (text("prompt") !== undefined) record.prompt = text("prompt");
  if (text("events") !== undefined) record.events = eventFilter(text("events")!);
  if (text("description") !== undefined) record.description = text("description");
  if (text("skills") !== undefined) record.skills = commaList(text("skills"));
  if (text("deliver") !== undefined) {
    record.deliver = text("deliver")!.trim();
    // An unset shell variable, more likely than a wish for the default: the gateway refuses "".
    if (record.deliver === "") {
      throw new UsageError(`--deliver is empty: give one of ${TARGET_NAMES.join(", ")}`);
    }
  }
  if (text("deliver-chat-id") !== undefined) {
    record.deliver_extra = { chat_id: text("deliver-chat-id") };
  }
  if (values["deliver-only"] !== undefined) record.deliver_only = values["deliver-only"] as boolean;
  if (text("secret") !== undefined) {
    if (text("secret")!.length < 8) throw new UsageError("--secret must be at least 8 characters");
    record.secret = text("secret");
    record.previous_secrets = undefined;
  }
  if (text("rate-limit") !== undefined) {
    const limit = wholeNumber(text("rate-limit")!);
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new UsageError("--rate-limit must be a whole number of requests per minute (≥ 1)");
    }
    record.rate_limit = limit;
  }
  if (text("auth") !== undefined) {
    if (!isSchemeName(text("auth")!)) {
      throw new UsageError(`--auth must be one of: ${SCHEME_NAMES.join(", ")}`);
    }
    record.auth = text("auth");
  }
  return record;
}

/**
 * Checks the skills a subscription asks for as its runs will load them: a broken skill folder
 * matters only when it is asked for; the others are named in one warning line each.
 * @param names the `--skills` names
 * @param options `skillsDir`: the `skills` folder; `warn`: prints a line on stderr
 * @throws ConfigError naming the `SKILL.md` and the reason when an asked-for skill is broken
 * @throws UsageError naming the unknown skills and listing the installed (and broken) ones
 */
async function checkSkills(
  names: string[],
  options: { skillsDir: string; warn: (line: string) => void },
): Promise<void> {
  const { skillsDir, warn } = options;
  const listing = await listSkills(skillsDir);
  const { skills, broken } = listing;
  const installed = skills.map((skill) => skill.name);
  // As a run finds them: an asked-for skill whose SKILL.md is broken is refused with its error.
  const missing = names.filter((name) => findSkill(listing, name) === undefined);
  for (const { folder, error } of broken) {
    warn(`Warning: skill "${folder}" cannot be used: ${error.message}`);
  }
  if (missing.length === 0) return;
  const choices = installed.length ? installed.join(", ") : `none (add them under ${skillsDir})`;
  const unusable = broken.length
    ? `; broken: ${broken.map((skill) => skill.folder).join(", ")} (see the warnings above)`
    : "";
  throw new UsageError(
    `Unknown skill ${missing.join(", ")}. Installed skills: ${choices}${unusable}`,
  );
}

/**
 * The human-readable summary printed by `subscribe`.
 * @param verb "Created" or "Updated"
 * @param env the configuration's environment, for the home channel a chat target falls back to
 */
function describe(
  name: string,
  url: string,
  record: Subscription,
  verb: string,
  env: Record<string, string | undefined>,
): string {
  // An empty --prompt is no prompt: the gateway sends the default one.
  const prompt = record.prompt || "(none: the whole JSON payload is sent)";
  const preview = prompt.length > 100 ? `${prompt.slice(0, 100)}…` : prompt;
  const home = homeChannelOf(record.deliver ?? "log");
  const chat = record.deliver_extra?.chat_id
    ? ` (chat ${record.deliver_extra.chat_id})`
    : home && env[home]
    ? ` (chat ${env[home]}, from ${home})`
    : "";
  return [
    `${verb} subscription "${name}"`,
    `  URL:     ${url}`,
    `  Secret:  ${record.secret}`,
    `  Events:  ${record.events?.length ? record.events.join(", ") : "all"}`,
    `  Deliver: ${record.deliver ?? "log"}${chat}`,
    `  Mode:    ${record.deliver_only ? "direct delivery (no agent run)" : "agent run"}`,
    `  Prompt:  ${preview}`,
    ...(record.rate_limit ? [`  Limit:   ${record.rate_limit} requests/minute`] : []),
    "",
    "Configure the sender with this URL and secret, then try it: agent webhook test " + name,
  ].join("\n");
}
