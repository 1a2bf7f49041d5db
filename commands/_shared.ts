/**
 * Helpers shared by the command modules: loading the configuration with the enabled check,
 * strict flag parsing with usage errors, and secrets.
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { type Config, loadConfig, platformDisabledMessage } from "../lib/config/mod.ts";
import { UsageError } from "../lib/errors.ts";
import { gatewayRunning, runningGatewayUrl } from "../lib/state/gateway_lock.ts";
import { SUBSCRIPTION_RECHECK_MS } from "../lib/subscriptions/file_store.ts";
import type { CommandContext } from "./_command.ts";

/**
 * Loads the configuration, prints its warnings (unknown keys) and checks that the webhook
 * platform is enabled.
 * @returns the configuration, or null after printing the "not enabled" message (exit 1)
 * @throws ConfigError for malformed configuration files
 */
export async function loadEnabledConfig(ctx: CommandContext): Promise<Config | null> {
  const config = await loadConfig(ctx.env);
  for (const warning of config.warnings) ctx.stderr(`Warning: ${warning}`);
  if (config.webhook.enabled) return config;
  ctx.stderr(platformDisabledMessage(config.paths, config.webhook.enabledBy));
  return null;
}

/**
 * Waits, after a subscription change was written, until a gateway running with this home uses
 * it: the gateway trusts its copy of the subscription file for up to
 * {@link SUBSCRIPTION_RECHECK_MS}, so without this wait a removed subscription, a revoked
 * secret or a narrower filter would still pass for that long after the command returned.
 * Returns at once when no gateway runs here.
 * @param config the command's configuration (the state folder, where the gateway's lock is)
 */
export async function untilGatewaySeesChange(config: Config): Promise<void> {
  if (!(await gatewayRunning(config.paths.stateDb))) return;
  await new Promise((resolve) => setTimeout(resolve, SUBSCRIPTION_RECHECK_MS + 20));
}

/**
 * The webhook settings that URLs printed for senders are made from: the configuration's, but
 * with the port of the gateway running with this home when it listens on another one (started
 * with `gateway run --port`, or `WEBHOOK_PORT` in its own environment), so that the URL printed
 * is one that answers. A `public_url` is printed as configured.
 * @param config the command's configuration
 * @returns the webhook settings, with `port` replaced when a gateway runs on another
 */
export async function advertisedWebhook(config: Config): Promise<Config["webhook"]> {
  if (config.webhook.publicUrl) return config.webhook;
  const running = await runningGatewayUrl(config.paths.stateDb);
  // `URL.port` is empty for http's own port, 80.
  const port = running === null ? NaN : Number(new URL(running).port || 80);
  return Number.isInteger(port) && port > 0 && port !== config.webhook.port
    ? { ...config.webhook, port }
    : config.webhook;
}

/**
 * `node:util` `parseArgs` in strict mode, with its errors turned into {@link UsageError}s
 * that carry the command's usage text.
 * @param argv the command's arguments, after its name (`["gh", "--events", "issues"]`)
 * @param options the flags it takes, as `parseArgs` describes them
 * @param usage the command's usage text, appended to every error
 * @returns `values`: each flag given, by name (`--no-x` as `x: false`); `positionals`: the rest
 * @throws UsageError for an unknown flag, a missing value, a flag given twice (`--x --no-x`
 *   included) or a wrong number of positionals
 */
export function parseFlags<T extends NonNullable<ParseArgsConfig["options"]>>(
  argv: string[],
  options: T,
  usage: string,
) {
  let parsed;
  try {
    // allowNegative: `--no-deliver-only` turns a boolean option back off on update.
    parsed = parseArgs({
      args: joinNegativeValues(argv, options),
      options,
      allowPositionals: true,
      allowNegative: true,
      strict: true,
      tokens: true,
    });
  } catch (error) {
    throw new UsageError(`${explainParseError(error as Error, options)}\n\n${usage}`);
  }
  // parseArgs keeps the last of a flag given twice: `--events a --events b` would drop `a`
  // unsaid, and `--deliver-only --no-deliver-only` would depend on the order.
  const given = new Map<string, string[]>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option") continue;
    // Deno's parseArgs names `--no-x` "no-x" (Node's names it "x").
    const name = !Object.hasOwn(options, token.name) && token.name.startsWith("no-")
      ? token.name.slice(3)
      : token.name;
    if (options[name]?.multiple) continue;
    given.set(name, [...given.get(name) ?? [], token.rawName]);
  }
  for (const [name, forms] of given) {
    if (forms.length < 2) continue;
    const list = LIST_FLAGS.has(name) ? " (a list is comma-separated: a,b)" : "";
    throw new UsageError(
      `--${name} is given ${forms.length} times (${forms.join(", ")}): give it once${list}` +
        `\n\n${usage}`,
    );
  }
  return { values: parsed.values, positionals: parsed.positionals };
}

/** The flags that take a comma-separated list. */
const LIST_FLAGS = new Set(["events", "skills"]);

/**
 * A whole number written in decimal digits, as flags take them.
 * @param text the flag's value
 * @returns the number, or NaN for anything else (`1e3`, `0x10`, `-1`, `1.5`, blanks), which
 *   `Number()` would take
 */
export function wholeNumber(text: string): number {
  return /^\d+$/.test(text) ? Number(text) : NaN;
}

/**
 * parseArgs's message for an unknown option, in our words and with the closest option it may
 * have meant (`--event` → `--events`); other messages as they are.
 */
function explainParseError(error: Error, options: ParseArgsConfig["options"]): string {
  const unknown = error.message.match(/^Unknown option '(--?[^']+)'/)?.[1];
  if (unknown === undefined) return error.message;
  const given = unknown.replace(/^-+/, "").split("=")[0];
  const names = Object.keys(options ?? {});
  const closest = names
    .map((name) => ({ name, distance: editDistance(given, name) }))
    .sort((a, b) => a.distance - b.distance)[0];
  return closest && closest.distance <= 2
    ? `Unknown option ${unknown}. Did you mean --${closest.name}?`
    : `Unknown option ${unknown}.`;
}

/** Levenshtein distance between two short strings. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length];
}

/**
 * Joins a string option and a value that starts with `-` and a digit into `--name=value`:
 * parseArgs takes `-1001234567890` (a Telegram group's chat id) for an option and refuses
 * `--deliver-chat-id -1001234567890` as ambiguous.
 */
function joinNegativeValues(argv: string[], options: ParseArgsConfig["options"]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--") return [...joined, ...argv.slice(i)];
    const name = argv[i].startsWith("--") ? argv[i].slice(2) : "";
    const next = argv[i + 1];
    if (options?.[name]?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${argv[i]}=${next}`);
      i++;
    } else {
      joined.push(argv[i]);
    }
  }
  return joined;
}

/**
 * A new subscription secret: 32 random bytes, base64url without padding (43 characters). For a
 * subscription pinned to Standard Webhooks, the form its libraries and senders (Svix) take:
 * `whsec_` and standard base64, whose decoded bytes are the key.
 * @param scheme the subscription's `--auth`, if pinned
 */
export function generateSecret(scheme?: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const base64 = btoa(String.fromCharCode(...bytes));
  if (scheme === "standard") return `whsec_${base64}`;
  return base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Splits a comma-separated option into trimmed, non-empty items. */
export function commaList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value.split(",").map((item) => item.trim()).filter((item) => item !== "");
}
