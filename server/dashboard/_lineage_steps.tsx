/**
 * The sections of an event's page about the routing steps between its request and its agent
 * run (docs/dashboard.md#an-event): what its transform printed, or that it skipped the event,
 * or that it is still to run; which agent run answered a folded event, or which events a run
 * answered too; and the conversation the run belonged to.
 *
 * @module
 */
import { DEFAULT_SESSION_BUDGET_TOKENS, fitTurns } from "../../lib/agents/mod.ts";
import type { Lineage, StoredEvent } from "../../lib/state/mod.ts";
import { SKIPPED_JSON } from "../../lib/transforms/mod.ts";
import { utcTime } from "./_format.ts";
import { JsonTree, MAX_TREE_CHARS, prettyJson } from "./_json_tree.tsx";

/**
 * JSON text as a tree whose objects and lists fold, when it parses and is of a size to draw,
 * and as text either way (open when there is no tree).
 * @param props `text`: the JSON as stored
 */
export function JsonView(props: { text: string }) {
  let parsed: { value: unknown } | undefined;
  if (props.text.length <= MAX_TREE_CHARS) {
    try {
      parsed = { value: JSON.parse(props.text) };
    } catch {
      parsed = undefined;
    }
  }
  return (
    <>
      {parsed && (
        <div class="json">
          <JsonTree value={parsed.value} />
        </div>
      )}
      <details open={!parsed}>
        <summary>As text ({String(props.text.length)} characters)</summary>
        <pre>{parsed ? prettyJson(parsed.value) : props.text}</pre>
      </details>
    </>
  );
}

/**
 * The route's transform (docs/subscriptions.md#transforms): the program, then the JSON it
 * printed, or that it skipped the event, or that it is still to run and why it failed last;
 * nothing for an event whose route has none.
 */
export function Transform(props: { event: StoredEvent }) {
  const { event } = props;
  const transform = event.route.transform;
  if (transform === undefined) return null;
  return (
    <section class="block" id="transform">
      <h2>Transform</h2>
      <dl class="facts">
        <dt>Program</dt>
        <dd class="mono" id="transform-program">{transform.command.join(" ")}</dd>
        <dt>Time limit</dt>
        <dd>{`${transform.timeoutSeconds} s`}</dd>
      </dl>
      <TransformOutcome event={event} />
    </section>
  );
}

/** What the transform did with the event. */
function TransformOutcome(props: { event: StoredEvent }) {
  const { event } = props;
  if (event.transformed === SKIPPED_JSON) {
    return (
      <p id="transform-outcome">
        It skipped the event (<span class="mono">{SKIPPED_JSON}</span>): no agent ran and nothing
        was delivered.
      </p>
    );
  }
  if (event.transformed === undefined) {
    return (
      <>
        <p id="transform-outcome">
          Pending: it has not printed the JSON to render from yet, and runs again with the next
          attempt.
        </p>
        {event.lastError !== null && (
          <p>
            Last error: <span class="error-text" id="transform-error">{event.lastError}</span>
          </p>
        )}
      </>
    );
  }
  return (
    <>
      <p id="transform-outcome">It printed the JSON the prompt was rendered from:</p>
      <JsonView text={event.transformed} />
    </>
  );
}

/**
 * Coalescing (docs/subscriptions.md#coalescing): for a folded event, the run that answered it;
 * for the event whose run answered others too, those events in the order they arrived; for an
 * event alone in its window, its key. Nothing for an event whose route does not coalesce.
 */
export function Coalescing(props: { event: StoredEvent; folded: StoredEvent[] }) {
  const { event, folded } = props;
  const key = event.route.coalesce?.key;
  if (event.coalescedInto === undefined && key === undefined) return null;
  return (
    <section class="block" id="coalescing">
      <h2>Coalescing</h2>
      {key !== undefined && (
        <p>
          Key <span class="mono">{key}</span>
        </p>
      )}
      {event.coalescedInto !== undefined
        ? (
          <p id="coalesced-into">
            Folded into the agent run of{" "}
            <EventLink id={event.coalescedInto} />, which answered it with the others of its window.
          </p>
        )
        : folded.length === 0 && windowOpen(event)
        ? <p>Its window is open: the first event of the window runs for all of them.</p>
        : folded.length === 0
        ? <p>Alone in its window: its run answered it only.</p>
        : <FoldedList folded={folded} />}
    </section>
  );
}

