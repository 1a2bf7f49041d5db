/**
 * An event's page: its lineage, as the store holds it. The facts (subscription, type, delivery
 * id, status, times), the request as received (headers, scheme, the payload as a collapsible
 * tree and as text), the decisions, the prompt it became (or the message, in direct mode) and
 * the skills given, the answer (and, once a replay has answered, the new answer beside the
 * previous one), each attempt with its agent run, and the parts that went out; and the Replay
 * and Replay with changes buttons. The page reloads itself when the event changes
 * (`/events/stream?id=`).
 *
 * @module
 */
import type { Context } from "hono";
import { NotFoundError } from "../../lib/errors.ts";
import type { Lineage, PartReceipt, StoredEvent } from "../../lib/state/mod.ts";
import type { DashboardEnv } from "./_auth.ts";
import { duration, type NumberedAttempt, tookMs, utcTime, withSeries } from "./_format.ts";
import { Layout, MessagePage, sendPage } from "./_layout.tsx";
import { Attempts, Decisions, Delivered, Received } from "./_lineage.tsx";
import { Coalescing, Conversation, JsonView, Transform } from "./_lineage_steps.tsx";
import { AnswerComparison, answersToCompare } from "./_replay_diff.tsx";
import { replayWithChangesPath } from "./_replay_page.tsx";
import type { AppParts } from "./mod.ts";

/** What an event's page shows. */
export interface EventPageProps {
  event: StoredEvent;
  /** Its attempts, oldest first, numbered by series, each with its agent run and answer. */
  attempts: NumberedAttempt[];
  /** The message parts platforms took, oldest first. */
  parts: PartReceipt[];
  /** The events folded into its run, and its conversation's earlier turns (see `Lineage`). */
  routing: Pick<Lineage, "folded" | "conversation">;
  /** Whether the event holds its delivery id's idempotency key now. */
  holdsKey: boolean;
  /** The session's CSRF token, for the Replay and log-out forms. */
  csrf: string;
  /** What the last action did, said above the facts. */
  notice?: { ok: boolean; text: string };
}

/** The event's page. */
export function EventPage(props: EventPageProps) {
  const { event } = props;
  const pair = event.mode === "agent" ? answersToCompare(props.attempts) : undefined;
  const stream = `/events/stream?id=${encodeURIComponent(event.id)}&since=${event.updatedAtMs}`;
  return (
    <Layout
      title={`${event.subscription} ${event.eventLabel}`}
      page="event"
      csrf={props.csrf}
      stream={stream}
      eventId={event.id}
    >
      <p>
        <a href="/events">« Events</a>
      </p>
      <h1>
        {event.subscription} · <span class="mono">{event.eventLabel}</span>{" "}
        <span class={`status status-${event.status}`}>{event.status}</span>
        <span id="live" class="live" hidden>live</span>
      </h1>
      {props.notice && (
        <div class={`notice ${props.notice.ok ? "ok" : "bad"}`}>{props.notice.text}</div>
      )}
      <Facts event={event} />
      <ReplayActions event={event} csrf={props.csrf} />
      <Received event={event} />
      <Payload text={event.payload} />
      <Decisions event={event} holdsKey={props.holdsKey} />
      <Transform event={event} />
      <Coalescing event={event} folded={props.routing.folded ?? []} />
      <Conversation event={event} conversation={props.routing.conversation} />
      <PromptAndAnswer event={event} />
      {pair && <AnswerComparison pair={pair} />}
      <Attempts attempts={props.attempts} />
      <Delivered parts={props.parts} />
    </Layout>
  );
}

/** The Replay button, and the link to Replay with changes for an event the agent answers. */
function ReplayActions(props: { event: StoredEvent; csrf: string }) {
  const { event } = props;
  return (
    <div class="actions">
      <form method="post" action={`/events/${encodeURIComponent(event.id)}/replay`}>
        <input type="hidden" name="_csrf" value={props.csrf} />
        <button type="submit" class="primary" disabled={event.status === "running"}>
          Replay
        </button>
      </form>
      {event.mode === "agent" && (
        <a class="button" id="replay-with-changes" href={replayWithChangesPath(event.id)}>
          Replay with changes
        </a>
      )}
    </div>
  );
}

