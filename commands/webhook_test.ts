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
import type { Command, CommandContext } from "./_command.ts";
import { loadEnabledConfig, parseFlags } from "./_shared.ts";

const usage = `Usage: agent webhook test <name> [--payload JSON] [--event TYPE]

Signs a test event with the subscription's secret (X-Hub-Signature-256, as GitHub does) and
posts it to the running gateway. --payload is a JSON object; --event sets X-GitHub-Event
(default: test).`;

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
    reportMissingPaths(route, payload, event, ctx);
    return await send({ route, payload, event, secret, config, ctx });
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
    payload: unknown;
    event: string;
    secret: string;
    config: Config;
    ctx: CommandContext;
  },
): Promise<number> {
  const { route, event, secret, config, ctx } = options;
  const body = JSON.stringify(options.payload);
  // The running gateway says where it listens (it may have been started with --port).
  const running = await runningGatewayUrl(config.paths.stateDb);
  const base = running ?? localUrl(config.webhook.host, config.webhook.port);
  const url = `${base}/webhooks/${route.name}`;
  const auth = await authHeaders(route.auth, secret, body);
  if (!auth) {
    ctx.stderr(
      `Subscription "${route.name}" only accepts ${route.auth} signatures; test can sign as ` +
        "github, gitlab or bearer. Send a real event from the provider instead.",
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
        "x-github-delivery": crypto.randomUUID(),
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
 * The authentication headers for the subscription's pinned scheme (GitHub when not pinned),
 * or null for a scheme `test` cannot produce.
 */
async function authHeaders(
  scheme: string | undefined,
  secret: string,
  body: string,
): Promise<Record<string, string> | null> {
  switch (scheme ?? "github") {
    case "github":
      return { "x-hub-signature-256": await signGitHub(secret, body) };
    case "gitlab":
      return { "x-gitlab-token": secret };
    case "bearer":
      return { authorization: `Bearer ${secret}` };
    default:
      return null;
  }
}

/**
 * `sha256=<hex>` HMAC-SHA256 of the body's UTF-8 bytes, as GitHub signs (X-Hub-Signature-256).
 * Source: https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
 */
export async function signGitHub(secret: string, body: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(body)));
  return `sha256=${Array.from(signature, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
