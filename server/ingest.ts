/**
 * The ingest pipeline of `POST /webhooks/<name>`: the steps of CONTRACT §4 in order, the first
 * failing step answers. Authentication runs on the raw bytes before anything is parsed, and
 * requests that fail it never touch the state database.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { StoreUnavailableError } from "../lib/errors.ts";
import { type EventInfo, eventInfo, eventLabel, matchesEvents } from "../lib/event_info.ts";
import type { RateLimiter } from "../lib/rate_limit.ts";
import type { NewEvent, StateStore } from "../lib/state/mod.ts";
import { NAME_PATTERN, type Route } from "../lib/subscription.ts";
import type { DeliveryJob, DeliveryReceipt } from "../lib/targets/mod.ts";
import { defaultPrompt, renderTemplate, type TemplateContext } from "../lib/templates.ts";
import { BodyError, parsePayload, readBody } from "./body.ts";
import type { SchemeName, SignatureVerifier } from "./signatures/mod.ts";

/** What the ingest pipeline needs; `gateway run` builds the real ones, tests pass fakes. */
export interface IngestDeps {
  /** Finds a route by name: static routes first, then dynamic subscriptions. */
  findRoute(name: string): Route | undefined;
  /** Largest accepted body, in bytes. */
  maxBodyBytes: number;
  /** Time allowed to receive a whole body, in milliseconds. @default {30000} */
  bodyTimeoutMs?: number;
  /** Default requests per minute per subscription. */
  rateLimitPerMinute: number;
  /** Global secret (`extra.secret`): used by static routes without a secret of their own. */
  globalSecret?: string;
  verifier: SignatureVerifier;
  rateLimiter: RateLimiter;
  store: StateStore;
  /** Called after an agent-mode event is persisted, to wake the worker. */
  onAccepted(): void;
  /** Sends a direct-delivery message; throws `TargetError` on failure. */
  deliverDirect(job: DeliveryJob): Promise<DeliveryReceipt>;
  /** Clock, in milliseconds since the epoch. */
  now(): number;
  /** Generates delivery ids for requests that carry none. */
  newId(): string;
}

const log = getLogger(["agent", "ingest"]);

/** Seconds a sender is asked to wait after a 503 from the state database. */
const STORE_RETRY_AFTER_SECONDS = 5;

type Json = Record<string, unknown>;

