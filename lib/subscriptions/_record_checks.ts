/**
 * Checking a subscription record as read from the subscription file or `config.yaml`: its
 * fields' types, its agent options, its target and scheme, its filters (docs/subscriptions.md).
 * Re-exported by `mod.ts`.
 *
 * @module
 */
import { ConfigError } from "../errors.ts";
import { MESSAGE_FORMATS, type MessageFormat, TARGET_NAMES } from "../targets/mod.ts";
import { isSchemeName } from "../signatures/mod.ts";
import { filterProblem, MAX_FILTERS } from "./filter.ts";
import { transformProblem, transformTimeoutProblem } from "../transforms/mod.ts";
import { AUTH_NAMES, type Subscription } from "./mod.ts";
import { sessionProblem } from "./session.ts";

const TEXT_FIELDS = [
  "description",
  "secret",
  "prompt",
  "deliver",
  "auth",
  "format",
  "model",
  "system_prompt",
  "coalesce_key",
  "transform",
  "session",
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
  "coalesce",
  "coalesce_max",
  "transform_timeout",
  "session_budget",
  "deliver_extra",
  "previous_secrets",
];

/**
 * Refuses a `deliver` that names no target, an `auth` that names no signature scheme (nor
 * `none`), `filters` that do not compile or are too many, and a `transform` that needs a shell:
 * the checks `checkRecord` leaves to its callers, which word where the field is.
 * @param record a record `checkRecord` passed
 * @param field names a field for the message, e.g. `routes.ci.deliver in config.yaml`
 * @param file the file the record is in
 * @throws ConfigError with the valid names, or where a filter's mistake is
 */
export function checkTargetAndScheme(
  record: Subscription,
  field: (name: "deliver" | "auth" | "filters" | "transform") => string,
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
  const transform = record.transform ? transformProblem(record.transform) : undefined;
  if (transform !== undefined) {
    throw new ConfigError(`${field("transform")}: ${transform}`, { file });
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
  const coalescing = coalesceProblem(record);
  if (coalescing !== undefined) fail(coalescing.field, coalescing.rule);
  const conversation = sessionProblem(record);
  if (conversation !== undefined) fail(conversation.field, conversation.rule);
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
  const timeout = transformTimeoutProblem(record.transform_timeout);
  if (timeout !== undefined) fail("transform_timeout", timeout);
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

/** How long a coalescing window stays open at most by default, in seconds. */
export const DEFAULT_COALESCE_MAX_SECONDS = 300;

/**
 * What is wrong with a record's coalescing fields (docs/subscriptions.md#coalescing): a window
 * or maximum that is no number of seconds > 0, a window longer than the maximum, no key (neither
 * `coalesce_key` nor `session`), a direct-delivery subscription (it has no agent run to fold
 * into), or `coalesce_key` or `coalesce_max` without `coalesce`. `subscribe` checks the merged
 * record with it too.
 * @param record the record, as parsed or merged
 * @returns the field and the rule it breaks; undefined when they are fine
 * @example
 * ```ts
 * coalesceProblem({ coalesce: 30 });
 * // { field: "coalesce", rule: "needs a key: coalesce_key (--coalesce-key '<template>'), or session" }
 * ```
 */
export function coalesceProblem(
  record: Record<string, unknown>,
): { field: string; rule: string } | undefined {
  const { coalesce, coalesce_max: max, coalesce_key: key } = record;
  const seconds = (value: unknown) => typeof value === "number" && value > 0 && value < Infinity;
  if (coalesce === undefined) {
    if (key !== undefined) return { field: "coalesce_key", rule: "needs coalesce (the window)" };
    if (max !== undefined) return { field: "coalesce_max", rule: "needs coalesce (the window)" };
    return undefined;
  }
  if (!seconds(coalesce)) return { field: "coalesce", rule: "must be a number of seconds > 0" };
  if (max !== undefined && !seconds(max)) {
    return { field: "coalesce_max", rule: "must be a number of seconds > 0" };
  }
  const most = (max as number | undefined) ?? DEFAULT_COALESCE_MAX_SECONDS;
  if ((coalesce as number) > most) {
    return { field: "coalesce", rule: `must be at most coalesce_max (${most} s)` };
  }
  if (typeof key === "string" && key.trim() === "") {
    return { field: "coalesce_key", rule: "must not be empty" };
  }
  if (key === undefined && !(typeof record.session === "string" && record.session.trim())) {
    return {
      field: "coalesce",
      rule: "needs a key: coalesce_key (--coalesce-key '<template>'), or session",
    };
  }
  if (record.deliver_only === true) {
    return {
      field: "coalesce",
      rule: "folds events into one agent run, and a direct-delivery subscription has none",
    };
  }
  return undefined;
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
