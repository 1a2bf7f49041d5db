/**
 * `agent webhook test <name>`: sends a signed test event to the running gateway, explains the
 * answer, and waits for the event's outcome (`_test_outcome.ts`) (docs/commands.md).
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { NotFoundError, UsageError } from "../lib/errors.ts";
import { localUrl } from "../lib/config/address.ts";
import { eventInfo, eventLabel } from "../lib/subscriptions/event_info.ts";
import { runningGatewayUrl } from "../lib/state/gateway_lock.ts";
import { openStateStore } from "../lib/state/sqlite/mod.ts";
import { routesAndHidden } from "../lib/subscriptions/routes.ts";
import { type SchemeName, signRequest } from "../lib/signatures/mod.ts";
import { currentSecret, type Route } from "../lib/subscriptions/mod.ts";
import type { Command, CommandContext } from "./_command.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags, wholeNumber } from "./_flags.ts";
import { waitForOutcome } from "./_test_outcome.ts";
import { checkEvent, parseTestPayload, placeEvent, type SentEvent } from "./_test_payload.ts";
import { answerHints, missingPathNotes, noSigningKeyMessage } from "./_test_hints.ts";

const usage = `Usage: agent webhook test <name> [--payload JSON] [--event TYPE] [--wait S]

Signs a test event with the subscription's secret, as GitHub does (X-Hub-Signature-256), or as
the scheme the subscription is pinned to with --auth does, and posts it to the running gateway.
--payload is a JSON object. --event (default: test) goes where the scheme's senders put the
event type: X-GitHub-Event, X-Gitlab-Event (a payload's object_kind comes first), X-Shopify-Topic,
or for the other schemes the payload's "type", unless the payload names its type itself ("type",
"event_type" or "event"). A Linear payload gets the current webhookTimestamp.
Then it waits up to --wait seconds (default 30) for the event's outcome and prints it: the agent
run (model, tokens) and each message delivered, or the error; it exits 0 once delivered, 1 when
the event failed or no outcome came in time. --wait 0 returns with the gateway's answer.`;

const options = {
  payload: { type: "string" },
  event: { type: "string" },
  wait: { type: "string" },
} as const;

/** How long `test` waits for the event's outcome by default, in seconds. */
const DEFAULT_WAIT_SECONDS = 30;

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
    const waitSeconds = values.wait === undefined ? DEFAULT_WAIT_SECONDS : wholeNumber(values.wait);
    if (!Number.isSafeInteger(waitSeconds)) {
      throw new UsageError("--wait must be a whole number of seconds (0: do not wait)");
    }
    const payload = parseTestPayload(values.payload);
    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    const tested = await testedRoute(config, positionals[0], ctx);
    if (!tested) return 1;
    const { route, secret } = tested;
    // A static route's `auth` is checked with config.yaml, a subscription's just above.
    const scheme = (route.auth ?? "github") as SchemeName;
    const sent = placeEvent(payload, {
      scheme,
      event: checkEvent(scheme, values.event ?? "test"),
      nowMs: ctx.now(),
    });
    // What the gateway will read from these headers and this payload, for the notes and hints.
    const label = eventLabel(eventInfo(new Headers(sent.headers), payload, () => "", scheme));
    for (const note of missingPathNotes(route, { payload, event: label })) ctx.stderr(note);
    const answered = await send({ route, scheme, payload, sent, label, secret, config, ctx });
    if (answered.eventId === undefined || waitSeconds === 0) return answered.exitCode;
    return await outcomeOf(answered.eventId, { waitSeconds, config, ctx });
  },
};

/**
 * The route to test and the secret its senders sign with; undefined after saying why the
 * gateway refuses its requests (a record it cannot serve, no secret).
 * @param name the `<name>` asked for
 * @param ctx where the reason is printed
 * @throws NotFoundError when there is no route of that name
 */
async function testedRoute(
  config: Config,
  name: string,
  ctx: CommandContext,
): Promise<{ route: Route; secret: string } | undefined> {
  const { routes, unusable } = await routesAndHidden(config);
  const problem = unusable.get(name);
  if (problem !== undefined) {
    ctx.stderr(`${problem}; so the gateway refuses its requests: fix it first.`);
    return undefined;
  }
  const route = routes.find((r) => r.name === name);
  if (!route) {
    throw new NotFoundError(`No subscription named "${name}" (see: agent webhook list)`);
  }
  const secret = currentSecret(route, config.webhook.secret);
  if (secret || route.auth === "none") return { route, secret: secret ?? "" };
  ctx.stderr(`Subscription "${name}" has no secret, so the gateway refuses its requests.`);
  return undefined;
}

