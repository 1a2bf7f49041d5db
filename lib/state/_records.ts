/**
 * What a state store holds, whatever the backend: events, their attempts and their routing, and
 * the rules every backend applies to them (event ids, the text it gives back, an event's next
 * step).
 *
 * @module
 */
import type { EventSource } from "../subscriptions/event_info.ts";

export type { EventSource };

/** Where an event is in its life: `queued → running → delivered | failed`. */
export type EventStatus = "queued" | "running" | "delivered" | "failed";

/**
 * The subscription's routing at accept time, so the worker does not depend on the subscription
 * still existing (or being unchanged) when it runs.
 */
export interface RouteSnapshot {
  /** Target name: `log`, `telegram`, `slack`, ... */
  deliver: string;
  /** Rendered `deliver_extra.chat_id`, when the subscription has one. */
  chatId?: string;
  /** Skill names added to the system prompt, in order. */
  skills: string[];
  /**
   * The subscription's `format` (`plain` or `markdown`), when it sets one; absent, the mode
   * decides (docs/targets.md#formatting). The values of `MessageFormat` in lib/targets.
   */
  format?: "plain" | "markdown";
}

/** An event as the receiver hands it to the store. */
export interface NewEvent {
  /** Subscription name. */
  subscription: string;
  /** Event label: the type (docs/http.md), with `.<action>` when there is one: `issues.opened`. */
  eventLabel: string;
  /** Delivery id from the sender's headers, or a generated one. */
  deliveryId: string;
  /** False when the delivery id was generated: such events are never deduplicated. */
  dedupe: boolean;
  /** Sender family. */
  source: EventSource;
  /** `agent`: run the agent then deliver its answer; `direct`: deliver `prompt` as is. */
  mode: "agent" | "direct";
  /** The raw JSON text of the payload. */
  payload: string;
  /** The rendered prompt (when accepted or last replayed), or the message itself in direct mode. */
  prompt: string;
  /** Routing, as the route was when the event was accepted or last replayed. */
  route: RouteSnapshot;
  /** When the request was received, in milliseconds since the epoch. */
  receivedAtMs: number;
}

/**
 * How a route handles one event: its mode, the rendered prompt (or direct message) and the
 * route snapshot. Rendered at ingest, and again by a replay (`dispatchFor` in
 * `lib/subscriptions/routes.ts`).
 */
export type EventDispatch = Pick<NewEvent, "mode" | "prompt" | "route">;

/** How a direct delivery went, as `StateStore.recordDirect` records it. */
export interface DirectOutcome {
  delivered: boolean;
  /** Why it failed, when it did. */
  error?: string;
  /** Parts of the message delivered. */
  partsSent: number;
  /**
   * The event `StateStore.recordDirectProgress` stored for this delivery, which then holds the
   * outcome instead of a second event.
   */
  progressId?: string;
  /**
   * When the delivery ended, for a record written later, in ms since the epoch (@default now):
   * the delivery id's idempotency window counts from it.
   */
  atMs?: number;
}

/** An event as stored, with its progress. */
export interface StoredEvent extends NewEvent {
  /** Id that sorts in acceptance order: `evt_0mh2k3x9a1b2c3d4` (see {@link createIdGenerator}). */
  id: string;
  status: EventStatus;
  /** Attempts made in the current series (reset by a replay). */
  attempts: number;
  /**
   * Attempts of the current series that delivered part of a message before failing: they do not
   * count toward the retry limit, since each one moved the delivery on.
   */
  uncountedAttempts: number;
  /** When a queued event is due, in milliseconds since the epoch; null otherwise. */
  nextAttemptAtMs: number | null;
  /** The agent's answer once it ran: a delivery retry does not run the agent again. */
  response: string | null;
  /** Message parts already delivered: a resumed delivery skips them. */
  partsSent: number;
  /** Error of the last failed attempt. */
  lastError: string | null;
  /** Last change, in milliseconds since the epoch. */
  updatedAtMs: number;
  /** When a replay queued the current series of attempts, in ms since the epoch; null if none. */
  replayedAtMs: number | null;
}

/** One attempt at an event: the agent run and/or the delivery. */
export interface Attempt {
  eventId: string;
  /** Attempt number in its series, from 1. */
  attempt: number;
  /** When it began, in ms since the epoch. */
  startedAtMs: number;
  /** When it ended, in ms since the epoch; null while in progress (or cut off by a crash). */
  finishedAtMs: number | null;
  /** The step the attempt reached (and failed at, when `error` is set). */
  step: "agent" | "delivery";
  error: string | null;
}

/** What `StateStore.accept` did: stored the event, or found its delivery id already seen. */
export type AcceptResult =
  | { status: "accepted"; eventId: string }
  | { status: "duplicate"; eventId: string | null };

/**
 * Text as a state store gives it back: each U+0000 becomes U+FFFD. `node:sqlite` reads a TEXT
 * value only up to its first U+0000 (the agent, and every replay, got a prompt cut there), and
 * PostgreSQL's `text` refuses the character, so every backend stores prompts, answers and errors
 * through this. A payload's JSON text never holds one: JSON escapes it.
 * @param text a prompt, an answer or an error message
 * @returns the text with each U+0000 replaced by U+FFFD
 */
export function storableText(text: string): string {
  return text.includes("\0") ? text.replaceAll("\0", "\uFFFD") : text;
}

/**
 * Whether an event's next step is an agent run: an agent-mode event without a saved answer.
 * The others (direct messages, answers waiting for their delivery) go straight to delivery.
 * @param event its mode and saved response
 */
export function needsAgentRun(event: Pick<StoredEvent, "mode" | "response">): boolean {
  return event.mode === "agent" && event.response === null;
}

const RANDOM_SPACE = 36 ** 7;

/**
 * Makes a generator of event ids: `evt_` + 9 base-36 characters of milliseconds + 7 of
 * randomness (20 characters). Ids made by one generator sort in creation order: within one
 * millisecond the random part is incremented instead of redrawn (as ULIDs do).
 * @param now clock in milliseconds since the epoch
 * @param random a value in [0, 1)
 * @returns a function that returns a fresh id on each call
 * @example A backend's default ids
 * ```ts
 * const newId = createIdGenerator(Date.now, cryptoRandom);
 * newId(); // "evt_0mh2k3x9a1b2c3d4"
 * ```
 */
export function createIdGenerator(now: () => number, random: () => number): () => string {
  let lastMs = -1;
  let lastRandom = 0;
  return () => {
    const ms = Math.max(now(), lastMs);
    if (ms === lastMs && lastRandom + 1 < RANDOM_SPACE) lastRandom += 1;
    else lastRandom = Math.floor(random() * (RANDOM_SPACE / 2));
    lastMs = ms;
    return "evt_" + ms.toString(36).padStart(9, "0") + lastRandom.toString(36).padStart(7, "0");
  };
}

/** A random value in [0, 1) from the platform's cryptographic generator. */
export function cryptoRandom(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 32;
}
