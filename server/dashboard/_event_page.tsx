/**
 * An event's page: its lineage, as the store holds it. The facts (subscription, type, delivery
 * id, status, times), the request as received (headers, scheme, the payload as a collapsible
 * tree and as text), the decisions, the prompt it became (or the message, in direct mode) and
 * the skills given, each attempt with its agent run, the answer, and the parts that went out;
 * and the Replay button. The page reloads itself when the event
 * changes (`/events/stream?id=`).
 *
 * @module
 */
import type { PartReceipt, StoredEvent } from "../../lib/state/mod.ts";
import { duration, type NumberedAttempt, tookMs, utcTime } from "./_format.ts";
import { JsonTree, MAX_TREE_CHARS, prettyJson } from "./_json_tree.tsx";
import { Layout } from "./_layout.tsx";
import { Attempts, Decisions, Delivered, Received } from "./_lineage.tsx";

/** What an event's page shows. */
export interface EventPageProps {
  event: StoredEvent;
  /** Its attempts, oldest first, numbered by series, each with its agent run and answer. */
  attempts: NumberedAttempt[];
  /** The message parts platforms took, oldest first. */
  parts: PartReceipt[];
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
      <div class="actions">
        <form method="post" action={`/events/${encodeURIComponent(event.id)}/replay`}>
          <input type="hidden" name="_csrf" value={props.csrf} />
          <button type="submit" class="primary" disabled={event.status === "running"}>
            Replay
          </button>
        </form>
      </div>
      <Received event={event} />
      <Payload text={event.payload} />
      <Decisions event={event} holdsKey={props.holdsKey} />
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
      <Attempts attempts={props.attempts} />
      <Delivered parts={props.parts} />
    </Layout>
  );
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
  let parsed: { value: unknown } | undefined;
  if (props.text.length <= MAX_TREE_CHARS) {
    try {
      parsed = { value: JSON.parse(props.text) };
    } catch {
      parsed = undefined;
    }
  }
  return (
    <section class="block" id="payload">
      <h2>Payload</h2>
      {parsed && (
        <div class="json">
          <JsonTree value={parsed.value} />
        </div>
      )}
      <details open={!parsed}>
        <summary>As text ({String(props.text.length)} characters)</summary>
        <pre>{parsed ? prettyJson(parsed.value) : props.text}</pre>
      </details>
    </section>
  );
}
