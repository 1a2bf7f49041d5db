/**
 * `agent webhook test <name>`: sends a signed test event to the running gateway and explains
 * the answer (CONTRACT §10).
 *
 * @module
 */
import type { Config } from "../lib/config.ts";
import { NotFoundError, UsageError } from "../lib/errors.ts";
import { localUrl, runningGatewayUrl } from "../lib/gateway_lock.ts";
import { allRoutes } from "../lib/routes.ts";
import { currentSecret, type Route } from "../lib/subscription.ts";
import { renderTemplate } from "../lib/templates.ts";
import { SCHEME_NAMES, type SchemeName } from "../server/signatures/mod.ts";
import { signRequest } from "../server/signatures/sign.ts";
import type { Command, CommandContext } from "./_command.ts";
import { loadEnabledConfig, parseFlags } from "./_shared.ts";

const usage = `Usage: agent webhook test <name> [--payload JSON] [--event TYPE]

Signs a test event with the subscription's secret, as GitHub does (X-Hub-Signature-256), or as
the scheme the subscription is pinned to with --auth does, and posts it to the running gateway.
--payload is a JSON object. --event (default: test) is sent where the scheme's senders put the
event type: X-GitHub-Event, X-Gitlab-Event, or for the other schemes the payload's "type"
(unless the payload has a type of its own). A Linear payload gets the current webhookTimestamp.`;

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
    const route = (await allRoutes(config)).find((r) => r.name === name);
    if (!route) {
      throw new NotFoundError(`No subscription named "${name}" (see: agent webhook list)`);
    }
    const secret = currentSecret(route, config.webhook.secret);
    if (!secret) {
      ctx.stderr(`Subscription "${name}" has no secret, so the gateway refuses its requests.`);
      return 1;
    }
    const scheme = route.auth ?? "github";
    if (!isSchemeName(scheme)) {
      ctx.stderr(
        `Subscription "${name}" is pinned to an unknown signature scheme "${scheme}" (valid: ` +
          `${SCHEME_NAMES.join(", ")}), so the gateway refuses its requests.`,
      );
      return 1;
    }
    const sent = placeEvent(scheme, payload, values.event ?? "test", Date.now());
    reportMissingPaths(route, payload, sent.type, ctx);
    return await send({ route, scheme, payload, sent, secret, config, ctx });
  },
};

