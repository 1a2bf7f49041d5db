/**
 * The coalescing options of `agent webhook subscribe` (docs/subscriptions.md#coalescing):
 * `--coalesce <seconds>`, `--coalesce-key '<template>'` and `--coalesce-max <seconds>`, read
 * into the record fields they replace, and the check of the record they make once merged with
 * the stored one (a key may come from its `session`).
 *
 * @module
 */
import { UsageError } from "../errors.ts";
import {
  coalesceProblem,
  DEFAULT_COALESCE_MAX_SECONDS,
  type Route,
  type Subscription,
} from "./mod.ts";
import { renderTemplate } from "./templates.ts";

/** The flag of each coalescing field, for messages. */
const FLAGS: Record<string, string> = {
  coalesce: "--coalesce",
  coalesce_key: "--coalesce-key",
  coalesce_max: "--coalesce-max",
};

/**
 * Reads `--coalesce`, `--coalesce-key` and `--coalesce-max`. `--coalesce none` removes
 * coalescing, its key and its maximum.
 * @param text reads a flag's value
 * @returns the fields the flags give
 * @throws UsageError for a window or maximum that is no number of seconds > 0, or an empty key
 * @example
 * ```ts
 * coalesceOptions((flag) => ({ coalesce: "30", "coalesce-key": "{issue.number}" })[flag]);
 * // { coalesce: 30, coalesce_key: "{issue.number}" }
 * ```
 */
export function coalesceOptions(text: (key: string) => string | undefined): Subscription {
  const window = text("coalesce");
  if (window?.trim() === "none") {
    return { coalesce: undefined, coalesce_key: undefined, coalesce_max: undefined };
  }
  const record: Subscription = {};
  for (const field of ["coalesce", "coalesce_max"] as const) {
    const value = text(FLAGS[field].slice(2));
    if (value === undefined) continue;
    const seconds = value.trim() === "" ? NaN : Number(value);
    if (!(seconds > 0 && seconds < Infinity)) {
      throw new UsageError(
        `${FLAGS[field]} must be a number of seconds > 0` +
          (field === "coalesce" ? " (or none to stop coalescing)" : "") +
          `, got ${JSON.stringify(value)}`,
      );
    }
    record[field] = seconds;
  }
  const key = text("coalesce-key");
  if (key !== undefined) {
    if (key.trim() === "") {
      throw new UsageError(
        "--coalesce-key is empty: give a template such as '{repository.full_name}#{issue.number}'",
      );
    }
    record.coalesce_key = key;
  }
  return record;
}

/**
 * Refuses a merged record whose coalescing cannot work: no key (neither `--coalesce-key` nor
 * `--session`), a window longer than the maximum, a direct-delivery subscription, or a key or
 * maximum without a window.
 * @param record the record `subscribe` is about to store
 * @param name the subscription's name, for the message
 * @throws UsageError naming the flag and what to give
 */
export function checkCoalesce(record: Subscription, name: string): void {
  const problem = coalesceProblem(record as Record<string, unknown>);
  if (problem === undefined) return;
  const flag = FLAGS[problem.field] ?? problem.field;
  const rule = problem.rule.startsWith("needs a key")
    ? "needs a key: give --coalesce-key '<template>' (e.g. '{repository.full_name}#" +
      "{issue.number}'), or --session '<template>' to fold the events of one conversation"
    : problem.rule.replace("coalesce_max", "--coalesce-max").replace(
      "needs coalesce (the window)",
      "needs --coalesce <seconds> (the window)",
    );
  throw new UsageError(`Cannot subscribe "${name}": ${flag} ${rule}`);
}

/**
 * How a route coalesces, in one line for `subscribe`, `list` and `webhook test`.
 * @param record the subscription or static route
 * @returns e.g. `30 s window (at most 300 s), key {repository.full_name}#{issue.number}`;
 *   undefined when it does not coalesce
 */
export function coalesceSummary(record: Subscription): string | undefined {
  if (!record.coalesce) return undefined;
  const max = record.coalesce_max ?? DEFAULT_COALESCE_MAX_SECONDS;
  const key = record.coalesce_key ??
    `the session's, ${record.session ?? "(none)"}`;
  return `${record.coalesce} s window (at most ${max} s), key ${key}`;
}

/**
 * What `agent webhook test` says of a coalescing route before it sends: the key this payload
 * gets, and when its run would start.
 * @param route the route tested
 * @param options `payload`: the one sent; `event`: its type, as the gateway will read it
 * @returns one note, or none when the route does not coalesce
 */
export function coalesceNotes(
  route: Route,
  options: { payload: unknown; event: string },
): string[] {
  const template = route.coalesce_key ?? route.session;
  if (!route.coalesce || !template) return [];
  const context = { event: options.event, subscription: route.name, deliveryId: "test" };
  const { text, missing } = renderTemplate(template, options.payload, context);
  if (missing.length > 0) {
    const fields = missing.map((path) => `{${path}}`).join(", ");
    return [
      `Coalescing: the payload has no ${fields} for the key ${template}, so the event runs alone.`,
    ];
  }
  if (text.trim() === "") {
    return [
      `Coalescing: the key ${template} renders empty for this payload, so the event runs alone.`,
    ];
  }
  const max = route.coalesce_max ?? DEFAULT_COALESCE_MAX_SECONDS;
  return [
    `Coalescing: this event's key is ${JSON.stringify(text)}` +
    `; its agent run starts once ${route.coalesce} s pass without another event of that key ` +
    `(at most ${max} s after the first), and answers them all. Give --wait more than that.`,
  ];
}
