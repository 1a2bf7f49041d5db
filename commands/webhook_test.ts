/**
 * `agent webhook test <name>`: sends a signed test event to the running gateway and explains
 * the answer (CONTRACT §10).
 *
 * @module
 */
import type { Config } from "../lib/config.ts";
import { NotFoundError, UsageError } from "../lib/errors.ts";
import { localUrl } from "../lib/address.ts";
import { runningGatewayUrl } from "../lib/gateway_lock.ts";
import { keepExactNumber, routesAndHidden } from "../lib/routes.ts";
import { currentSecret, type Route } from "../lib/subscription.ts";
import { renderTemplate } from "../lib/templates.ts";
import {
  boundedToken,
  eventInfo,
  eventLabel,
  MAX_ID_CHARS,
  payloadTypeField,
} from "../lib/event_info.ts";
import { type SchemeName, signRequest } from "../lib/signatures/mod.ts";
import type { Command, CommandContext } from "./_command.ts";
import { loadEnabledConfig, parseFlags } from "./_shared.ts";

const usage = `Usage: agent webhook test <name> [--payload JSON] [--event TYPE]

Signs a test event with the subscription's secret, as GitHub does (X-Hub-Signature-256), or as
the scheme the subscription is pinned to with --auth does, and posts it to the running gateway.
--payload is a JSON object. --event (default: test) goes where the scheme's senders put the
event type: X-GitHub-Event, X-Gitlab-Event (a payload's object_kind comes first), X-Shopify-Topic,
or for the other schemes the payload's "type", unless the payload names its type itself ("type",
"event_type" or "event"). A Linear payload gets the current webhookTimestamp.`;

const options = { payload: { type: "string" }, event: { type: "string" } } as const;

/** How long `test` waits for the gateway's answer, in milliseconds. */
const TEST_TIMEOUT_MS = 30_000;

/** `agent webhook test`. */
export const webhookTest: Command = {
  path: ["webhook", "test"],
  summary: "Send a signed test event to a subscription",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, options, usage);
    if (positionals.length !== 1) throw new UsageError(`Expected one <name>.\n\n${usage}`);
    const payload = parseTestPayload(values.payload);
    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    const name = positionals[0];
    const { routes, unusable } = await routesAndHidden(config);
    const problem = unusable.get(name);
    if (problem !== undefined) {
      ctx.stderr(`${problem}; so the gateway refuses its requests: fix it first.`);
      return 1;
    }
    const route = routes.find((r) => r.name === name);
    if (!route) {
      throw new NotFoundError(`No subscription named "${name}" (see: agent webhook list)`);
    }
    const secret = currentSecret(route, config.webhook.secret);
    if (!secret) {
      ctx.stderr(`Subscription "${name}" has no secret, so the gateway refuses its requests.`);
      return 1;
    }
    // A static route's `auth` is checked with config.yaml, a subscription's just above.
    const scheme = (route.auth ?? "github") as SchemeName;
    const sent = placeEvent(
      scheme,
      payload,
      checkEvent(scheme, values.event ?? "test"),
      ctx.now(),
    );
    // What the gateway will read from these headers and this payload, for the notes and hints.
    const label = eventLabel(eventInfo(new Headers(sent.headers), payload, () => "", scheme));
    reportMissingPaths(route, payload, label, ctx);
    return await send({ route, scheme, payload, sent, label, secret, config, ctx });
  },
};

function parseTestPayload(text: string | undefined): Record<string, unknown> {
  if (text === undefined) {
    return { test: true, message: "Test event from agent webhook test" };
  }
  let payload: unknown;
  try {
    // As the gateway reads it: an id past 2^53 is sent and rendered as written, not rounded.
    payload = JSON.parse(text, keepExactNumber);
  } catch (error) {
    throw new UsageError(`--payload is not valid JSON: ${(error as Error).message}`);
  }
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
    throw new UsageError('--payload must be a JSON object, e.g. \'{"issue":{"title":"x"}}\'');
  }
  return payload as Record<string, unknown>;
}

/** A test event's headers besides its signature, and where its type is. */
interface SentEvent {
  /** Event type and delivery id headers (the signature's come from `signRequest`). */
  headers: Record<string, string>;
  /** The delivery id sent (Standard Webhooks signs it). */
  deliveryId: string;
  /** The payload's field that holds its own type (which `--event` did not set), if any. */
  typeField?: string;
}

/**
 * `--event` as an event type the gateway takes (`usable` in lib/event_info.ts: 1 to
 * {@link MAX_ID_CHARS} characters, no control characters) and, for the schemes that send it in a header (GitHub, GitLab, Shopify),
 * as a header value: printable ASCII.
 * @throws UsageError naming the rule the value breaks
 */
function checkEvent(scheme: SchemeName, event: string): string {
  const inHeader = scheme === "github" || scheme === "gitlab" || scheme === "shopify";
  if (inHeader && (event.length > MAX_ID_CHARS || !/^[\x20-\x7e]+$/.test(event))) {
    throw new UsageError(
      `--event must be 1 to ${MAX_ID_CHARS} printable ASCII characters for ${scheme}, e.g. issues`,
    );
  }
  if (event.trim() === "" || boundedToken(event) === undefined) {
    throw new UsageError(
      `--event must be 1 to ${MAX_ID_CHARS} characters without control characters`,
    );
  }
  return event;
}

