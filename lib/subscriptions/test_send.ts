/**
 * Sending a test event to the running gateway, as `agent webhook test` and the dashboard's Test
 * button do (docs/commands.md): the route tested and its secret, the event signed as the route's
 * scheme signs it, posted where the gateway listens, and what its answer means.
 *
 * @module
 */
import type { Config } from "../config/mod.ts";
import { localUrl } from "../config/address.ts";
import { NotFoundError } from "../errors.ts";
import { type SchemeName, signRequest } from "../signatures/mod.ts";
import { runningGatewayUrl } from "../state/gateway_lock.ts";
import { eventInfo, eventLabel } from "./event_info.ts";
import { currentSecret, type Route } from "./mod.ts";
import { routesAndHidden } from "./routes.ts";
import { checkEvent, placeEvent, type SentEvent } from "./test_event.ts";
import { answerHints, missingPathNotes, noSigningKeyMessage } from "./test_hints.ts";
import { coalesceNotes } from "./coalesce_options.ts";
import { sessionNotes } from "./session_options.ts";

/** How long a test waits for the gateway's answer, in milliseconds. */
export const TEST_TIMEOUT_MS = 30_000;

/**
 * The route to test and the secret its senders sign with, or why the gateway refuses its
 * requests whatever is sent (a record it cannot serve, no secret).
 * @param config the configuration: the static routes and the subscription file
 * @param name the `<name>` asked for
 * @returns the route and its secret (`""` for `auth: none`), or the `refused` reason to show
 * @throws NotFoundError when there is no route of that name
 * @throws ConfigError when the subscription file is corrupt
 */
export async function testedRoute(
  config: Pick<Config, "paths" | "webhook">,
  name: string,
): Promise<{ route: Route; secret: string } | { refused: string }> {
  const { routes, unusable } = await routesAndHidden(config);
  const problem = unusable.get(name);
  if (problem !== undefined) {
    return { refused: `${problem}; so the gateway refuses its requests: fix it first.` };
  }
  const route = routes.find((r) => r.name === name);
  if (!route) {
    throw new NotFoundError(`No subscription named "${name}" (see: agent webhook list)`);
  }
  const secret = currentSecret(route, config.webhook.secret);
  if (secret || route.auth === "none") return { route, secret: secret ?? "" };
  return { refused: `Subscription "${name}" has no secret, so the gateway refuses its requests.` };
}

/**
 * Where the gateway running with this home listens, as it wrote it (it may have been started
 * with `--port`, or on port 0); the configured address when none runs.
 * @param config the configuration: the state folder and the webhook listener's address
 * @returns the base URL, e.g. `http://127.0.0.1:8644`
 */
export async function testGatewayUrl(config: Pick<Config, "paths" | "webhook">): Promise<string> {
  const running = await runningGatewayUrl(config.paths.stateDb);
  return running ?? localUrl(config.webhook.host, config.webhook.port);
}

/** A test event ready to sign: its scheme, the headers besides the signature, its label. */
export interface PreparedTest {
  route: Route;
  scheme: SchemeName;
  payload: Record<string, unknown>;
  sent: SentEvent;
  /** The event's type as the gateway will read it, e.g. `issues.opened`. */
  label: string;
  /** The template paths the payload cannot fill, one note per template. */
  notes: string[];
}

/**
 * Places the event's type and a fresh delivery id where the route's scheme's senders put them
 * (see `placeEvent`), as the gateway will read them.
 * @param route the route tested
 * @param options `payload`: changed in place; `event`: its type; `nowMs`: the clock
 * @returns the event to send
 * @throws UsageError for an event type the scheme's senders could not send
 */
export function prepareTest(
  route: Route,
  options: { payload: Record<string, unknown>; event: string; nowMs: number },
): PreparedTest {
  const { payload, nowMs } = options;
  // A static route's `auth` is checked with config.yaml, a subscription's when it is written.
  const scheme = (route.auth ?? "github") as SchemeName;
  const sent = placeEvent(payload, { scheme, event: checkEvent(scheme, options.event), nowMs });
  const label = eventLabel(eventInfo(new Headers(sent.headers), payload, () => "", scheme));
  const notes = [
    ...missingPathNotes(route, { payload, event: label }),
    ...coalesceNotes(route, { payload, event: label }),
    ...sessionNotes(route, { payload, event: label }),
  ];
  return { route, scheme, payload, sent, label, notes };
}

/** What became of a test event sent to the gateway. */
export type TestAnswer =
  | {
    kind: "answered";
    /** The URL posted to. */
    url: string;
    status: number;
    statusText: string;
    /** The answer's body, as the gateway wrote it. */
    text: string;
    /** What the answer means, one line each. */
    hints: string[];
    /** The event the gateway's 2xx answer named, if any. */
    eventId?: string;
  }
  | { kind: "unsigned" | "unreachable"; url: string; message: string };

/**
 * Signs the prepared event with `secret` and posts it to the gateway at `baseUrl`.
 * @param test the event (see {@link prepareTest})
 * @param options `secret`: the route's; `baseUrl`: where the gateway listens (see
 *   {@link testGatewayUrl}); `nowMs`: the clock; `fetch`; `timeoutMs` @default {30000}
 * @returns the answer and its hints; `unsigned` when the secret gives no signing key,
 *   `unreachable` when nothing answered, each with what to do
 */
export async function sendTest(
  test: PreparedTest,
  options: {
    secret: string;
    baseUrl: string;
    nowMs: number;
    fetch: typeof fetch;
    timeoutMs?: number;
  },
): Promise<TestAnswer> {
  const { route, scheme, sent } = test;
  const url = `${options.baseUrl}/webhooks/${route.name}`;
  const body = JSON.stringify(test.payload);
  // `auth: none` takes the event unsigned.
  const auth = scheme === "none" ? {} : signRequest(scheme, options.secret, body, {
    deliveryId: sent.deliveryId,
    nowSeconds: Math.floor(options.nowMs / 1000),
  });
  if (!auth) return { kind: "unsigned", url, message: noSigningKeyMessage(route, scheme) };
  const headers = { ...sent.headers, ...auth };
  let response: Response;
  try {
    response = await options.fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "agent-webhook-test",
        ...headers,
      },
      body,
      signal: AbortSignal.timeout(options.timeoutMs ?? TEST_TIMEOUT_MS),
    });
  } catch (error) {
    const message = `Cannot reach the gateway at ${url} (${(error as Error).message}).\n` +
      "Is the gateway running? Start it with: agent gateway run";
    return { kind: "unreachable", url, message };
  }
  const text = await response.text();
  const request = { payload: test.payload, headers };
  const hints = answerHints(
    { status: response.status, text },
    { route, scheme, sent, label: test.label, request },
  );
  const eventId = response.ok ? namedEvent(text) : undefined;
  return {
    kind: "answered",
    url,
    status: response.status,
    statusText: response.statusText,
    text,
    hints,
    eventId,
  };
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
