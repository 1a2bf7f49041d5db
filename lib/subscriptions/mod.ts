/**
 * The subscription record: one route from `POST /webhooks/<name>` to a target. The same shape
 * is used for dynamic subscriptions (`webhook_subscriptions.json`) and static routes
 * (`platforms.webhook.extra.routes` in `config.yaml`). See docs/subscriptions.md.
 *
 * @module
 */
import type { MessageFormat } from "../targets/mod.ts";
import { SCHEME_NAMES, type SchemeName } from "../signatures/mod.ts";

/** Where a subscription comes from: the CLI-managed file, or `config.yaml` (read-only). */
export type RouteOrigin = "dynamic" | "static";

/** One subscription as stored on disk (docs/subscriptions.md). Timestamps are ISO 8601 UTC. */
export interface Subscription {
  /** Free text shown by `list`. */
  description?: string;
  /** Event-type filter; empty or absent accepts every event. */
  events?: string[];
  /**
   * CEL expressions over the payload and `headers`, evaluated after the event-type filter; every
   * one must be true (docs/subscriptions.md#filters). Empty or absent accepts every event.
   */
  filters?: string[];
  /**
   * Set by `agent webhook disable`: the gateway answers the subscription's requests as it does an
   * unknown name's (404), and keeps its record and secret.
   */
  disabled?: boolean;
  /** Current HMAC secret (or shared token for GitLab/Bearer). */
  secret?: string;
  /** Previous secrets still accepted until `expires_at` (secret rotation). */
  previous_secrets?: { secret: string; expires_at: string }[];
  /**
   * Only this signature scheme is accepted when set (`subscribe --auth`); `none` accepts
   * requests without a signature, and only while the gateway listens on a loopback address
   * (docs/subscriptions.md#auth-none).
   */
  auth?: string;
  /** Prompt template with `{dot.path}` placeholders; absent dumps the payload. */
  prompt?: string;
  /** Skill names added to the system prompt, in order. */
  skills?: string[];
  /**
   * Target name: `log`, `telegram`, `discord`, `slack`, `github_comment`, `gitlab_comment` or
   * `origin` (docs/targets.md).
   */
  deliver?: string;
  /**
   * Target options; string values are rendered as templates. `chat_id`: the chat, channel or
   * item; `thread`: the thread in that chat (a Telegram forum topic, a Slack `thread_ts`, a
   * Discord thread id), rendered per event (docs/targets.md#threads).
   */
  deliver_extra?: { chat_id?: string; thread?: string };
  /** Direct delivery: the rendered template is the message, no agent run. */
  deliver_only?: boolean;
  /**
   * How the message is meant: `markdown` is rendered in each chat's formatting, `plain` sent as
   * written. Absent: `markdown` for an agent's answer, `plain` for a direct message
   * (docs/targets.md#formatting).
   */
  format?: MessageFormat;
  /** Requests per minute for this subscription, overriding `extra.rate_limit`. */
  rate_limit?: number;
  /** The model its agent runs ask for, over `agent.model` (docs/subscriptions.md#agent-options). */
  model?: string;
  /** The most tokens an answer may have, a whole number ≥ 1; absent: the endpoint's default. */
  max_tokens?: number;
  /** Sampling temperature, 0 to 2; absent: the endpoint's default. */
  temperature?: number;
  /** Instructions added to the system prompt, after the skills. */
  system_prompt?: string;
  /**
   * A program and its arguments, split as a shell splits words and run without a shell: it gets
   * the payload's JSON on stdin and prints the JSON the prompt is rendered from, or
   * `{"skip": true}` (docs/subscriptions.md#transforms).
   */
  transform?: string;
  /** The transform's time limit in seconds, over 0 and at most 300. @default {5} */
  transform_timeout?: number;
  /**
   * Seconds of quiet that end a coalescing window (docs/subscriptions.md#coalescing): events of
   * the same key that arrive less than this apart are folded into one agent run. A number > 0.
   */
  coalesce?: number;
  /** The coalescing key's template; absent: the `session` template. */
  coalesce_key?: string;
  /** The longest a coalescing window stays open after its first event, in seconds. @default {300} */
  coalesce_max?: number;
  /**
   * The conversation key's template (docs/subscriptions.md#conversations), e.g.
   * `{repository.full_name}#{issue.number}`: the agent run of an event gets the earlier turns of
   * the events with the same rendered key, and runs after them.
   */
  session?: string;
  /** The most tokens of earlier turns a run is given, a whole number ≥ 1. @default {4000} */
  session_budget?: number;
  /** When `subscribe` created it, ISO 8601 UTC. */
  created_at?: string;
  /** When a command last changed it, ISO 8601 UTC. */
  updated_at?: string;
}

/** A subscription with its name and origin, as the gateway and `list` see it. */
export interface Route extends Subscription {
  /** The `<name>` of `POST /webhooks/<name>`. */
  name: string;
  /** Whether it is a subscription of the file, or a static route of `config.yaml`. */
  origin: RouteOrigin;
}

/**
 * The secret a sender must use now: the route's own, else the global one for a static route
 * (`extra.secret` serves static routes that have none: docs/configuration.md). An empty secret
 * counts as none, as an empty setting does elsewhere.
 * @param route the route
 * @param globalSecret `extra.secret` / `WEBHOOK_SECRET`, if set
 * @returns the secret, or undefined when requests to the route are refused (403)
 */
export function currentSecret(route: Route, globalSecret: string | undefined): string | undefined {
  return route.secret || (route.origin === "static" ? globalSecret || undefined : undefined);
}

/**
 * Every secret a request may be signed with at `nowMs`: the current one, then the previous
 * ones still within their rotation grace period.
 * @param route the route
 * @param globalSecret `extra.secret` / `WEBHOOK_SECRET`, if set
 * @param nowMs the clock, in milliseconds since the epoch
 * @returns the secrets, current first; empty when requests to the route are refused (403)
 */
export function acceptedSecrets(
  route: Route,
  globalSecret: string | undefined,
  nowMs: number,
): string[] {
  const current = currentSecret(route, globalSecret);
  const previous = (route.previous_secrets ?? [])
    .filter((entry) => Date.parse(entry.expires_at) > nowMs)
    .map((entry) => entry.secret);
  return current === undefined ? previous : [current, ...previous];
}

/**
 * A new secret for a subscription (or the global one): 32 random bytes, base64url without
 * padding (43 characters). For a subscription pinned to Standard Webhooks, the form its
 * libraries and senders (Svix) take: `whsec_` and standard base64, whose decoded bytes are the
 * key. Source: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 * @param scheme the subscription's `auth`, if pinned
 * @returns the secret
 * @example
 * ```ts
 * generateSecret(); // "q3Jd…" (43 characters)
 * generateSecret("standard"); // "whsec_…"
 * ```
 */
export function generateSecret(scheme?: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const base64 = btoa(String.fromCharCode(...bytes));
  if (scheme === "standard") return `whsec_${base64}`;
  return base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Names allowed for subscriptions (docs/subscriptions.md). */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/**
 * What a subscription's `auth` may name: a signature scheme (docs/signatures.md), or `none`
 * (docs/subscriptions.md#auth-none).
 */
export const AUTH_NAMES: readonly SchemeName[] = [...SCHEME_NAMES, "none"];

export {
  agentOptionProblem,
  checkRecord,
  checkTargetAndScheme,
  coalesceProblem,
  DEFAULT_COALESCE_MAX_SECONDS,
  RECORD_FIELDS,
} from "./_record_checks.ts";
