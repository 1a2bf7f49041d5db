/**
 * The options of `agent webhook subscribe` as the record fields they replace, with their checks
 * and the warnings about an `--events` filter that matches nothing. The dashboard's form gives
 * the same options under the same names, so both keep one set of rules and messages.
 *
 * @module
 */
import { UsageError } from "../errors.ts";
import { agentOptionProblem, AUTH_NAMES, type Subscription } from "./mod.ts";
import { filterProblem, MAX_FILTERS } from "./filter.ts";
import { coalesceOptions } from "./coalesce_options.ts";
import { sessionOptions } from "./session_options.ts";
import { transformProblem, transformTimeoutProblem } from "../transforms/mod.ts";
import { isSchemeName } from "../signatures/mod.ts";
import { MESSAGE_FORMATS, type MessageFormat, TARGET_NAMES } from "../targets/mod.ts";

/**
 * The options given, by their flag's name without `--`: text, a list for the repeatable
 * `filter`, a boolean for `deliver-only`; an option not given is absent.
 */
export type SubscribeOptions = Record<string, string | string[] | boolean | undefined>;

/**
 * Turns the given options into the record fields they replace.
 * @param values the options given: the parsed flags of `subscribe`, or the dashboard's form
 * @returns the fields the flags give; a flag not given leaves its field out
 * @throws UsageError for an empty --events, --deliver or --deliver-thread, a --deliver
 *   shorthand that cannot be one or is given with --deliver-chat-id, a --filter that does not compile (where
 *   its mistake is), a --secret shorter than 8 characters, a --rate-limit that is no whole number
 *   ≥ 1, an --auth that is no scheme nor `none`, a --format that is neither plain nor markdown,
 *   or a --transform that needs a shell
 */
export function optionsToRecord(values: SubscribeOptions): Subscription {
  const text = (key: string) => values[key] as string | undefined;
  const record: Subscription = {};
  if (text("prompt") !== undefined) record.prompt = text("prompt");
  if (text("events") !== undefined) record.events = eventFilter(text("events")!);
  if (values.filter !== undefined) record.filters = payloadFilters(values.filter as string[]);
  if (text("description") !== undefined) record.description = text("description");
  // A skill named twice would be added to the system prompt twice.
  if (text("skills") !== undefined) record.skills = [...new Set(commaList(text("skills")))];
  Object.assign(record, destination(text));
  if (values["deliver-only"] !== undefined) record.deliver_only = values["deliver-only"] as boolean;
  if (text("format") !== undefined) record.format = messageFormat(text("format")!);
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
    if (!isSchemeName(text("auth")!) && text("auth") !== "none") {
      throw new UsageError(`--auth must be one of: ${AUTH_NAMES.join(", ")}`);
    }
    record.auth = text("auth");
  }
  Object.assign(record, agentOptions(text));
  Object.assign(record, transformOptions(text));
  Object.assign(record, coalesceOptions(text));
  Object.assign(record, sessionOptions(text));
  return record;
}

/**
 * Reads `--transform` and `--transform-timeout` (docs/subscriptions.md#transforms).
 * `--transform ''` removes the transform and its time limit.
 * @param text reads a flag's value
 * @returns the fields the flags give
 * @throws UsageError for a transform that needs a shell (an operator, a glob, a variable, a
 *   substitution), saying which part, or a time limit that is no number of seconds in (0, 300]
 */
function transformOptions(text: (key: string) => string | undefined): Subscription {
  const record: Subscription = {};
  const command = text("transform");
  if (command !== undefined && command.trim() === "") {
    return { transform: undefined, transform_timeout: undefined };
  }
  if (command !== undefined) {
    const problem = transformProblem(command);
    if (problem !== undefined) {
      throw new UsageError(
        `--transform ${JSON.stringify(command)}: ${problem}\nTransforms run a program with ` +
          "its arguments, without a shell: see docs/subscriptions.md#transforms",
      );
    }
    record.transform = command;
  }
  const timeout = text("transform-timeout");
  if (timeout !== undefined) {
    record.transform_timeout = timeout.trim() === "" ? NaN : Number(timeout);
    const problem = transformTimeoutProblem(record.transform_timeout);
    if (problem !== undefined) {
      throw new UsageError(`--transform-timeout ${problem}, got ${JSON.stringify(timeout)}`);
    }
  }
  return record;
}

/** The targets whose chat can follow their name in `--deliver`: `telegram:<chat>[:<thread>]`. */
const CHAT_SHORTHANDS = ["telegram", "discord", "slack"];

/**
 * Reads `--deliver`, `--deliver-chat-id` and `--deliver-thread`. `--deliver <target>:<chat>`
 * is short for `--deliver <target> --deliver-chat-id <chat>` (docs/targets.md#threads).
 * `--deliver-thread none` removes the thread (stored as "" until the merge drops it).
 * @param text reads a flag's value
 * @returns the fields the flags give
 * @throws UsageError for an empty --deliver or --deliver-thread, a shorthand with a chat for a
 *   target that takes none, or a shorthand given with --deliver-chat-id
 */
