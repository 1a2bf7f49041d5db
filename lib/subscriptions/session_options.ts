/**
 * The conversation options of `agent webhook subscribe` (docs/subscriptions.md#conversations):
 * `--session '<template>'` and `--session-budget <tokens>`, read into the record fields they
 * replace; the check of the merged record; the line `subscribe` and `list` show; and what
 * `webhook test` says of the key its payload renders.
 *
 * @module
 */
import { UsageError } from "../errors.ts";
import type { Route, Subscription } from "./mod.ts";
import { DEFAULT_SESSION_BUDGET_TOKENS, sessionKeyOf, sessionProblem } from "./session.ts";
import { renderTemplate } from "./templates.ts";

/** The flag of each conversation field, for messages. */
const FLAGS: Record<string, string> = { session: "--session", session_budget: "--session-budget" };

/**
 * Reads `--session` and `--session-budget`. `--session ''` removes the conversation and its
 * budget (the turns already stored are forgotten after `session_ttl`).
 * @param text reads a flag's value
 * @returns the fields the flags give
 * @throws UsageError for a budget that is no whole number of tokens ≥ 1
 * @example
 * ```ts
 * sessionOptions((flag) => ({ session: "{issue.number}", "session-budget": "2000" })[flag]);
 * // { session: "{issue.number}", session_budget: 2000 }
 * ```
 */
export function sessionOptions(text: (key: string) => string | undefined): Subscription {
  const template = text("session");
  if (template !== undefined && template.trim() === "") {
    return { session: undefined, session_budget: undefined };
  }
  const record: Subscription = template === undefined ? {} : { session: template };
  const budget = text("session-budget");
  if (budget !== undefined) {
    const tokens = /^\s*\d+\s*$/.test(budget) ? Number(budget) : NaN;
    if (!(Number.isSafeInteger(tokens) && tokens >= 1)) {
      throw new UsageError(
        `--session-budget must be a whole number of tokens (≥ 1), got ${JSON.stringify(budget)}`,
      );
    }
    record.session_budget = tokens;
  }
  return record;
}

/**
 * Refuses a merged record whose conversation cannot work: a budget without `--session`, or a
 * conversation on a direct-delivery subscription.
 * @param record the record `subscribe` is about to store
 * @param name the subscription's name, for the message
 * @throws UsageError naming the flag and what to do
 */
export function checkSession(record: Subscription, name: string): void {
  const problem = sessionProblem(record as Record<string, unknown>);
  if (problem === undefined) return;
  const flag = FLAGS[problem.field] ?? problem.field;
  const rule = problem.rule === "needs session"
    ? "needs --session '<template>' (e.g. '{repository.full_name}#{issue.number}')"
    : problem.rule.startsWith("keeps a conversation")
    ? `${problem.rule}: give --session '' to remove it, or --no-deliver-only`
    : problem.rule;
  throw new UsageError(`Cannot subscribe "${name}": ${flag} ${rule}`);
}

/**
 * A route's conversation, in one line for `subscribe` and `list`.
 * @param record the subscription or static route
 * @returns e.g. `key {repository.full_name}#{issue.number}, earlier turns up to 4000 tokens`;
 *   undefined when it keeps none
 */
export function sessionSummary(record: Subscription): string | undefined {
  if (!record.session) return undefined;
  const budget = record.session_budget ?? DEFAULT_SESSION_BUDGET_TOKENS;
  return `key ${record.session}, earlier turns up to ${budget} tokens`;
}

/**
 * What `webhook test` says of a route's conversation for the payload it sends: the key it
 * renders, or why the event has none (docs/subscriptions.md#conversations).
 * @param route the route tested
 * @param options `payload`: the one sent; `event`: its type, as the gateway will read it
 * @returns one line; none when the route keeps no conversation
 * @example
 * ```ts
 * sessionNotes(route, { payload, event: "issues.opened" });
 * // ['Session: this event's conversation key is "octo/repo#12": its run gets ...']
 * ```
 */
export function sessionNotes(route: Route, options: { payload: unknown; event: string }): string[] {
  if (!route.session) return [];
  if (route.deliver_only) return [];
  const context = { event: options.event, subscription: route.name, deliveryId: "test" };
  const key = sessionKeyOf(route, { payload: options.payload, context });
  if (key !== undefined) {
    return [
      `Session: this event's conversation key is ${JSON.stringify(key)}: its run gets the ` +
      "earlier turns of that key, and a later event of the key gets this one's.",
    ];
  }
  const { missing } = renderTemplate(route.session, options.payload, context);
  const lacks = missing.length
    ? `the payload has no ${missing.map((path) => `{${path}}`).join(", ")}`
    : "it renders empty";
  return [`Session: ${route.session} gives no key (${lacks}), so this event runs alone.`];
}
