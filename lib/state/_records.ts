/**
 * What a state store holds, whatever the backend: events, their attempts and their routing, and
 * the rules every backend applies to them (the text it gives back, an event's next step). The
 * routing an event carries is in `_route_snapshot.ts`, its id in `_event_ids.ts`.
 *
 * @module
 */
import type { EventSource } from "../subscriptions/event_info.ts";
import type { RouteSnapshot } from "./_route_snapshot.ts";

export type { EventSource };

/** Where an event is in its life: `queued → running → delivered | failed`. */
export type EventStatus = "queued" | "running" | "delivered" | "failed";

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
  /**
   * The request's headers by lowercase name, those that can carry a credential redacted to
   * {@link REDACTED} before they get here (docs/durability.md#what-is-kept); absent for an event
   * stored before headers were kept.
   */
  headers?: Record<string, string>;
  /**
   * The authentication scheme that verified the request (`github`, `stripe`, ...; the names
   * of docs/signatures.md); absent for an event stored before schemes were kept.
   */
  scheme?: string;
  /**
   * The conversation the event belongs to: the subscription's `session` template rendered at
   * ingest (docs/subscriptions.md#conversations); absent when it has none. Its agent run gets the
   * earlier turns of the conversation, and runs after the earlier events of the same key.
   */
  sessionKey?: string;
  /**
   * The JSON the route's transform printed, as printed (`{"skip":true}` for an event it
   * skipped); absent while the transform is pending (it failed at ingest, or a replay runs it
   * again), and for an event whose route has none (docs/subscriptions.md#transforms).
   */
  transformed?: string;
}

/** What a redacted header's value reads as, its name kept. */
export const REDACTED = "[redacted]";

/**
 * How a route handles one event: its mode, the rendered prompt (or direct message) and the
 * route snapshot. Rendered at ingest, and again by a replay (`dispatchFor` in
 * `lib/subscriptions/routes.ts`).
 */
export type EventDispatch = Pick<NewEvent, "mode" | "prompt" | "route" | "sessionKey">;

/**
 * One turn of a conversation (docs/subscriptions.md#conversations): the prompt of an agent run
 * of the conversation and the answer it gave, as `StateStore.saveResponse` records it.
 */
export interface SessionTurn {
  /** The event whose run it was. */
  eventId: string;
  /** The rendered prompt the agent was given. */
  prompt: string;
  /** The answer it gave. */
  answer: string;
  /** When its run began (the claim), in ms since the epoch: forgotten `session_ttl` later. */
  atMs: number;
}

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
  /** The platforms' answers for the parts this delivery got out, recorded with the outcome. */
  receipts?: PartReceipt[];
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
  /**
   * The event whose agent run answered this one too, when it was folded into that run
   * (docs/subscriptions.md#coalescing); absent otherwise.
   */
  coalescedInto?: string;
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
  /** The agent run that answered in this attempt; null when none did (or before runs were kept). */
  run: AgentRun | null;
  /** The answer of that run, as saved; null when no run answered in this attempt. */
  answer: string | null;
}

/**
 * One agent run that answered, as `StateStore.saveResponse` records it on its attempt. Token
 * counts are the endpoint's `usage` (https://platform.openai.com/docs/api-reference/chat/object).
 */
export interface AgentRun {
  /** The `agent.provider` that ran it: `openai` or `command`. */
  provider: string;
  /** The model that answered, as the endpoint named it; null when unknown (`command`). */
  model: string | null;
  /** Tokens of the prompt, system prompt included; null when the endpoint did not say. */
  promptTokens: number | null;
  /** Tokens of the answer; null when the endpoint did not say. */
  completionTokens: number | null;
  /** How long the run took, in ms. */
  durationMs: number;
}

/**
 * One message part a platform took, with what it answered: `StateStore.savePartsSent` and
 * `recordDirect` record them.
 */
export interface PartReceipt {
  /** The part's number in its message, from 1. */
  part: number;
  /** Parts in the whole message. */
  parts: number;
  /** The target that sent it (`telegram`; for `origin`, the target it picked). */
  target: string;
  /** Where it went, without secrets: a chat (`123:7`), a channel, `octo/repo#12`, `gateway log`. */
  chat: string;
  /**
   * The platform's id of the message: Telegram's `message_id`, Slack's `ts`, Discord's `id`,
   * the GitHub comment's or GitLab note's `id`; null when the target has none (`log`).
   */
  messageId: string | null;
  /** A link to the message, when the platform answers with one (a GitHub comment's `html_url`). */
  url: string | null;
  /** When the platform took it, in ms since the epoch. */
  sentAtMs: number;
}

/** The whole story of one event, as `StateStore.lineage` reads it. */
export interface Lineage {
  /** The event as stored now, with its headers and scheme when they were kept. */
  event: StoredEvent;
  /** Its attempts, oldest first (every series), each with its agent run and answer. */
  attempts: Attempt[];
  /** The message parts delivered, oldest first, of every attempt and series. */
  parts: PartReceipt[];
  /**
   * The events folded into its agent run, in the order they arrived, as `foldedInto` reads them
   * (docs/subscriptions.md#coalescing); none for an event run alone. Absent from a backend that
   * does not read it with the lineage.
   */
  folded?: StoredEvent[];
  /**
   * Its conversation, for an event with a {@link NewEvent.sessionKey}
   * (docs/subscriptions.md#conversations): the turns the store holds that were saved before its
   * latest run's own turn (all it holds while it has none), oldest first, at most the newest
   * 200; and whether that own turn is held. Turns are forgotten `session_ttl` after they were
   * written. Absent for an event of no conversation, and from a backend that does not read it.
   */
  conversation?: { earlierTurns: SessionTurn[]; ownTurn: boolean };
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