/** Whether the event waits in an open coalescing window, its run not begun. */
function windowOpen(event: StoredEvent): boolean {
  return event.status === "queued" && event.attempts === 0 && event.replayedAtMs === null;
}

/** The events a run answered too, in the order they arrived, each linking to its page. */
function FoldedList(props: { folded: StoredEvent[] }) {
  const { folded } = props;
  return (
    <>
      <p>
        Its agent run answered {String(folded.length)} more{" "}
        {folded.length === 1 ? "event" : "events"}, its prompt listing theirs after this one's:
      </p>
      <ol id="folded">
        {folded.map((one) => (
          <li>
            <EventLink id={one.id} /> <span class="mono">{one.eventLabel}</span>{" "}
            {utcTime(one.receivedAtMs)} UTC{" "}
            <span class={`status status-${one.status}`}>{one.status}</span>
          </li>
        ))}
      </ol>
    </>
  );
}

/**
 * How many earlier turns of its conversation the event's latest run was given: those held
 * before its own turn that fit the route's budget, as the worker cut them.
 * @param event the event, for its route's `sessionBudget`
 * @param conversation the lineage's conversation
 * @returns the count, and the turns held before the run
 */
export function turnsGiven(
  event: StoredEvent,
  conversation: NonNullable<Lineage["conversation"]>,
): { given: number; held: number } {
  const budget = event.route.sessionBudget ?? DEFAULT_SESSION_BUDGET_TOKENS;
  const { earlierTurns } = conversation;
  return { given: fitTurns(earlierTurns, budget).length, held: earlierTurns.length };
}

/**
 * The conversation (docs/subscriptions.md#conversations): its key, and the earlier turns the
 * run was given, or will be; nothing for an event of no conversation.
 */
export function Conversation(
  props: { event: StoredEvent; conversation: Lineage["conversation"] },
) {
  const { event, conversation } = props;
  if (event.sessionKey === undefined) return null;
  return (
    <section class="block" id="conversation">
      <h2>Conversation</h2>
      <dl class="facts">
        <dt>Session key</dt>
        <dd class="mono" id="session-key">{event.sessionKey}</dd>
        {conversation && <dt>Earlier turns</dt>}
        {conversation && <dd id="turns-given">{turnsText(event, conversation)}</dd>}
      </dl>
    </section>
  );
}

/** What the earlier turns of the run are, in words. */
function turnsText(event: StoredEvent, conversation: NonNullable<Lineage["conversation"]>) {
  const { given, held } = turnsGiven(event, conversation);
  const budget = event.route.sessionBudget ?? DEFAULT_SESSION_BUDGET_TOKENS;
  const cut = given < held ? ` (of ${held} held before it: the older did not fit)` : "";
  if (event.coalescedInto !== undefined) {
    return `its turn is that of the run it was folded into, ${event.coalescedInto}`;
  }
  if (conversation.ownTurn) {
    return `its run was given ${given} earlier ${plural(given)}${cut}, within ${budget} tokens`;
  }
  if (event.status === "queued" || event.status === "running") {
    return `its run will be given those held then: ${given} ${plural(given)} now${cut}`;
  }
  return "none held for its run: it saved no answer, or its turn was forgotten (session_ttl)";
}

function plural(count: number): string {
  return count === 1 ? "turn" : "turns";
}

/** A link to an event's page, its id as the text. */
function EventLink(props: { id: string }) {
  return <a class="mono" href={`/events/${encodeURIComponent(props.id)}`}>{props.id}</a>;
}