/** The prompt it became (the message, in direct mode), the skills given, and the answer. */
function PromptAndAnswer(props: { event: StoredEvent }) {
  const { event } = props;
  return (
    <>
      <section class="block" id="prompt">
        <h2>{event.mode === "direct" ? "Message" : "Prompt"}</h2>
        <pre>{event.prompt}</pre>
        {event.mode === "agent" && (
          <p id="skills">
            Skills given: {event.route.skills.length > 0 ? event.route.skills.join(", ") : "none"}
          </p>
        )}
      </section>
      {event.mode === "agent" && (
        <section class="block" id="answer">
          <h2>Answer</h2>
          {event.response === null
            ? <p class="muted">{noAnswer(event)}</p>
            : <pre>{event.response}</pre>}
        </section>
      )}
    </>
  );
}

/**
 * The event with exactly this id: the pages link by whole ids, and a prefix matching several
 * events must not be an error page.
 * @param parts the dashboard's store
 * @param id the whole event id, from the address
 * @returns the event, or null when none has this id
 */
export async function findEvent(
  parts: Pick<AppParts, "store">,
  id: string,
): Promise<StoredEvent | null> {
  try {
    const event = await parts.store.getEvent(id);
    return event?.id === id ? event : null;
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

/** Whether the event holds its delivery id's idempotency key now. */
export async function holdsKey(parts: AppParts, event: StoredEvent): Promise<boolean> {
  const holder = await parts.store.keyHolder(event.subscription, event.deliveryId, parts.now());
  return holder === event.id;
}

/**
 * An event's page: its lineage, read again (a replay may have just changed it).
 * @param c the request's context: its session's CSRF token
 * @param parts the dashboard's store and clock
 * @param options `event`: the event found; `notice`: what the last action did
 */
export async function eventPage(
  c: Context<DashboardEnv>,
  parts: AppParts,
  options: { event: StoredEvent; notice?: { ok: boolean; text: string } },
) {
  const { event, notice } = options;
  const lineage = (await parts.store.lineage(event.id)) ?? { event, attempts: [], parts: [] };
  return (
    <EventPage
      event={lineage.event}
      attempts={withSeries(lineage.attempts)}
      parts={lineage.parts}
      routing={lineage}
      holdsKey={await holdsKey(parts, lineage.event)}
      csrf={c.get("session")!.csrf}
      notice={notice}
    />
  );
}

/** The 404 page of an event that does not exist (any more: retention deletes old ones). */
export function notFound(c: Context<DashboardEnv>): Response | Promise<Response> {
  const page = (
    <MessagePage
      title="No such event"
      message="No event has this id: it may have been deleted by retention."
    />
  );
  return sendPage(c, page, 404);
}

/** Why there is no answer to show. */
function noAnswer(event: StoredEvent): string {
  if (event.status === "queued" || event.status === "running") return "No answer yet.";
  return "No answer was saved: the agent did not answer.";
}

/** The event's facts, as a list of terms. */
function Facts(props: { event: StoredEvent }) {
  const { event } = props;
  const took = tookMs(event);
  return (
    <dl class="facts">
      <dt>Event id</dt>
      <dd class="mono">{event.id}</dd>
      <dt>Delivery id</dt>
      <dd class="mono">{event.deliveryId}</dd>
      <dt>Sender</dt>
      <dd>{event.source}</dd>
      <dt>Mode</dt>
      <dd>{event.mode === "direct" ? "direct delivery" : "agent"}</dd>
      <dt>Received</dt>
      <dd>{utcTime(event.receivedAtMs)} UTC</dd>
      {event.replayedAtMs !== null && <dt>Replayed</dt>}
      {event.replayedAtMs !== null && <dd>{utcTime(event.replayedAtMs)} UTC</dd>}
      <dt>Tries</dt>
      <dd>{String(event.attempts)}</dd>
      <dt>Took</dt>
      <dd>{took === null ? "-" : duration(took)}</dd>
      {event.nextAttemptAtMs !== null && <dt>Next try</dt>}
      {event.nextAttemptAtMs !== null && <dd>{utcTime(event.nextAttemptAtMs)} UTC</dd>}
      {event.lastError !== null && <dt>Last error</dt>}
      {event.lastError !== null && <dd class="error-text">{event.lastError}</dd>}
    </dl>
  );
}

/** The payload: a tree when it is JSON of a size to draw, and its text either way. */
function Payload(props: { text: string }) {
  return (
    <section class="block" id="payload">
      <h2>Payload</h2>
      <JsonView text={props.text} />
    </section>
  );
}