function parseTestPayload(text: string | undefined): Record<string, unknown> {
  if (text === undefined) {
    return { test: true, message: "Test event from agent webhook test" };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--payload is not valid JSON: ${(error as Error).message}`);
  }
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
    throw new UsageError('--payload must be a JSON object, e.g. \'{"issue":{"title":"x"}}\'');
  }
  return payload as Record<string, unknown>;
}

/** Where a test event's type is, and the headers that carry it and its delivery id. */
interface SentEvent {
  /** The event type the gateway will read. */
  type: string;
  /** The payload's field that holds its own type (which `--event` did not set), if any. */
  typeField?: string;
  /** Event type and delivery id headers (the signature's come from `signRequest`). */
  headers: Record<string, string>;
  /** The delivery id sent, for the schemes that send one. */
  deliveryId: string;
}

const PAYLOAD_TYPE_FIELDS = ["type", "event_type", "event"];

/**
 * Puts the event type and a fresh delivery id where the scheme's senders put them, as
 * lib/event_info.ts reads them: GitHub's and GitLab's headers; for the other schemes the
 * payload's `type` (a payload with a `type`, `event_type` or `event` of its own keeps it), and
 * the delivery id header each sender uses (Standard Webhooks' signed `webhook-id` comes with the
 * signature; Stripe and Slack ids are the payload's `id` and `event_id`). A Linear payload gets
 * the current `webhookTimestamp` (milliseconds): the gateway refuses one older than 5 minutes,
 * and a payload copied from a real delivery carries an old one.
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
  if (scheme === "github") {
    return {
      type: event,
      headers: { "x-github-event": event, "x-github-delivery": deliveryId },
      deliveryId,
    };
  }
  if (scheme === "gitlab") {
    const kind = payload.object_kind;
    return {
      type: typeof kind === "string" && kind !== "" ? kind : event,
      typeField: typeof kind === "string" && kind !== "" ? "object_kind" : undefined,
      headers: { "x-gitlab-event": event, "x-gitlab-event-uuid": deliveryId },
      deliveryId,
    };
  }
  const own = PAYLOAD_TYPE_FIELDS.find((field) => Object.hasOwn(payload, field));
  if (own === undefined) payload.type = event;
  const type = payload[own ?? "type"];
  const idHeader = ID_HEADERS[scheme];
  return {
    type: typeof type === "string" ? type : "unknown",
    typeField: own,
    headers: idHeader ? { [idHeader]: deliveryId } : {},
    deliveryId,
  };
}

/** The delivery id header of each scheme's senders, where they send one. */
const ID_HEADERS: Partial<Record<SchemeName, string>> = {
  shopify: "x-shopify-webhook-id",
  linear: "linear-delivery",
  generic: "idempotency-key",
  bearer: "idempotency-key",
};

function isSchemeName(name: string): name is SchemeName {
  return (SCHEME_NAMES as readonly string[]).includes(name);
}

function reportMissingPaths(
  route: Route,
  payload: unknown,
  event: string,
  ctx: CommandContext,
): void {
  if (!route.prompt) return;
  const { missing } = renderTemplate(route.prompt, payload, {
    event,
    subscription: route.name,
    deliveryId: "test",
  });
  if (missing.length) {
    ctx.stderr(
      `Note: the payload has no ${
        missing.map((path) => `{${path}}`).join(", ")
      }; these stay literally in the prompt.`,
    );
  }
}

/**
 * What sends an event a filter entry accepts. A payload with a type of its own: that type.
 * GitHub and GitLab: `--event issues` for `issues`, and for `issues.opened` also the payload's
 * action, which they send in the body. The other schemes read the whole entry as the payload's
 * type (`payment_intent.succeeded`), which `--event` sets.
 */
function suggestEvent(scheme: SchemeName, sent: SentEvent, filter: string | undefined): string {
  if (filter === undefined) return "--event <type>";
  if (sent.typeField !== undefined) return `"${sent.typeField}": "${filter}" in --payload`;
  if (scheme !== "github" && scheme !== "gitlab") return `--event ${filter}`;
  const dot = filter.indexOf(".");
  if (dot < 0) return `--event ${filter}`;
  const action = JSON.stringify({ action: filter.slice(dot + 1) });
  return `--event ${filter.slice(0, dot)} --payload '${action}'`;
}

async function send(
  options: {
    route: Route;
    scheme: SchemeName;
    payload: unknown;
    sent: SentEvent;
    secret: string;
    config: Config;
    ctx: CommandContext;
  },
): Promise<number> {
  const { route, scheme, sent, secret, config, ctx } = options;
  const body = JSON.stringify(options.payload);
  // The running gateway says where it listens (it may have been started with --port).
  const running = await runningGatewayUrl(config.paths.stateDb);
  const base = running ?? localUrl(config.webhook.host, config.webhook.port);
  const url = `${base}/webhooks/${route.name}`;
  const auth = signRequest(scheme, secret, body, {
    deliveryId: sent.deliveryId,
    nowSeconds: Math.floor(Date.now() / 1000),
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
  if (response.status === 200 && text.includes('"ignored"')) {
    ctx.stdout(
      `The event "${sent.type}" is not in the subscription's filter (${
        route.events?.join(", ")
      }). Try ${suggestEvent(scheme, sent, route.events?.[0])}.`,
    );
  }
  if (text.includes('"duplicate"')) {
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

/**
 * `sha256=<hex>` HMAC-SHA256 of the body's UTF-8 bytes, as GitHub signs (X-Hub-Signature-256).
 * Source: https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
 * @param secret the secret (not empty)
 * @param body the body text
 * @returns the header value
 */
export function signGitHub(secret: string, body: string): string {
  const headers = signRequest("github", secret, body, { deliveryId: "", nowSeconds: 0 });
  return headers?.["x-hub-signature-256"] ?? "";
}
