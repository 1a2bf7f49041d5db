/**
 * The shapes shared by every delivery target: the job the worker hands over, the injected
 * context, and the internal {@link Target} interface each `lib/targets/<name>.ts` implements.
 * `mod.ts` re-exports the public ones.
 *
 * @module
 */

import type { EventSource } from "../subscriptions/event_info.ts";
import type { Dialect } from "./_markdown.ts";

export type { EventSource };

/**
 * How a message's text is meant: `plain`, sent as written, or `markdown`, rendered in each
 * chat's own formatting (docs/targets.md#formatting).
 */
export type MessageFormat = "plain" | "markdown";

/** One message part as a target sends it. */
export interface MessagePart {
  /** The text to send: plain, or in the target's formatting when `formatted`. */
  text: string;
  /** Whether `text` is rendered in the target's formatting (Telegram HTML, Slack mrkdwn, ...). */
  formatted: boolean;
  /** The same part as written (its Markdown), sent instead when the platform refuses `text`. */
  plain: string;
}

/**
 * What a platform answered for one message part it took, read from its answer: the message's
 * id there, and a link to it when the answer has one (docs/targets.md#what-is-recorded).
 */
export interface SentMessage {
  /**
   * The platform's id of the message: Telegram's `result.message_id`, Slack's `ts`, Discord's
   * `id`, the GitHub comment's or GitLab note's `id`; absent when the target has none (`log`).
   */
  messageId?: string;
  /** A link to the message: a GitHub comment's `html_url`. */
  url?: string;
}

/** One message to deliver: the text, where it should go, and the event it answers. */
export interface DeliveryJob {
  /** The subscription's `deliver` value (`telegram`, `origin`, ...). */
  target: string;
  /** Rendered `deliver_extra.chat_id`; undefined falls back to the home channel variable. */
  chatId?: string;
  /** The whole message: the agent's answer or the rendered template. */
  text: string;
  /** How `text` is meant; `markdown` is rendered for the chat targets. @default {"plain"} */
  format?: MessageFormat;
  /** The parsed JSON payload; comment targets and `origin` find the issue or merge request here. */
  payload: unknown;
  /** Who sent the event; `origin` replies there. */
  source: EventSource;
  /** Subscription name, for the log target and messages. */
  subscription: string;
  /** Event label: the type with `.<action>` when there is one (`issues.opened`, `pipeline`). */
  eventLabel: string;
  /** The gateway's id of the stored event. */
  eventId: string;
  /** The sender's delivery id (idempotency key). */
  deliveryId: string;
  /**
   * Parts `[0, n)` were already sent and are skipped: a worker resuming after a crash or a
   * failed part, or a direct-mode retry of the same delivery. @default {0}
   */
  partsAlreadySent?: number;
}

/** What a delivery needs from the outside world; `main.ts` builds the real one, tests fake it. */
export interface TargetContext {
  /** Process env merged with `.env`: tokens, home channels, API base URLs. */
  env: Record<string, string | undefined>;
  /** The HTTP client. */
  fetch: typeof fetch;
  /** Waits `ms` milliseconds; used to wait out HTTP 429 answers. */
  sleep: (ms: number) => Promise<void>;
  /** The gateway log; the `log` target writes here. */
  log: (message: string, properties: Record<string, unknown>) => void;
  /** `extra.home`, e.g. `telegram:123456`: where `origin` goes when the sender has no reply place. */
  homeTarget?: string;
  /** Longest total wait for 429 answers inside one `deliver()` call, in ms. @default {30000} */
  maxRateLimitWaitMs?: number;
}

/** The context a target's `send` gets: the caller's, plus the 429 wait budget of this call. */
export interface SendContext extends TargetContext {
  /** Milliseconds of 429 waiting still allowed in this `deliver()` call; decremented by waits. */
  rateLimitBudget: { remainingMs: number };
}

/** Where a resolved message goes: target-specific fields plus a label for receipts and logs. */
export interface Resolved<D> {
  /** Human-readable destination without secrets (`123:7`, `octo/repo#12`). */
  label: string;
  /** What `send` needs. */
  destination: D;
}

/** `origin` does not send itself: it names the target (and chat id) that should. */
export interface Redirect {
  /** The target to use instead, and the chat id to give it (undefined: its own default). */
  redirect: { target: string; chatId?: string };
}

/**
 * One delivery target. Adding a target is one module exporting such an object plus one line in
 * the registry of `mod.ts`.
 */
export interface Target<D = unknown> {
  /** The `--deliver` value. */
  readonly name: string;
  /** Longest message the platform accepts, in UTF-16 code units; absent means no limit. */
  readonly maxChars?: number;
  /** How the platform shows Markdown; absent: Markdown is sent as written (GitHub, GitLab). */
  readonly dialect?: Dialect;
  /** What the target needs (tokens), for the README and CLI. */
  readonly needs: string;
  /** Where it delivers, for the README and CLI. */
  readonly destination: string;
  /**
   * The variable naming the chat a message goes to when its subscription gives none
   * (`TELEGRAM_HOME_CHANNEL`); absent for targets that find their place elsewhere.
   */
  readonly homeChannel?: string;
  /**
   * Finds the destination of a job before anything is sent.
   * @throws {TargetError} permanent: missing token, no destination, malformed chat id.
   */
  resolve(job: DeliveryJob, ctx: TargetContext): Resolved<D> | Redirect;
  /**
   * Sends one message part (already within {@link maxChars}).
   * @returns the message's id and link, as far as the platform's answer gives them
   * @throws {TargetError} permanent or retryable, as the platform answered.
   */
  send(destination: D, part: MessagePart, ctx: SendContext): Promise<SentMessage>;
  /**
   * Checks a subscription's settings when it is created (`agent webhook subscribe`).
   * @returns Warnings that do not block the subscription (a token the gateway may still get).
   * @throws {UsageError} When the settings can never deliver (no chat id and no home channel).
   */
  check?(
    options: { chatId?: string; thread?: string; env: Record<string, string | undefined> },
  ): string[];
}
