/**
 * The ingest pipeline of `POST /webhooks/<name>`: the steps of CONTRACT §4 in order, the first
 * failing step answers. Authentication runs on the raw bytes before anything is parsed, and
 * requests that fail it never touch the state database.
 *
 * @module
 */
import { StoreUnavailableError } from "../lib/errors.ts";
import { lineTemplate, writeLine } from "../lib/log.ts";
import { type EventInfo, eventInfo, eventLabel, matchesEvents } from "../lib/event_info.ts";
import type { RateLimiter } from "../lib/rate_limit.ts";
import { dispatchFor } from "../lib/routes.ts";
import type { NewEvent, StateStore } from "../lib/state/mod.ts";
import { acceptedSecrets, NAME_PATTERN, type Route } from "../lib/subscription.ts";
import type { DeliveryJob, DeliveryReceipt } from "../lib/targets/mod.ts";
import { isOwnComment, postsComments } from "../lib/targets/own_comments.ts";
import {
  BodyBudget,
  BodyDeadlines,
  BodyError,
  declaredLength,
  parsePayload,
  readBody,
} from "./body.ts";
import { deliverNow } from "./_direct.ts";
import type { HeldDirectRecords } from "./_held_direct.ts";
import { answer, duplicate, log, logRefusal, reject, REJECTED } from "./_respond.ts";
import { createRefusalLog, type RefusalLog, type RefusalLogLimits } from "./_refusal_log.ts";
import {
  DEFAULT_TOLERANCE_SECONDS,
  detectScheme,
  type SchemeName,
  type SignatureVerifier,
} from "./signatures/mod.ts";

/** What the ingest pipeline needs; `gateway run` builds the real ones, tests pass fakes. */
export interface IngestDeps {
  /**
   * Finds a route by name: static routes first, then dynamic subscriptions. The subscriptions
   * may be a copy up to 100 ms old; `fresh` asks for the file as it is now, which the handler
   * does before it answers 404 for a name, and 403 or 401 for a request a newer secret could
   * pass.
   */
  findRoute(name: string, options?: { fresh?: boolean }): Route | undefined;
  /** Largest accepted body, in bytes. */
  maxBodyBytes: number;
  /** Time allowed to receive a whole body, in milliseconds. @default {30000} */
  bodyTimeoutMs?: number;
  /**
   * Bytes of bodies received at once (see `BodyBudget`).
   * @default {four times `maxBodyBytes`, at least 32 MiB}
   */
  bodyBudgetBytes?: number;
  /** Default requests per minute per subscription. */
  rateLimitPerMinute: number;
  /** Global secret (`extra.secret`): used by static routes without a secret of their own. */
  globalSecret?: string;
  /** Checks a request's signature under a route's scheme and secrets. */
  verifier: SignatureVerifier;
  /** Takes one request from the subscription's allowance (`rate` step). */
  rateLimiter: RateLimiter;
  /** Where agent-mode events and direct-delivery records are made durable. */
  store: StateStore;
  /** Called after an agent-mode event is persisted, to wake the worker. */
  onAccepted(): void;
  /**
   * Sends a direct-delivery message, from part `job.partsAlreadySent`; throws `TargetError` on
   * failure. `onPartSent` is called after each part with the parts delivered so far and the
   * parts in all, and awaited before the next part goes out.
   */
  deliverDirect(
    job: DeliveryJob,
    onPartSent?: (partsSent: number, parts: number) => void | Promise<void>,
  ): Promise<DeliveryReceipt>;
  /** Clock, in milliseconds since the epoch. */
  now(): number;
  /** Generates delivery ids for requests that carry none. */
  newId(): string;
  /**
   * The direct deliveries under way, keyed by {@link deliveryKey}; shared with the worker, so
   * that a replay does not send a message the sender's retry is sending. @default {a new set}
   */
  sending?: Set<string>;
  /**
   * Direct deliveries whose record the store refused, written later; a retry of one that was
   * delivered is a duplicate meanwhile. @default {none: such a record is only logged}
   */
  heldDirect?: HeldDirectRecords;
  /**
   * Which refusals are written to the log (see `_refusal_log.ts`); the gateway's start makes
   * it and writes the count of those left out. `createApp` makes one with the default limits
   * when none is given; without one, every refusal is written.
   */
  refusals?: RefusalLog;
}

/**
 * Gives `deps` the refusal log the app shares with the pipeline: one with the default limits,
 * when none is given.
 * @param deps as given
 * @returns the same collaborators, with a refusal log
 */