/**
 * Puts the event type and a fresh delivery id where the scheme's senders put them, as
 * lib/event_info.ts reads them: GitHub's, GitLab's and Shopify's headers; for the other
 * schemes the payload's `type`, unless the payload names its type itself (`type`, `event_type`
 * or `event`), and the delivery id header each sender uses (Standard Webhooks' signed
 * `webhook-id` comes with the signature; Stripe and Slack ids are the payload's `id` and
 * `event_id`). A Linear payload gets the current `webhookTimestamp` (milliseconds): the gateway
 * refuses one older than 5 minutes, and a payload copied from a real delivery carries an old one.
 * @param payload changed in place
 */
function placeEvent(
  scheme: SchemeName,
  payload: Record<string, unknown>,
  event: string,
  nowMs: number,
): SentEvent {
  const deliveryId = crypto.randomUUID();
  if (scheme === "linear") payload.webhookTimestamp = nowMs;
  switch (scheme) {
    case "github":
      return { headers: { "x-github-event": event, "x-github-delivery": deliveryId }, deliveryId };
    case "gitlab": {
      const kind = payload.object_kind;
      return {
        headers: { "x-gitlab-event": event, "x-gitlab-event-uuid": deliveryId },
        deliveryId,
        typeField: typeof kind === "string" && kind !== "" ? "object_kind" : undefined,
      };
    }
    case "shopify":
      return {
        headers: { "x-shopify-topic": event, "x-shopify-webhook-id": deliveryId },
        deliveryId,
      };
  }
  const own = payloadTypeField(payload)?.field ??
    (Object.hasOwn(payload, "type") ? "type" : undefined);
  if (own === undefined) payload.type = event;
  const idHeader = ID_HEADERS[scheme];
  return { headers: idHeader ? { [idHeader]: deliveryId } : {}, deliveryId, typeField: own };
}

/** The delivery id header of each scheme's senders, where they send one. */
const ID_HEADERS: Partial<Record<SchemeName, string>> = {
  linear: "linear-delivery",
  generic: "idempotency-key",
  bearer: "idempotency-key",
};

function reportMissingPaths(
  route: Route,
  payload: unknown,
  event: string,
  ctx: CommandContext,
): void {
  const context = { event, subscription: route.name, deliveryId: "test" };
  const templates = [
    { template: route.prompt, where: "the prompt" },
    { template: route.deliver_extra?.chat_id, where: "the chat id the message goes to" },
  ];
  for (const { template, where } of templates) {
    if (!template) continue;
    const { missing } = renderTemplate(template, payload, context);
    if (missing.length) {
      ctx.stderr(
        `Note: the payload has no ${
          missing.map((path) => `{${path}}`).join(", ")
        }; these stay literally in ${where}.`,
      );
    }
  }
}

/**
 * What sends an event a filter entry accepts. GitHub, GitLab and Linear: `--event issues` for
 * `issues`, and for `issues.opened` also the payload's `action`, which they send in the body
 * (GitLab only with some events). The other schemes read the whole entry as the type
 * (`payment_intent.succeeded`). A payload that names its type itself gets the advice for that
 * field instead of `--event`.
 */
function suggestEvent(scheme: SchemeName, sent: SentEvent, filter: string | undefined): string {
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

async function send(
  options: {
    route: Route;
    scheme: SchemeName;
    payload: unknown;
    sent: SentEvent;
    label: string;
    secret: string;
    config: Config;
    ctx: CommandContext;
  },
): Promise<number> {
  const { route, scheme, sent, label, secret, config, ctx } = options;
  const body = JSON.stringify(options.payload);
  // The running gateway says where it listens (it may have been started with --port).
  const running = await runningGatewayUrl(config.paths.stateDb);
  const base = running ?? localUrl(config.webhook.host, config.webhook.port);
  const url = `${base}/webhooks/${route.name}`;
  const auth = signRequest(scheme, secret, body, {
    deliveryId: sent.deliveryId,
    nowSeconds: Math.floor(ctx.now() / 1000),
  });
  if (!auth) {
    const fix = route.origin === "static"
      ? "correct it in config.yaml"
      : `set a new one with agent webhook rotate-secret ${route.name}`;
    ctx.stderr(
      `The secret of "${route.name}" gives no ${scheme} signing key (a whsec_ secret must be ` +
        `base64): ${fix}.`,
    );
    return 1;
  }
  let response: Response;
  try {
    response = await ctx.fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "agent-webhook-test",
        ...sent.headers,
        ...auth,
      },
      body,
      signal: AbortSignal.timeout(TEST_TIMEOUT_MS),
    });
  } catch (error) {
    ctx.stderr(
      `Cannot reach the gateway at ${url} (${(error as Error).message}).\n` +
        "Is the gateway running? Start it with: agent gateway run",
    );
    return 1;
  }
  const text = await response.text();
  ctx.stdout(`POST ${url}\n${response.status} ${response.statusText}\n${text}`);
  const status = answerStatus(text);
  if (status === "ignored") {
    ctx.stdout(
      `The event "${label}" is not in the subscription's filter (${
        route.events?.join(", ")
      }). Try ${suggestEvent(scheme, sent, route.events?.[0])}.`,
    );
  }
  if (status === "duplicate") {
    ctx.stdout(
      "The gateway has already seen this delivery id: for Stripe it is the payload's id, for " +
        "Slack its event_id. Change it in --payload to send the event again.",
    );
  }
  if (response.status === 502) {
    ctx.stdout(`The target refused the message; the reason: agent webhook events ${route.name}`);
  }
  if (response.status === 401) {
    ctx.stdout("The gateway refused the signature: is it running with the same home folder?");
  }
  return response.ok ? 0 : 1;
}

/** The `status` of a JSON answer (`accepted`, `ignored`, `duplicate`...), if it has one. */
function answerStatus(text: string): unknown {
  try {
    return (JSON.parse(text) as { status?: unknown } | null)?.status;
  } catch {
    return undefined;
  }
}
