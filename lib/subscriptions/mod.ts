/**
 * The subscription record: one route from `POST /webhooks/<name>` to a target. The same shape
 * is used for dynamic subscriptions (`webhook_subscriptions.json`) and static routes
 * (`platforms.webhook.extra.routes` in `config.yaml`). See docs/subscriptions.md.
 *
 * @module
 */
import { ConfigError } from "../errors.ts";
import { MESSAGE_FORMATS, type MessageFormat, TARGET_NAMES } from "../targets/mod.ts";
import { isSchemeName, SCHEME_NAMES, type SchemeName } from "../signatures/mod.ts";
import { filterProblem, MAX_FILTERS } from "./filter.ts";

/** Where a subscription comes from: the CLI-managed file, or `config.yaml` (read-only). */
export type RouteOrigin = "dynamic" | "static";

/** One subscription as stored on disk (docs/subscriptions.md). Timestamps are ISO 8601 UTC. */
export interface Subscription {
  /** Free text shown by `list`. */
  description?: string;
  /** Event-type filter; empty or absent accepts every event. */
  events?: string[];
  /**
   * CEL expressions over the payload and `headers`, evaluated after the event-type filter; every
   * one must be true (docs/subscriptions.md#filters). Empty or absent accepts every event.
   */
  filters?: string[];
  /**
   * Set by `agent webhook disable`: the gateway answers the subscription's requests as it does an
   * unknown name's (404), and keeps its record and secret.
   */
  disabled?: boolean;
  /** Current HMAC secret (or shared token for GitLab/Bearer). */
  secret?: string;
  /** Previous secrets still accepted until `expires_at` (secret rotation). */
  previous_secrets?: { secret: string; expires_at: string }[];
  /**
   * Only this signature scheme is accepted when set (`subscribe --auth`); `none` accepts
   * requests without a signature, and only while the gateway listens on a loopback address
   * (docs/subscriptions.md#auth-none).
   */
  auth?: string;
  /** Prompt template with `{dot.path}` placeholders; absent dumps the payload. */
  prompt?: string;
  /** Skill names added to the system prompt, in order. */
  skills?: string[];
  /**
   * Target name: `log`, `telegram`, `discord`, `slack`, `github_comment`, `gitlab_comment` or
   * `origin` (docs/targets.md).
   */
  deliver?: string;
  /**
   * Target options; string values are rendered as templates. `chat_id`: the chat, channel or
   * item; `thread`: the thread in that chat (a Telegram forum topic, a Slack `thread_ts`, a
   * Discord thread id), rendered per event (docs/targets.md#threads).
   */
  deliver_extra?: { chat_id?: string; thread?: string };
  /** Direct delivery: the rendered template is the message, no agent run. */
  deliver_only?: boolean;
  /**
   * How the message is meant: `markdown` is rendered in each chat's formatting, `plain` sent as
   * written. Absent: `markdown` for an agent's answer, `plain` for a direct message
   * (docs/targets.md#formatting).
   */
  format?: MessageFormat;
  /** Requests per minute for this subscription, overriding `extra.rate_limit`. */
  rate_limit?: number;
  /** The model its agent runs ask for, over `agent.model` (docs/subscriptions.md#agent-options). */
  model?: string;
  /** The most tokens an answer may have, a whole number ≥ 1; absent: the endpoint's default. */
  max_tokens?: number;
  /** Sampling temperature, 0 to 2; absent: the endpoint's default. */
  temperature?: number;
  /** Instructions added to the system prompt, after the skills. */
  system_prompt?: string;
  /** When `subscribe` created it, ISO 8601 UTC. */
  created_at?: string;
  /** When a command last changed it, ISO 8601 UTC. */
  updated_at?: string;
}

/** A subscription with its name and origin, as the gateway and `list` see it. */
export interface Route extends Subscription {
  /** The `<name>` of `POST /webhooks/<name>`. */
  name: string;
  /** Whether it is a subscription of the file, or a static route of `config.yaml`. */
  origin: RouteOrigin;
}

/**
 * The secret a sender must use now: the route's own, else the global one for a static route
 * (`extra.secret` serves static routes that have none: docs/configuration.md). An empty secret
 * counts as none, as an empty setting does elsewhere.
 * @param route the route
 * @param globalSecret `extra.secret` / `WEBHOOK_SECRET`, if set
 * @returns the secret, or undefined when requests to the route are refused (403)
 */
export function currentSecret(route: Route, globalSecret: string | undefined): string | undefined {
  return route.secret || (route.origin === "static" ? globalSecret || undefined : undefined);
}