export function withRefusalLog(deps: IngestDeps): IngestDeps {
  return deps.refusals !== undefined ? deps : { ...deps, refusals: createIngestRefusalLog() };
}

/**
 * A refusal log whose own lines (a pool no longer logged, the count left out) go to the ingest
 * pipeline's log, as its refusals do.
 * @param limits lines per pool and window (@default {100 per 10 s})
 * @returns the refusal log
 */
export function createIngestRefusalLog(limits?: RefusalLogLimits): RefusalLog {
  return createRefusalLog((line) => log.warn(line), limits);
}

/** The lines written on every request they answer, read once (see `writeLine`). */
const ACCEPTED = lineTemplate("accepted {subscription} {event}");
const IGNORED = lineTemplate("ignored {subscription}: event {event} not in filter");
const OWN_COMMENT = lineTemplate("ignored {subscription}: event {event} is about its own comment");

/** Seconds a sender is asked to wait after a 503 (the state database, or too many bodies). */
const STORE_RETRY_AFTER_SECONDS = 5;

/** What the handler keeps between requests. */
interface HandlerState {
  /** The direct deliveries under way, keyed by `deliveryKey`. */
  inFlight: Set<string>;
  deadlines: BodyDeadlines;
  budget: BodyBudget;
}

const NO_BODY = new Uint8Array();

/** Handles one request to `/webhooks/<name>`; see {@link createWebhookHandler}. */
export type WebhookHandler = (request: Request, name: string) => Promise<Response>;

/**
 * Builds the handler of `/webhooks/<name>`. It keeps the set of direct deliveries under way.
 * @param deps the pipeline's collaborators
 * @returns a handler answering with the first failing step, or with dispatch (CONTRACT §4);
 *   bad input never throws; an unexpected error rejects the handler's promise, which the app
 *   answers with 500 and logs
 */
export function createWebhookHandler(deps: IngestDeps): WebhookHandler {
  const state: HandlerState = {
    inFlight: deps.sending ?? new Set<string>(),
    deadlines: new BodyDeadlines(deps.bodyTimeoutMs),
    budget: new BodyBudget(deps.maxBodyBytes, deps.bodyBudgetBytes),
  };
  return (request, name) => handleWebhook(request, name, deps, state);
}

async function handleWebhook(
  request: Request,
  name: string,
  deps: IngestDeps,
  { inFlight, deadlines, budget }: HandlerState,
): Promise<Response> {
  if (request.method !== "POST") {
    return reject(deps.refusals, name, 405, `method ${request.method} not allowed: use POST`, {
      allow: "POST",
    });
  }
  if (!NAME_PATTERN.test(name)) {
    return reject(deps.refusals, name, 404, `unknown subscription: ${name}`);
  }
  const found = deps.findRoute(name) ?? deps.findRoute(name, { fresh: true });
  if (!found) return reject(deps.refusals, name, 404, `unknown subscription: ${name}`);

  let body: Uint8Array;
  try {
    // A request without any signature header is refused (401, or 403 without a secret) before
    // its body is read: it cannot make the gateway receive and hold a body. Only once its size
    // is known to be within the limit (Content-Length), as the size step comes first; a
    // chunked one is read, and counted, first. A signed request (nearly all) skips this check
    // of its Content-Length: readBody makes it.
    const unsigned = detectScheme(request.headers) === null &&
      declaredLength(request, deps.maxBodyBytes) !== null;
    body = unsigned ? NO_BODY : await readBody(request, deps.maxBodyBytes, { deadlines, budget });
  } catch (error) {
    if (!(error instanceof BodyError)) throw error;
    const retry = error.status === 503
      ? { "retry-after": `${STORE_RETRY_AFTER_SECONDS}` }
      : undefined;
    return reject(deps.refusals, name, error.status, error.message, retry);
  }

  const nowMs = deps.now();
  const verified = await authenticate(request, name, found, body, nowMs, deps);
  if (verified instanceof Response) return verified;
  const { route, scheme } = verified;

  const rate = deps.rateLimiter.take(name, route.rate_limit ?? deps.rateLimitPerMinute, nowMs);
  if (!rate.allowed) {
    return reject(deps.refusals, name, 429, "rate limit exceeded", {
      "retry-after": `${rate.retryAfterSeconds}`,
    });
  }

  let payload: { value: unknown; json: string };
  try {
    payload = parsePayload(body, request.headers.get("content-type"), {
      forms: formsSignedBy(scheme, request.headers),
    });
  } catch (error) {
    if (error instanceof BodyError) {
      return reject(deps.refusals, name, error.status, error.message);
    }
    throw error;
  }
  if (
    carriesLinearTimestamp(scheme, payload.value) && !linearTimestampFresh(payload.value, nowMs)
  ) {
    return refuseSignature(deps.refusals, name, scheme, "stale");
  }
  return dispatch(route, scheme, request.headers, payload, deps, inFlight);
}

