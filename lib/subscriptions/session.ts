/**
 * Conversations (docs/subscriptions.md#conversations): a subscription's `session` template,
 * rendered per event into the key of the conversation the event belongs to, and the checks of
 * its `session` and `session_budget` fields.
 *
 * @module
 */
import { DEFAULT_SESSION_BUDGET_TOKENS } from "../agents/conversation.ts";
import type { EventDispatch, RouteSnapshot } from "../state/mod.ts";
import type { Subscription } from "./mod.ts";
import { keepExactNumber } from "./payload.ts";
import { renderTemplate, type TemplateContext } from "./templates.ts";

export { DEFAULT_SESSION_BUDGET_TOKENS };

/** Longest conversation key, in characters: a key is a name, not a payload. */
export const MAX_SESSION_KEY_CHARS = 500;

/** How a number a double rounds prints (as `dispatchFor` checks): 16 digits, or an exponent. */
const ROUNDED_LOOKING = /\d{16}|\de[+-]\d/;

/** The conversation of one event, as `dispatchFor` stores it. */
export interface SessionDispatch {
  /** The key, on the event; absent when the event has none. */
  sessionKey?: EventDispatch["sessionKey"];
  /** The budget, in the route snapshot; absent when the event has no key or the route sets none. */
  route: Pick<RouteSnapshot, "sessionBudget">;
}

/**
 * Renders a route's conversation key for one payload. An event has none when the route has no
 * `session`, delivers directly (no agent run to converse), or when the template names a field
 * the payload lacks: such events run alone rather than all share the key with the placeholder
 * left in it. A key longer than {@link MAX_SESSION_KEY_CHARS} is cut there.
 * @param route the route's `session`, `session_budget` and `deliver_only`
 * @param event the parsed payload, the template context, and the payload's JSON text (to render
 *   numbers a double rounds as written)
 * @returns the key and the budget to store; nothing when the event has no conversation
 * @example
 * ```ts
 * sessionFor({ session: "{repository.full_name}#{issue.number}" }, { payload, context });
 * // { sessionKey: "octo/repo#12", route: {} }
 * ```
 */
export function sessionFor(
  route: Pick<Subscription, "session" | "session_budget" | "deliver_only">,
  event: { payload: unknown; context: TemplateContext; json?: string },
): SessionDispatch {
  const key = sessionKeyOf(route, event);
  if (key === undefined) return { route: {} };
  return {
    sessionKey: key,
    route: route.session_budget === undefined ? {} : { sessionBudget: route.session_budget },
  };
}

/**
 * The rendered key, or undefined (see {@link sessionFor}); also what `webhook test` shows.
 * @returns the key, or undefined with the paths the payload lacks (none when the route has no
 *   conversation at all)
 */
export function sessionKeyOf(
  route: Pick<Subscription, "session" | "deliver_only">,
  event: { payload: unknown; context: TemplateContext; json?: string },
): string | undefined {
  const template = route.session;
  if (!template || route.deliver_only) return undefined;
  let rendered = renderTemplate(template, event.payload, event.context);
  if (event.json !== undefined && ROUNDED_LOOKING.test(rendered.text)) {
    const exact = JSON.parse(event.json, keepExactNumber);
    rendered = renderTemplate(template, exact, event.context);
  }
  if (rendered.missing.length > 0 || rendered.text.trim() === "") return undefined;
  return rendered.text.slice(0, MAX_SESSION_KEY_CHARS);
}

/**
 * What is wrong with a record's conversation fields: a `session` that is blank, a
 * `session_budget` that is no whole number of tokens ≥ 1 or is set without `session`, or a
 * `session` on a direct-delivery subscription (it has no agent run to converse with).
 * @param record the record, as parsed or merged
 * @returns the field and the rule it breaks; undefined when they are fine
 * @example
 * ```ts
 * sessionProblem({ session_budget: 0, session: "{issue.number}" });
 * // { field: "session_budget", rule: "must be a whole number of tokens (≥ 1)" }
 * ```
 */
export function sessionProblem(
  record: Record<string, unknown>,
): { field: string; rule: string } | undefined {
  const { session, session_budget: budget } = record;
  if (session !== undefined && (typeof session !== "string" || session.trim() === "")) {
    return {
      field: "session",
      rule: "must be a template, e.g. '{repository.full_name}#{issue.number}'",
    };
  }
  if (budget !== undefined) {
    if (!(Number.isSafeInteger(budget) && (budget as number) >= 1)) {
      return { field: "session_budget", rule: "must be a whole number of tokens (≥ 1)" };
    }
    if (session === undefined) return { field: "session_budget", rule: "needs session" };
  }
  if (session !== undefined && record.deliver_only === true) {
    return {
      field: "session",
      rule: "keeps a conversation of agent runs, and a direct-delivery subscription has none",
    };
  }
  return undefined;
}