/**
 * Every secret a request may be signed with at `nowMs`: the current one, then the previous
 * ones still within their rotation grace period.
 * @param route the route
 * @param globalSecret `extra.secret` / `WEBHOOK_SECRET`, if set
 * @param nowMs the clock, in milliseconds since the epoch
 * @returns the secrets, current first; empty when requests to the route are refused (403)
 */
export function acceptedSecrets(
  route: Route,
  globalSecret: string | undefined,
  nowMs: number,
): string[] {
  const current = currentSecret(route, globalSecret);
  const previous = (route.previous_secrets ?? [])
    .filter((entry) => Date.parse(entry.expires_at) > nowMs)
    .map((entry) => entry.secret);
  return current === undefined ? previous : [current, ...previous];
}

/**
 * A new secret for a subscription (or the global one): 32 random bytes, base64url without
 * padding (43 characters). For a subscription pinned to Standard Webhooks, the form its
 * libraries and senders (Svix) take: `whsec_` and standard base64, whose decoded bytes are the
 * key. Source: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 * @param scheme the subscription's `auth`, if pinned
 * @returns the secret
 * @example
 * ```ts
 * generateSecret(); // "q3Jd…" (43 characters)
 * generateSecret("standard"); // "whsec_…"
 * ```
 */
export function generateSecret(scheme?: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const base64 = btoa(String.fromCharCode(...bytes));
  if (scheme === "standard") return `whsec_${base64}`;
  return base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Names allowed for subscriptions (docs/subscriptions.md). */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/**
 * What a subscription's `auth` may name: a signature scheme (docs/signatures.md), or `none`
 * (docs/subscriptions.md#auth-none).
 */
export const AUTH_NAMES: readonly SchemeName[] = [...SCHEME_NAMES, "none"];

const TEXT_FIELDS = [
  "description",
  "secret",
  "prompt",
  "deliver",
  "auth",
  "format",
  "model",
  "system_prompt",
  "created_at",
  "updated_at",
];

/** Every field of a {@link Subscription} record: what `checkRecord` reads, and nothing else. */
export const RECORD_FIELDS: readonly string[] = [
  ...TEXT_FIELDS,
  "events",
  "filters",
  "skills",
  "deliver_only",
  "disabled",
  "rate_limit",
  "max_tokens",
  "temperature",
  "deliver_extra",
  "previous_secrets",
];

/**
 * Refuses a `deliver` that names no target, an `auth` that names no signature scheme (nor
 * `none`), and `filters` that do not compile or are too many: the checks `checkRecord` leaves to
 * its callers, which word where the field is.
 * @param record a record `checkRecord` passed
 * @param field names a field for the message, e.g. `routes.ci.deliver in config.yaml`
 * @param file the file the record is in
 * @throws ConfigError with the valid names, or where a filter's mistake is
 */
export function checkTargetAndScheme(
  record: Subscription,
  field: (name: "deliver" | "auth" | "filters") => string,
  file: string,
): void {
  if (record.deliver !== undefined && !TARGET_NAMES.includes(record.deliver)) {
    throw new ConfigError(
      `${field("deliver")}: unknown target "${record.deliver}"; valid targets: ` +
        TARGET_NAMES.join(", "),
      { file },
    );
  }
  if (record.auth !== undefined && record.auth !== "none" && !isSchemeName(record.auth)) {
    throw new ConfigError(
      `${field("auth")}: unknown signature scheme "${record.auth}"; valid schemes: ` +
        AUTH_NAMES.join(", "),
      { file },
    );
  }
  const filters = record.filters ?? [];
  if (filters.length > MAX_FILTERS) {
    throw new ConfigError(`${field("filters")}: more than ${MAX_FILTERS} filters`, { file });
  }
  for (const [i, expression] of filters.entries()) {
    const problem = filterProblem(expression);
    if (problem !== undefined) {
      throw new ConfigError(`${field("filters")}: filter ${i + 1}, ${problem}`, { file });
    }
  }
}

/**
 * Checks the field types of one record read from a file and normalises what people naturally
 * write by hand: a numeric `deliver_extra.chat_id` (YAML `chat_id: -100123`) becomes a string.
 * Unknown fields are kept as they are.
 * @param record the parsed object
 * @param where names the record in messages, e.g. `subscription "gh" in /home/u/.agent/x.json`
 * @param file the file it came from
 * @returns the record with its fields checked
 * @throws ConfigError naming the field and the file for a value of the wrong type
 */
export function checkRecord(
  record: Record<string, unknown>,
  where: string,
  file: string,
): Subscription {
  const fail: Fail = (field, rule) => {
    throw new ConfigError(`${where}: ${field} ${rule}`, { file });
  };
  checkScalarFields(record, fail);
  const checked = { ...record } as Subscription;
  if (record.deliver_extra !== undefined) {
    checked.deliver_extra = checkDeliverExtra(record.deliver_extra, fail);
  }
  if (record.previous_secrets !== undefined && !isPreviousSecrets(record.previous_secrets)) {
    fail("previous_secrets", "must be a list of {secret, expires_at}");
  }
  if (record.deliver_only === true && (record.deliver === undefined || record.deliver === "log")) {
    fail("deliver_only", "needs a real target in deliver (not log)");
  }
  if (record.format !== undefined && !MESSAGE_FORMATS.includes(record.format as MessageFormat)) {
    fail("format", `must be ${MESSAGE_FORMATS.join(" or ")}`);
  }
  return checked;
}

/** Refuses a record's `field`, saying the `rule` it breaks. */
type Fail = (field: string, rule: string) => never;

/** Checks the record's text, list, boolean and number fields. */
function checkScalarFields(record: Record<string, unknown>, fail: Fail): void {
  for (const field of TEXT_FIELDS) {
    if (record[field] !== undefined && typeof record[field] !== "string") {
      fail(field, "must be a string");
    }
  }
  for (const field of ["events", "filters", "skills"]) {
    const value = record[field];
    if (
      value !== undefined && !(Array.isArray(value) && value.every((v) => typeof v === "string"))
    ) {
      fail(field, "must be a list of strings");
    }
  }
  for (const field of ["deliver_only", "disabled"]) {
    if (record[field] !== undefined && typeof record[field] !== "boolean") {
      fail(field, "must be true or false");
    }
  }
  const limit = record.rate_limit;
  if (limit !== undefined && !(Number.isSafeInteger(limit) && (limit as number) >= 1)) {
    fail("rate_limit", "must be a whole number of requests per minute (≥ 1)");
  }
  for (const field of ["model", "max_tokens", "temperature"] as const) {
    const problem = agentOptionProblem(field, record[field]);
    if (problem !== undefined) fail(field, problem);
  }
}

/**
 * What is wrong with one of a route's agent options (docs/subscriptions.md#agent-options):
 * a blank `model`, a `max_tokens` that is no whole number ≥ 1, a `temperature` outside 0–2.
 * `subscribe` checks its flags with it too.
 * @param field the record's field
 * @param value its value, as parsed (absent is fine)
 * @returns the rule it breaks, e.g. `must be a number from 0 to 2`; undefined when it is fine
 */
export function agentOptionProblem(
  field: "model" | "max_tokens" | "temperature",
  value: unknown,
): string | undefined {
  if (value === undefined) return undefined;
  if (field === "model") {
    return typeof value === "string" && value.trim() !== "" ? undefined : "must be a model name";
  }
  if (field === "max_tokens") {
    return Number.isSafeInteger(value) && (value as number) >= 1
      ? undefined
      : "must be a whole number of tokens (≥ 1)";
  }
  return typeof value === "number" && value >= 0 && value <= 2
    ? undefined
    : "must be a number from 0 to 2";
}

/**
 * Checks `deliver_extra`: a mapping whose `chat_id` and `thread` are text, or numbers (YAML's
 * `chat_id: -100123`, `thread: 42`), which become their text. Its other keys are kept as they
 * are.
 */
function checkDeliverExtra(extra: unknown, fail: Fail): Subscription["deliver_extra"] {
  if (extra === null || typeof extra !== "object" || Array.isArray(extra)) {
    fail("deliver_extra", "must be a mapping");
  }
  const checked: Record<string, unknown> = { ...(extra as object) };
  for (const key of ["chat_id", "thread"]) {
    const value = checked[key];
    if (value === undefined) continue;
    if (typeof value !== "string" && typeof value !== "number") {
      fail(`deliver_extra.${key}`, "must be a string");
    }
    checked[key] = String(value);
  }
  return checked;
}

/** Whether `value` is a list of `{secret, expires_at}` entries, both text. */
function isPreviousSecrets(value: unknown): boolean {
  return Array.isArray(value) &&
    value.every((p) =>
      p !== null && typeof p === "object" && typeof p.secret === "string" &&
      typeof p.expires_at === "string"
    );
}