/** A JSON answer with optional extra headers. */
function answer(status: number, body: Json, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function reject(name: string, status: number, error: string, headers?: Record<string, string>) {
  // The name comes from the URL: cap what an unknown one can write to the log.
  const subscription = name.length > 80 ? `${name.slice(0, 80)}…` : name;
  log.warn("rejected {subscription}: {reason}", { subscription, status, reason: error });
  return answer(status, { error: error.replace(name, subscription) }, headers);
}

/** Handles one request to `/webhooks/<name>`; see {@link createWebhookHandler}. */
export type WebhookHandler = (request: Request, name: string) => Promise<Response>;

/**
 * Builds the handler of `/webhooks/<name>`. It keeps the set of direct deliveries under way.
 * @param deps the pipeline's collaborators
 * @returns a handler answering with the first failing step, or with dispatch (CONTRACT §4);
 *   bad input never throws, unexpected errors reach `app.onError`
 */
export function createWebhookHandler(deps: IngestDeps): WebhookHandler {
  const inFlight = new Set<string>();
  return (request, name) => handleWebhook(request, name, deps, inFlight);
}

async function handleWebhook(
  request: Request,
  name: string,
  deps: IngestDeps,
  inFlight: Set<string>,
): Promise<Response> {
  if (request.method !== "POST") {
    return reject(name, 405, `method ${request.method} not allowed: use POST`, { allow: "POST" });
  }
  const route = NAME_PATTERN.test(name) ? deps.findRoute(name) : undefined;
  if (!route) return reject(name, 404, `unknown subscription: ${name}`);

  let body: Uint8Array;
  try {
    body = await readBody(request, deps.maxBodyBytes, deps.bodyTimeoutMs);
  } catch (error) {
    if (error instanceof BodyError) return reject(name, error.status, error.message);
    throw error;
  }

  const nowMs = deps.now();
  const secrets = activeSecrets(route, deps.globalSecret, nowMs);
  if (secrets.length === 0) return reject(name, 403, "no secret configured for this subscription");
  const verdict = await deps.verifier.verify({
    headers: request.headers,
    body,
    secrets,
    nowSeconds: Math.floor(nowMs / 1000),
    only: route.auth as SchemeName | undefined,
  });
  if (!verdict.ok) {
    const error = verdict.reason === "missing" ? "missing signature" : "invalid signature";
    log.warn("rejected {subscription}: {reason}", {
      subscription: name,
      status: 401,
      reason: error,
      scheme: verdict.scheme,
      detail: verdict.reason,
    });
    return answer(401, { error });
  }

  const rate = deps.rateLimiter.take(name, route.rate_limit ?? deps.rateLimitPerMinute, nowMs);
  if (!rate.allowed) {
    return reject(name, 429, "rate limit exceeded", { "retry-after": `${rate.retryAfterSeconds}` });
  }

  let payload: { value: unknown; json: string };
  try {
    payload = parsePayload(body, request.headers.get("content-type"));
  } catch (error) {
    if (error instanceof BodyError) return reject(name, error.status, error.message);
    throw error;
  }
  return dispatch(route, request.headers, payload, deps, inFlight);
}

/** The filter, dedupe and dispatch steps, once the request is authentic and parsed. */
async function dispatch(
  route: Route,
  headers: Headers,
  { value: payload, json }: { value: unknown; json: string },
  deps: IngestDeps,
  inFlight: Set<string>,
): Promise<Response> {
  const info = eventInfo(headers, payload, deps.newId);
  const event = eventLabel(info);
  const subscription = route.name;
  if (info.source === "github" && info.type === "ping") {
    log.info("ping {subscription}", { subscription, delivery_id: info.deliveryId });
    return answer(200, { status: "pong" });
  }
  if (!matchesEvents(route.events, info)) {
    log.info("ignored {subscription}: event {event} not in filter", {
      subscription,
      event,
      events: route.events?.join(","),
    });
    return answer(200, { status: "ignored", event });
  }
  const newEvent = buildEvent(route, info, { payload, json }, deps.now());
  if (route.deliver_only) return deliverNow(newEvent, payload, deps, inFlight);

  let result;
  try {
    result = await deps.store.accept(newEvent);
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    log.error("store unavailable for {subscription}: {reason}", {
      subscription,
      status: 503,
      reason: error.message,
    });
    return answer(503, { error: "event store unavailable, retry later" }, {
      "retry-after": `${STORE_RETRY_AFTER_SECONDS}`,
    });
  }
  if (result.status === "duplicate") return duplicate(subscription, event, info.deliveryId);
  deps.onAccepted();
  log.info("accepted {subscription} {event}", {
    subscription,
    event,
    delivery_id: info.deliveryId,
    event_id: result.eventId,
  });
  return answer(202, {
    status: "accepted",
    subscription,
    event,
    delivery_id: info.deliveryId,
    event_id: result.eventId,
  });
}

function duplicate(subscription: string, event: string, deliveryId: string): Response {
  log.info("duplicate {subscription} {event}", { subscription, event, delivery_id: deliveryId });
  return answer(200, { status: "duplicate", delivery_id: deliveryId });
}

/** Renders the prompt (or direct message) and the route snapshot the worker will use. */
function buildEvent(
  route: Route,
  info: EventInfo,
  { payload, json }: { payload: unknown; json: string },
  nowMs: number,
): NewEvent {
  const context: TemplateContext = {
    event: eventLabel(info),
    subscription: route.name,
    deliveryId: info.deliveryId,
  };
  const prompt = route.prompt
    ? renderTemplate(route.prompt, payload, context).text
    : defaultPrompt(payload, context);
  const chatId = route.deliver_extra?.chat_id
    ? renderTemplate(route.deliver_extra.chat_id, payload, context).text
    : undefined;
  return {
    subscription: route.name,
    eventType: context.event,
    deliveryId: info.deliveryId,
    dedupe: !info.generatedDeliveryId,
    source: info.source,
    mode: route.deliver_only ? "direct" : "agent",
    payload: json,
    prompt,
    route: { deliver: route.deliver ?? "log", chatId, skills: route.skills ?? [] },
    receivedAtMs: nowMs,
  };
}

/** Direct deliveries under way, keyed by subscription and delivery id. */
const inFlightKey = (event: NewEvent) => `${event.subscription}\u0000${event.deliveryId}`;

/**
 * Direct delivery (CONTRACT §4, §6): 200 when the target took the message, 502 when it did
 * not. The delivery id is only recorded after success, so the sender's retry of a 502 goes
 * through. A retry that arrives while the first attempt is still sending gets 409.
 */
async function deliverNow(
  event: NewEvent,
  payload: unknown,
  deps: IngestDeps,
  inFlight: Set<string>,
): Promise<Response> {
  const { subscription, eventType: eventName, deliveryId } = event;
  if (event.dedupe && deps.store.hasSeen(subscription, deliveryId, event.receivedAtMs)) {
    return duplicate(subscription, eventName, deliveryId);
  }
  const key = inFlightKey(event);
  if (event.dedupe && inFlight.has(key)) {
    return reject(subscription, 409, "this delivery is already being sent", { "retry-after": "5" });
  }
  inFlight.add(key);
  try {
    const job: DeliveryJob = {
      target: event.route.deliver,
      chatId: event.route.chatId,
      text: event.prompt,
      payload,
      source: event.source,
      subscription,
      eventType: eventName,
      eventId: "",
      deliveryId,
    };
    const base = { subscription, event: eventName, delivery_id: deliveryId };
    try {
      const receipt = await deps.deliverDirect(job);
      const eventId = await recordDirect(deps, event, {
        delivered: true,
        partsSent: receipt.parts,
      });
      log.info("delivered {subscription} {event} to {target}", {
        ...base,
        target: receipt.target,
        parts: receipt.parts,
        event_id: eventId,
      });
      return answer(200, { status: "delivered", ...base, event_id: eventId });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const eventId = await recordDirect(deps, event, {
        delivered: false,
        error: reason,
        partsSent: 0,
      });
      log.error("failed {subscription} {event} to {target}: {reason}", {
        ...base,
        status: 502,
        target: event.route.deliver,
        reason,
        event_id: eventId,
      });
      return answer(502, { status: "error", error: "delivery failed", ...base });
    }
  } finally {
    inFlight.delete(key);
  }
}

/** Records a direct delivery; a store failure is logged, not turned into a wrong answer. */
async function recordDirect(
  deps: IngestDeps,
  event: NewEvent,
  outcome: { delivered: boolean; error?: string; partsSent: number },
): Promise<string | null> {
  try {
    return await deps.store.recordDirect(event, outcome);
  } catch (error) {
    log.error("could not record direct delivery for {subscription}: {reason}", {
      subscription: event.subscription,
      reason: (error as Error).message,
    });
    return null;
  }
}

/** The route's secret and the previous secrets still in their grace period; else the global one. */
function activeSecrets(route: Route, globalSecret: string | undefined, nowMs: number): string[] {
  const secrets: string[] = [];
  if (route.secret) secrets.push(route.secret);
  for (const previous of route.previous_secrets ?? []) {
    if (Date.parse(previous.expires_at) > nowMs) secrets.push(previous.secret);
  }
  if (secrets.length === 0 && route.origin === "static" && globalSecret) secrets.push(globalSecret);
  return secrets;
}
