/**
 * The "auth" step of `POST /webhooks/<name>` (docs/http.md, docs/signatures.md): the signature is verified on the
 * raw bytes with the route's secrets, before anything is parsed, and the checks that tie a body
 * to the scheme that signed it: which form bodies that scheme's senders send, and Linear's
 * timestamp, which is inside the signed body. And what of a request's headers is stored with its
 * event: all of them, but the values that can carry a credential (docs/durability.md#what-is-kept).
 *
 * @module
 */
import { acceptedSecrets, type Route } from "../../lib/subscriptions/mod.ts";
import type { IngestDeps } from "./mod.ts";
import { log } from "./_answers.ts";
import { Refusal, refusalFor, REJECTED } from "./_refusal.ts";
import { DEFAULT_TOLERANCE_SECONDS, type SchemeName } from "../../lib/signatures/mod.ts";
import { REDACTED } from "../../lib/state/mod.ts";

/** A request to authenticate: its raw body, and the route its name found. */
export interface Unverified {
  request: Request;
  /** The subscription name of the URL. */
  name: string;
  /** The route found for `name`, maybe from a copy of the subscription file up to 100 ms old. */
  route: Route;
  /** The raw body, as received. */
  body: Uint8Array;
  /** The request's time, in milliseconds since the epoch. */
  nowMs: number;
}

/**
 * The "auth" step: verifies the signature with the route's secrets. When it fails in a way a
 * newer subscription file could change (no secret, a signature that does not match), the
 * route is looked up afresh and, if its secrets or scheme changed, verified once more.
 * @param deps the pipeline's collaborators: `verifier`, `findRoute`, `globalSecret`
 * @param unverified the request, its raw body, its name and the route found for it
 * @returns the route the request is authentic for and the scheme that said so (`none` for a
 *   route with `auth: none`, which takes every request)
 * @throws Refusal 403 (no secret), 401 (missing or invalid signature), 404 (the subscription
 *   was just removed)
 */
export async function authenticate(
  deps: IngestDeps,
  { request, name, route, body, nowMs }: Unverified,
): Promise<{ route: Route; scheme: SchemeName }> {
  // `auth: none` has nothing to verify: the route step serves it on a loopback address only.
  if (route.auth === "none") return { route, scheme: "none" };
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
    if (!fresh) throw refusalFor(name, { status: 404, error: `unknown subscription: ${name}` });
    const freshSecrets = acceptedSecrets(fresh, deps.globalSecret, nowMs);
    if (freshSecrets.join("\n") !== secrets.join("\n") || fresh.auth !== route.auth) {
      [route, secrets] = [fresh, freshSecrets];
      verdict = await verify(route, secrets);
    }
  }
  if (!verdict) {
    throw refusalFor(name, { status: 403, error: "no secret configured for this subscription" });
  }
  if (verdict.ok) return { route, scheme: verdict.scheme };
  throw signatureRefusal({ name, scheme: verdict.scheme, detail: verdict.reason });
}

/** The 401 for a signature that is missing, wrong or too old; its line names scheme and detail. */
function signatureRefusal(
  { name, scheme, detail }: { name: string; scheme: SchemeName | null; detail: string },
): Refusal {
  const error = detail === "missing" ? "missing signature" : "invalid signature";
  return new Refusal(401, error, {
    pool: { subscription: name },
    line: {
      logger: log,
      level: "warning",
      template: REJECTED,
      properties: { subscription: name, status: 401, reason: error, scheme, detail },
    },
  });
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
 * @param scheme the scheme that verified the request
 * @param headers the request's headers (the generic scheme's V2 header)
 * @returns the forms `parsePayload` may take
 */
export function formsSignedBy(scheme: SchemeName, headers: Headers): "any" | "payload" | "none" {
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
 * The replay check of a body that carries Linear's timestamp, made once the body is parsed
 * (see {@link carriesLinearTimestamp}).
 * @param parsed the subscription name of the URL, the scheme that verified the request, the
 *   parsed payload and the request's time in milliseconds since the epoch
 * @throws Refusal 401 when the timestamp is missing or out of the window
 */
export function refuseStaleLinear(
  { name, scheme, payload, nowMs }: {
    name: string;
    scheme: SchemeName;
    payload: unknown;
    nowMs: number;
  },
): void {
  if (carriesLinearTimestamp(scheme, payload) && !linearTimestampFresh(payload, nowMs)) {
    throw signatureRefusal({ name, scheme, detail: "stale" });
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
 * The headers each scheme of docs/signatures.md reads its signature or token from, and the
 * usual carriers of credentials (proxies', cookies). Any other name that says what it carries
 * ({@link CREDENTIAL_NAME}) is redacted too: `X-Api-Key`, a sender's own `X-Auth-Token`.
 */
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  "x-hub-signature-256",
  "x-hub-signature",
  "x-gitlab-token",
  "webhook-signature",
  "svix-signature",
  "stripe-signature",
  "x-slack-signature",
  "x-shopify-hmac-sha256",
  "linear-signature",
  "x-webhook-signature-v2",
  "x-webhook-signature",
  "authorization",
  "proxy-authorization",
  "cookie",
]);

/** A header name that says it carries a credential. */
const CREDENTIAL_NAME =
  /auth|token|secret|signature|hmac|cookie|session|password|passwd|api[-_]?key|credential/i;

/** Most headers stored with an event: a request may send a hundred, no sender sends so many. */
const MAX_STORED_HEADERS = 64;

/** Longest header value stored, in characters; a longer one is cut, its length said. */
const MAX_STORED_VALUE_CHARS = 1024;

/**
 * A request's headers as they are stored with its event: by lowercase name, sorted as
 * `Headers` gives them, the value of every header that can carry a credential replaced with
 * `[redacted]` (its name kept, so the lineage shows which scheme's header came); at most 64
 * headers, each value cut at 1,024 characters.
 * @param headers the request's headers
 * @returns the headers to store
 * @example
 * ```ts
 * redactedHeaders(new Headers({ "X-Hub-Signature-256": "sha256=ab12", "X-GitHub-Event": "ping" }));
 * // { "x-github-event": "ping", "x-hub-signature-256": "[redacted]" }
 * ```
 */
export function redactedHeaders(headers: Headers): Record<string, string> {
  const stored: Record<string, string> = {};
  let count = 0;
  for (const [name, value] of headers) {
    if (++count > MAX_STORED_HEADERS) break;
    stored[name] = CREDENTIAL_HEADERS.has(name) || CREDENTIAL_NAME.test(name)
      ? REDACTED
      : value.length > MAX_STORED_VALUE_CHARS
      ? `${value.slice(0, MAX_STORED_VALUE_CHARS)}… (${value.length} characters)`
      : value;
  }
  return stored;
}