/**
 * Signs the test event, posts it where the gateway listens and prints the answer, with what it
 * means.
 * @param options the route tested, its `scheme` and `secret`; the `payload` and the `sent`
 *   headers; the event's `label` as the gateway reads it; the command's `config` and `ctx`
 * @returns the exit code: 0 for a 2xx answer, 1 otherwise or when it cannot be sent; and the
 *   event the gateway's 2xx answer named, if it named one
 */
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
): Promise<{ exitCode: number; eventId?: string }> {
  const { route, scheme, sent, label, secret, config, ctx } = options;
  const body = JSON.stringify(options.payload);
  // The running gateway says where it listens (it may have been started with --port).
  const running = await runningGatewayUrl(config.paths.stateDb);
  const base = running ?? localUrl(config.webhook.host, config.webhook.port);
  const url = `${base}/webhooks/${route.name}`;
  // `auth: none` takes the event unsigned.
  const auth = scheme === "none" ? {} : signRequest(scheme, secret, body, {
    deliveryId: sent.deliveryId,
    nowSeconds: Math.floor(ctx.now() / 1000),
  });
  if (!auth) {
    ctx.stderr(noSigningKeyMessage(route, scheme));
    return { exitCode: 1 };
  }
  const headers = { ...sent.headers, ...auth };
  const response = await post(url, { headers, body, ctx });
  if (!response) return { exitCode: 1 };
  const text = await response.text();
  ctx.stdout(`POST ${url}\n${response.status} ${response.statusText}\n${text}`);
  const answer = { status: response.status, text };
  const request = { payload: options.payload, headers };
  for (const hint of answerHints(answer, { route, scheme, sent, label, request })) {
    ctx.stdout(hint);
  }
  if (!response.ok) return { exitCode: 1 };
  return { exitCode: 0, eventId: namedEvent(text) };
}

/** The `event_id` a 2xx answer names (`accepted`, or `delivered` directly), if any. */
function namedEvent(text: string): string | undefined {
  try {
    const id = (JSON.parse(text) as { event_id?: unknown } | null)?.event_id;
    return typeof id === "string" && id !== "" ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Waits for the outcome of the event the gateway took, in the state database of this home.
 * @param eventId the event
 * @param options `waitSeconds`: the longest wait; the command's `config` and `ctx`
 * @returns the exit code of {@link waitForOutcome}
 */
async function outcomeOf(
  eventId: string,
  options: { waitSeconds: number; config: Config; ctx: CommandContext },
): Promise<number> {
  const { waitSeconds, config, ctx } = options;
  ctx.stdout(`Waiting up to ${waitSeconds} s for the outcome of ${eventId} (--wait 0 does not)...`);
  const store = openStateStore(config.paths.stateDb, { backgroundCheckpoints: false });
  try {
    return await waitForOutcome(store, eventId, {
      waitMs: waitSeconds * 1000,
      now: ctx.now,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      print: ctx.stdout,
    });
  } finally {
    await store.close();
  }
}

/**
 * Posts the signed event as JSON, waiting at most {@link TEST_TIMEOUT_MS}.
 * @param options `headers`: the event's and the signature's; `body`: the JSON text; `ctx`: the
 *   command's fetch, and where a failure is said
 * @returns the gateway's response, or undefined after saying it cannot be reached
 */
async function post(
  url: string,
  options: { headers: Record<string, string>; body: string; ctx: CommandContext },
): Promise<Response | undefined> {
  const { headers, body, ctx } = options;
  try {
    return await ctx.fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "agent-webhook-test",
        ...headers,
      },
      body,
      signal: AbortSignal.timeout(TEST_TIMEOUT_MS),
    });
  } catch (error) {
    ctx.stderr(
      `Cannot reach the gateway at ${url} (${(error as Error).message}).\n` +
        "Is the gateway running? Start it with: agent gateway run",
    );
    return undefined;
  }
}