/**
 * The "auth" step: verifies the signature with the route's secrets. When it fails in a way a
 * newer subscription file could change (no secret, a signature that does not match), the
 * route is looked up afresh and, if its secrets or scheme changed, verified once more.
 * @returns the route the request is authentic for and the scheme that said so, or the refusal
 *   to answer with: 403 (no secret), 401 (missing or invalid signature), 404 (the subscription
 *   was just removed)
 */
async function authenticate(
  request: Request,
  name: string,
  route: Route,
  body: Uint8Array,
  nowMs: number,
  deps: IngestDeps,
): Promise<{ route: Route; scheme: SchemeName } | Response> {
  const verify = (candidate: Route, secrets: string[]) =>
    secrets.length === 0 ? undefined : deps.verifier.verify({
      headers: request.headers,
      body,
      secrets,
      nowSeconds: Math.floor(nowMs / 1000),
      only: candidate.auth as SchemeName | undefined,
    });
  let secrets = acceptedSecrets(route, deps.globalSecret, nowMs);
  let verdict = await verify(route, secrets);
  if (!verdict || (!verdict.ok && verdict.reason !== "missing")) {
    const fresh = deps.findRoute(name, { fresh: true });
    if (!fresh) return reject(deps.refusals, name, 404, `unknown subscription: ${name}`);
    const freshSecrets = acceptedSecrets(fresh, deps.globalSecret, nowMs);
    if (freshSecrets.join("\n") !== secrets.join("\n") || fresh.auth !== route.auth) {
      [route, secrets] = [fresh, freshSecrets];
      verdict = await verify(route, secrets);
    }
  }
  if (!verdict) {
    return reject(deps.refusals, name, 403, "no secret configured for this subscription");
  }
  if (verdict.ok) return { route, scheme: verdict.scheme };
  return refuseSignature(deps.refusals, name, verdict.scheme, verdict.reason);
}

/** The 401 for a signature that is missing, wrong or too old, and its log line. */
function refuseSignature(
  refusals: RefusalLog | undefined,
  name: string,
  scheme: SchemeName | null,
  detail: string,
): Response {
  const error = detail === "missing" ? "missing signature" : "invalid signature";
  logRefusal(refusals, name, 401, () => {
    writeLine(log, "warning", REJECTED, {
      subscription: name,
      status: 401,
      reason: error,
      scheme,
      detail,
    });
  });
  return answer(401, { error });
}

/**
 * Which form bodies a scheme's senders send, and so which the gateway takes from it. Every
 * scheme of an unpinned subscription is keyed by the same secret, so one scheme's signed text
 * must not pass as another's body: a Slack request captured hours ago, its `v0:<ts>:` prefix
 * moved into the body, carries a valid GitHub signature and no timestamp. No such prefix
 * followed by a body is valid JSON, nor a form whose one field is `payload`.
 * - `any`: Slack (slash commands), the generic V2 scheme, and the token schemes (GitLab, bearer),
 *   which sign nothing;
 * - `payload`: GitHub, whose form mode sends the JSON in a `payload` field;
 * - `none`: the others (Standard Webhooks, Stripe, Shopify, Linear, legacy generic), whose
 *   senders send JSON.
 */
function formsSignedBy(scheme: SchemeName, headers: Headers): "any" | "payload" | "none" {
  switch (scheme) {
    case "slack":
    case "gitlab":
    case "bearer":
      return "any";
    case "generic":
      return headers.has("x-webhook-signature-v2") ? "any" : "none";
    case "github":
      return "payload";
    default:
      return "none";
  }
}

/**
 * Whether a request's freshness is Linear's `webhookTimestamp`: Linear's own requests, and a
 * body carrying that field verified by a scheme that signs the body alone as Linear does
 * (GitHub's hex, Shopify's base64 of the same HMAC, the generic ones). On a subscription not
 * pinned to Linear, a Linear request captured hours ago, its signature moved into
 * `X-Hub-Signature-256`, passes GitHub's check, which has no timestamp: this keeps it to
 * Linear's window. No sender of those schemes puts a `webhookTimestamp` in its payloads.
 */
function carriesLinearTimestamp(scheme: SchemeName, payload: unknown): boolean {
  if (scheme === "linear") return true;
  if (!BODY_ONLY_SCHEMES.has(scheme) || typeof payload !== "object" || payload === null) {
    return false;
  }
  return Object.hasOwn(payload, "webhookTimestamp");
}

