/**
 * What `agent webhook test` and the dashboard's Test button say besides the gateway's answer:
 * before sending, the template paths the payload lacks; after, what the answer means and what to
 * try next.
 *
 * @module
 */
import type { SchemeName } from "../signatures/mod.ts";
import type { Route } from "./mod.ts";
import { renderTemplate } from "./templates.ts";
import type { SentEvent } from "./test_event.ts";
import { filterHints, ignoredReason, unservedHints } from "./test_filter_hints.ts";

/**
 * Notes on the placeholders of the route's prompt and chat id that the payload cannot fill.
 * @param route the route tested
 * @param options `payload`: the one sent; `event`: its type, as the gateway will read it
 * @returns one note for each template with missing paths
 */
export function missingPathNotes(
  route: Route,
  options: { payload: unknown; event: string },
): string[] {
  const { payload, event } = options;
  const context = { event, subscription: route.name, deliveryId: "test" };
  const templates = [
    { template: route.prompt, where: "the prompt" },
    { template: route.deliver_extra?.chat_id, where: "the chat id the message goes to" },
  ];
  const notes: string[] = [];
  for (const { template, where } of templates) {
    if (!template) continue;
    const { missing } = renderTemplate(template, payload, context);
    if (missing.length) {
      notes.push(
        `Note: the payload has no ${
          missing.map((path) => `{${path}}`).join(", ")
        }; these stay literally in ${where}.`,
      );
    }
  }
  return notes;
}

/**
 * Why a route's secret cannot sign the test event, and how to fix it.
 * @param route the route tested
 * @param scheme the scheme it signs with
 * @returns the message
 */
export function noSigningKeyMessage(route: Route, scheme: SchemeName): string {
  const fix = route.origin === "static"
    ? "correct it in config.yaml"
    : `set a new one with agent webhook rotate-secret ${route.name}`;
  return `The secret of "${route.name}" gives no ${scheme} signing key (a whsec_ secret must be ` +
    `base64): ${fix}.`;
}

/**
 * What the gateway's answer means, where it needs saying.
 * @param answer the response's `status` code and its body's `text`
 * @param options `route` and `scheme`: the route tested and its scheme; `sent`: the event's
 *   headers and type field; `label`: the event's type, as the gateway read it; `request`: the
 *   payload and all the headers sent, to explain a filter that did not hold
 * @returns one hint per line to print: an event outside the filter, a filter that did not hold
 *   and what it read, a duplicate delivery id, a target's refusal (502), a refused signature
 *   (401), a subscription not served (404)
 */
export function answerHints(
  answer: { status: number; text: string },
  options: {
    route: Route;
    scheme: SchemeName;
    sent: SentEvent;
    label: string;
    request?: { payload: unknown; headers: Record<string, string> };
  },
): string[] {
  const { route, scheme, sent, label, request } = options;
  const hints: string[] = [];
  const status = answerStatus(answer.text);
  const reason = ignoredReason(answer.text);
  if (reason === "filter" && request !== undefined) {
    const headers = new Headers({ "content-type": "application/json", ...request.headers });
    hints.push(...filterHints(route, { payload: request.payload, headers }));
  }
  if (reason === "transform") {
    hints.push(
      `The transform (${route.transform}) printed {"skip": true} for this payload: the event ` +
        "was dropped. Change the payload with --payload, or the transform with agent webhook " +
        `subscribe ${route.name} --transform ... (docs/subscriptions.md#transforms).`,
    );
  }
  if (answer.status === 404) hints.push(...unservedHints(route));
  if (status === "ignored" && reason === undefined) {
    hints.push(
      `The event "${label}" is not in the subscription's filter (${
        route.events?.join(", ")
      }). Try ${suggestEvent(sent, { scheme, filter: route.events?.[0] })}.`,
    );
  }
  if (status === "duplicate") {
    hints.push(
      "The gateway has already seen this delivery id: for Stripe it is the payload's id, for " +
        "Slack its event_id. Change it in --payload to send the event again.",
    );
  }
  if (answer.status === 502) {
    hints.push(`The target refused the message; the reason: agent webhook events ${route.name}`);
  }
  if (answer.status === 401) {
    hints.push("The gateway refused the signature: is it running with the same home folder?");
  }
  return hints;
}

/**
 * What sends an event a filter entry accepts. GitHub, GitLab and Linear: `--event issues` for
 * `issues`, and for `issues.opened` also the payload's `action`, which they send in the body
 * (GitLab only with some events). The other schemes read the whole entry as the type
 * (`payment_intent.succeeded`). A payload that names its type itself gets the advice for that
 * field instead of `--event`.
 * @param options `scheme`: the one the event is signed with; `filter`: the filter entry to
 *   match, if the subscription has one
 */
function suggestEvent(
  sent: SentEvent,
  options: { scheme: SchemeName; filter: string | undefined },
): string {
  const { scheme, filter } = options;
  if (filter === undefined) return "--event <type>";
  const dot = filter.indexOf(".");
  const split = (scheme === "github" || scheme === "gitlab" || scheme === "linear") && dot > 0;
  const type = split ? filter.slice(0, dot) : filter;
  const action = split ? filter.slice(dot + 1) : undefined;
  const gitlabNote = scheme === "gitlab" && action !== undefined
    ? ` (GitLab sends a top-level "action" only with some events, milestones for one; the ` +
      `others never match "${filter}")`
    : "";
  if (sent.typeField !== undefined) {
    const fields = action === undefined
      ? `"${sent.typeField}": "${type}"`
      : `"${sent.typeField}": "${type}" and "action": "${action}"`;
    return `${fields} in --payload${gitlabNote}`;
  }
  if (action === undefined) return `--event ${type}`;
  return `--event ${type} --payload '${JSON.stringify({ action })}'${gitlabNote}`;
}

/** The `status` of a JSON answer (`accepted`, `ignored`, `duplicate`...), if it has one. */
function answerStatus(text: string): unknown {
  try {
    return (JSON.parse(text) as { status?: unknown } | null)?.status;
  } catch {
    return undefined;
  }
}
