/**
 * The subscription record: one route from `POST /webhooks/<name>` to a target. The same shape
 * is used for dynamic subscriptions (`webhook_subscriptions.json`) and static routes
 * (`platforms.webhook.extra.routes` in `config.yaml`). See CONTRACT §3.
 *
 * @module
 */

/** Where a subscription comes from: the CLI-managed file, or `config.yaml` (read-only). */
export type RouteOrigin = "dynamic" | "static";

/** One subscription as stored on disk (CONTRACT §3). Timestamps are ISO 8601 UTC. */
export interface Subscription {
  /** Free text shown by `list`. */
  description?: string;
  /** Event-type filter; empty or absent accepts every event. */
  events?: string[];
  /** Current HMAC secret (or shared token for GitLab/Bearer). */
  secret?: string;
  /** Previous secrets still accepted until `expires_at` (secret rotation). */
  previous_secrets?: { secret: string; expires_at: string }[];
  /** Only this signature scheme is accepted when set (`subscribe --auth`). */
  auth?: string;
  /** Prompt template with `{dot.path}` placeholders; absent dumps the payload. */
  prompt?: string;
  /** Skill names added to the system prompt, in order. */
  skills?: string[];
  /** Target name: `log`, `telegram`, `discord`, `slack`, `github_comment`, `gitlab_comment`, `origin`. */
  deliver?: string;
  /** Target options; string values are rendered as templates. */
  deliver_extra?: { chat_id?: string };
  /** Direct delivery: the rendered template is the message, no agent run. */
  deliver_only?: boolean;
  /** Requests per minute for this subscription, overriding `extra.rate_limit`. */
  rate_limit?: number;
  created_at?: string;
  updated_at?: string;
}

/** A subscription with its name and origin, as the gateway and `list` see it. */
export interface Route extends Subscription {
  name: string;
  origin: RouteOrigin;
}

/** Names allowed for subscriptions (CONTRACT §3). */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