/** Schemes whose HMAC covers the body and nothing else, as Linear's does. */
const BODY_ONLY_SCHEMES = new Set<SchemeName>(["github", "shopify", "generic"]);

/**
 * Linear puts its timestamp in the signed body (`webhookTimestamp`, milliseconds) and asks
 * receivers to refuse one more than a minute old; the gateway's replay window, 5 minutes either
 * way, applies as to the other timestamped schemes. A payload without it is refused.
 * Source: https://linear.app/developers/webhooks#securing-webhooks
 */
function linearTimestampFresh(payload: unknown, nowMs: number): boolean {
  const sent = (payload as { webhookTimestamp?: unknown } | null)?.webhookTimestamp;
  return typeof sent === "number" && Number.isFinite(sent) &&
    Math.abs(nowMs - sent) <= DEFAULT_TOLERANCE_SECONDS * 1000;
}

/**
 * The scheme whose rules give an event's id, type and source. Generic V2 signs `<ts>.<body>`,
 * exactly what Stripe signs: on a subscription not pinned to Stripe, a Stripe request re-sent
 * as generic V2 (with a new `Idempotency-Key`, or an `X-GitHub-Event` that renames it) passes.
 * A Stripe event (`"object": "event"`, an `evt_` id) that generic V2 verified is read as
 * Stripe's, from its signed payload, so such a copy is a duplicate of the original.
 */
function senderScheme(scheme: SchemeName, payload: unknown): SchemeName {
  if (scheme !== "generic" || typeof payload !== "object" || payload === null) return scheme;
  const { object, id } = payload as { object?: unknown; id?: unknown };
  return object === "event" && typeof id === "string" && id.startsWith("evt_") ? "stripe" : scheme;
}

/** The filter, dedupe and dispatch steps, once the request is authentic and parsed. */
async function dispatch(
  route: Route,
  scheme: SchemeName,
  headers: Headers,
  { value: payload, json }: { value: unknown; json: string },
  deps: IngestDeps,
  inFlight: Set<string>,
): Promise<Response> {
  const info = eventInfo(headers, payload, deps.newId, senderScheme(scheme, payload));
  const event = eventLabel(info);
  const subscription = route.name;
  if (info.source === "github" && info.type === "ping") {
    log.info("ping {subscription}", { subscription, delivery_id: info.deliveryId });
    return answer(200, { status: "pong" });
  }
  const fields = payload as { type?: unknown; challenge?: unknown } | null;
  const challenge = scheme === "slack" && typeof fields === "object" && fields !== null &&
      fields.type === "url_verification"
    ? fields.challenge
    : undefined;
  if (typeof challenge === "string") {
    // Slack's Events API checks the URL with a signed challenge to echo back, not an event.
    // https://api.slack.com/events/url_verification
    log.info("url_verification {subscription}", { subscription });
    return answer(200, { challenge });
  }
  if (!matchesEvents(route.events, info)) {
    writeLine(log, "info", IGNORED, {
      subscription,
      event,
      events: route.events?.join(","),
    });
    return answer(200, { status: "ignored", event });
  }
  if (postsComments(route.deliver ?? "log") && isOwnComment(payload)) {
    writeLine(log, "info", OWN_COMMENT, { subscription, event });
    return answer(200, { status: "ignored", event, reason: "the gateway's own comment" });
  }
  const newEvent = buildEvent(route, info, event, { payload, json }, deps.now());
  let result;
  try {
    // Direct mode reads the store before it sends anything (is this delivery id a duplicate,
    // how many parts went out already): a store it cannot read is a 503 there too.
    if (route.deliver_only) return await deliverNow(newEvent, payload, deps, inFlight);
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
  writeLine(log, "info", ACCEPTED, {
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

/**
 * The event to store: the request's facts and what the route does with it.
 * @param event the event's label (`eventLabel(info)`, e.g. `issues.opened`)
 */
function buildEvent(
  route: Route,
  info: EventInfo,
  event: string,
  { payload, json }: { payload: unknown; json: string },
  nowMs: number,
): NewEvent {
  const handling = dispatchFor(route, payload, {
    event,
    subscription: route.name,
    deliveryId: info.deliveryId,
  }, json);
  return {
    subscription: route.name,
    eventType: event,
    deliveryId: info.deliveryId,
    dedupe: !info.generatedDeliveryId,
    source: info.source,
    payload: json,
    receivedAtMs: nowMs,
    ...handling,
  };
}