function destination(text: (key: string) => string | undefined): Subscription {
  const record: Subscription = {};
  let chatId = text("deliver-chat-id");
  if (text("deliver") !== undefined) {
    const [target, ...chat] = text("deliver")!.trim().split(":");
    record.deliver = target.trim();
    // An unset shell variable, more likely than a wish for the default: the gateway refuses "".
    if (record.deliver === "") {
      throw new UsageError(`--deliver is empty: give one of ${TARGET_NAMES.join(", ")}`);
    }
    if (chat.length > 0) chatId = shorthandChat(record.deliver, chat.join(":"), chatId);
  }
  const thread = text("deliver-thread");
  if (chatId === undefined && thread === undefined) return record;
  if (thread !== undefined && thread.trim() === "") {
    throw new UsageError(
      "--deliver-thread is empty: give a thread (a topic id, a Slack ts, a template such as " +
        "'{event.thread_ts}'), or none to remove it",
    );
  }
  record.deliver_extra = {
    ...(chatId === undefined ? {} : { chat_id: chatId }),
    ...(thread === undefined ? {} : { thread: thread.trim() === "none" ? "" : thread }),
  };
  return record;
}

/**
 * The chat of a `--deliver <target>:<chat>` shorthand.
 * @throws UsageError for a target without chats, or when --deliver-chat-id is given too
 */
function shorthandChat(target: string, chat: string, chatId: string | undefined): string {
  if (!CHAT_SHORTHANDS.includes(target)) {
    throw new UsageError(
      `--deliver ${target}:${chat}: only ${CHAT_SHORTHANDS.join(", ")} take a chat after a colon`,
    );
  }
  if (chatId !== undefined) {
    throw new UsageError(
      `--deliver ${target}:${chat} already names the chat: drop --deliver-chat-id ${chatId}, ` +
        `or give --deliver ${target} with it`,
    );
  }
  return chat;
}

/**
 * Reads `--model`, `--max-tokens`, `--temperature` and `--system-prompt`: the subscription's
 * own agent options (docs/subscriptions.md#agent-options), checked as the gateway checks them.
 * @param text reads a flag's value
 * @returns the fields the flags give
 * @throws UsageError for a blank model, a max tokens that is no whole number ≥ 1, or a
 *   temperature that is no number from 0 to 2
 */
function agentOptions(text: (key: string) => string | undefined): Subscription {
  const record: Subscription = {};
  if (text("model") !== undefined) record.model = text("model")!.trim();
  if (text("max-tokens") !== undefined) record.max_tokens = wholeNumber(text("max-tokens")!);
  if (text("temperature") !== undefined) {
    const value = text("temperature")!.trim();
    record.temperature = value === "" ? NaN : Number(value);
  }
  const flags = { model: "--model", max_tokens: "--max-tokens", temperature: "--temperature" };
  for (const [field, flag] of Object.entries(flags) as [keyof typeof flags, string][]) {
    const problem = agentOptionProblem(field, record[field]);
    if (problem !== undefined) {
      throw new UsageError(`${flag} ${problem}, got ${JSON.stringify(text(flag.slice(2)))}`);
    }
  }
  if (text("system-prompt") !== undefined) record.system_prompt = text("system-prompt");
  return record;
}

/**
 * Reads the `--filter` flags: CEL expressions that must all hold (docs/subscriptions.md#filters).
 * `--filter true` alone removes a subscription's filters, as `--events all` its event filter.
 * @param expressions the flags' values, in order
 * @returns the filters to store; none for `--filter true`
 * @throws UsageError for an empty one (more likely an unset shell variable than a wish), more
 *   than {@link MAX_FILTERS}, or one that does not compile, with its column and a caret
 */
function payloadFilters(expressions: string[]): string[] {
  if (expressions.length === 1 && expressions[0].trim() === "true") return [];
  if (expressions.length > MAX_FILTERS) {
    throw new UsageError(`--filter is given ${expressions.length} times: at most ${MAX_FILTERS}`);
  }
  for (const [i, expression] of expressions.entries()) {
    const which = expressions.length > 1 ? `--filter ${i + 1}` : "--filter";
    if (expression.trim() === "") {
      throw new UsageError(
        `${which} is empty: give a CEL expression, e.g. 'pull_request.base.ref == "main"', or ` +
          "--filter true alone to remove the filters",
      );
    }
    const problem = filterProblem(expression);
    if (problem !== undefined) {
      throw new UsageError(
        `${which} has a mistake at ${problem}\nFilters are CEL expressions: see ` +
          "docs/subscriptions.md#filters",
      );
    }
  }
  return expressions;
}

/**
 * Reads `--format`: `plain` or `markdown` (docs/targets.md#formatting).
 * @param value the flag's value
 * @returns the format
 * @throws UsageError for any other value
 */
function messageFormat(value: string): MessageFormat {
  const format = value.trim().toLowerCase() as MessageFormat;
  if (MESSAGE_FORMATS.includes(format)) return format;
  throw new UsageError(
    `--format must be ${MESSAGE_FORMATS.join(" or ")} (markdown: render the message in each ` +
      `chat's formatting), got ${JSON.stringify(value)}`,
  );
}

/**
 * Reads `--events`: a list, or `all` for every event (an empty filter). An empty value is
 * refused: it is more likely an unset shell variable than a wish to receive everything.
 * @param value the flag's value
 * @returns the event types; none for `all`
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
 * Warns of `--events` entries that no event can match: filters compare whole types
 * (docs/http.md), with no wildcards, and `all` means every event only on its own.
 * @param events the filter being stored, if `--events` was given
 * @returns one warning per such entry
 */
export function eventFilterWarnings(events: string[] | undefined): string[] {
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

/** A comma-separated list, its items trimmed and the empty ones dropped (as `commands/_flags.ts`). */
function commaList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value.split(",").map((item) => item.trim()).filter((item) => item !== "");
}

/** Digits only as their number; anything else (a sign, a dot, blanks) as NaN. */
function wholeNumber(text: string): number {
  return /^\d+$/.test(text) ? Number(text) : NaN;
}
