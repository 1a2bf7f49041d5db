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
import type { SchemeName } from "../server/signatures/mod.ts";
import { signRequest } from "../server/signatures/sign.ts";
import type { Command, CommandContext } from "./_command.ts";
import { loadEnabledConfig, parseFlags } from "./_shared.ts";

const usage = `Usage: agent webhook test <name> [--payload JSON] [--event TYPE]

Signs a test event with the subscription's secret, as GitHub does (X-Hub-Signature-256), or as
the scheme the subscription is pinned to with --auth does, and posts it to the running gateway.
--payload is a JSON object; --event sets X-GitHub-Event (default: test), and for Stripe and
Standard Webhooks, which sign the event type in the payload, its "type" unless it has one.`;

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
    const event = values.event ?? "test";
    const scheme = (route.auth ?? "github") as SchemeName;
    completePayload(scheme, payload, event, Date.now());
    reportMissingPaths(route, payload, event, ctx);
    return await send({ route, scheme, payload, event, secret, config, ctx });
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

/**
 * Adds what the scheme's gateway checks require and its senders always send, when the payload
 * lacks it: the event type for the schemes that take it from the signed payload (Stripe,
 * Standard Webhooks), and Linear's `webhookTimestamp` (milliseconds), without which the gateway
 * refuses a Linear request.
 */
function completePayload(
  scheme: SchemeName,
  payload: Record<string, unknown>,
  event: string,
  nowMs: number,
): void {
  if ((scheme === "stripe" || scheme === "standard") && !Object.hasOwn(payload, "type")) {
    payload.type = event;
  }
  if (scheme === "linear" && !Object.hasOwn(payload, "webhookTimestamp")) {
    payload.webhookTimestamp = nowMs;
  }
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
 * The flags that send an event a filter entry accepts: `--event issues` for `issues`, and for
 * `issues.opened` also the payload's action, since GitHub sends the action in the body, not in
 * `X-GitHub-Event`.
 */
function suggestEvent(filter: string | undefined): string {
  if (filter === undefined) return "--event <type>";
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
    event: string;
    secret: string;
    config: Config;
    ctx: CommandContext;
  },
): Promise<number> {
  const { route, scheme, event, secret, config, ctx } = options;
  const body = JSON.stringify(options.payload);
  // The running gateway says where it listens (it may have been started with --port).
  const running = await runningGatewayUrl(config.paths.stateDb);
  const base = running ?? localUrl(config.webhook.host, config.webhook.port);
  const url = `${base}/webhooks/${route.name}`;
  const deliveryId = crypto.randomUUID();
  const auth = signRequest(scheme, secret, body, {
    deliveryId,
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
        "x-github-event": event,
        "x-github-delivery": deliveryId,
        "user-agent": "agent-webhook-test",
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
      `The event "${event}" is not in the subscription's filter (${
        route.events?.join(", ")
      }). Try ${suggestEvent(route.events?.[0])}.`,
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
