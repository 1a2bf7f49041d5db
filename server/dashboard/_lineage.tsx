/**
 * The sections of an event's page that tell its lineage, as `StateStore.lineage` reads it
 * (docs/dashboard.md#an-event): the request as received (headers, redacted before they were
 * stored, and the scheme that verified it), the decisions the gateway stored, each attempt with
 * its agent run and answer, and each message part a platform took.
 *
 * @module
 */
import type { AgentRun, PartReceipt, StoredEvent } from "../../lib/state/mod.ts";
import { duration, type NumberedAttempt, utcTime } from "./_format.ts";

/** The request as it arrived: when, the scheme that verified it, and its headers as stored. */
export function Received(props: { event: StoredEvent }) {
  const { event } = props;
  return (
    <section class="block" id="received">
      <h2>Received</h2>
      <dl class="facts">
        <dt>At</dt>
        <dd>{utcTime(event.receivedAtMs)} UTC</dd>
        <dt>Verified by</dt>
        <dd id="scheme">
          {event.scheme === undefined
            ? <span class="muted">not recorded (received before schemes were kept)</span>
            : <span class="mono">{event.scheme}</span>}
        </dd>
      </dl>
      {event.headers === undefined
        ? <p class="muted">Headers were not kept for events received before this version.</p>
        : (
          <details open>
            <summary>Headers ({String(Object.keys(event.headers).length)})</summary>
            <table id="headers">
              <tbody>
                {Object.entries(event.headers).map(([name, value]) => (
                  <tr>
                    <th class="mono">{name}</th>
                    <td class="mono">{value}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </details>
        )}
    </section>
  );
}

/**
 * What the gateway decided, as far as it is stored: that the filter let the event through, how
 * its delivery id dedupes, the mode and destination, and the format.
 * @param props `holdsKey`: whether the event holds its delivery id's idempotency key now
 */
export function Decisions(props: { event: StoredEvent; holdsKey: boolean }) {
  const { event, holdsKey } = props;
  const { route } = event;
  const dedupe = !event.dedupe
    ? "The request had no delivery id: its retries are not recognised as duplicates."
    : holdsKey
    ? "A request with the same delivery id is answered as a duplicate, not run again."
    : "Its delivery id no longer dedupes (expired, or taken by a later event).";
  const dispatch = event.mode === "agent"
    ? "Agent mode: the agent answers the prompt, and its answer is delivered."
    : "Direct delivery: the prompt itself is delivered while the sender waits.";
  return (
    <section class="block" id="decisions">
      <h2>Decisions</h2>
      <ul>
        <li>Accepted: the subscription's filter let {event.eventLabel} through.</li>
        <li>{dedupe}</li>
        <li>{dispatch}</li>
      </ul>
      <dl class="facts">
        <dt>Target</dt>
        <dd>{route.deliver}</dd>
        <dt>Chat</dt>
        <dd class="mono">{route.chatId ?? "-"}</dd>
        <dt>Format</dt>
        <dd>{route.format ?? "as the mode decides"}</dd>
      </dl>
    </section>
  );
}

/** Each attempt (series, try, start, end, step, error), its agent run and its answer below it. */
export function Attempts(props: { attempts: NumberedAttempt[] }) {
  return (
    <section class="block" id="attempts">
      <h2>Attempts</h2>
      {props.attempts.length === 0 ? <p class="muted">None yet.</p> : (
        <table>
          <thead>
            <tr>
              <th>Series</th>
              <th>Try</th>
              <th>Started (UTC)</th>
              <th>Ended (UTC)</th>
              <th>Step</th>
              <th>Error</th>
            </tr>
          </thead>
          {props.attempts.map((attempt) => (
            <AttemptRows key={`${attempt.series}.${attempt.attempt}`} attempt={attempt} />
          ))}
        </table>
      )}
    </section>
  );
}

/** One attempt's row, and a row with its agent run and answer when one answered. */
function AttemptRows(props: { attempt: NumberedAttempt }) {
  const { attempt } = props;
  return (
    <tbody class="attempt">
      <tr>
        <td>{String(attempt.series)}</td>
        <td>{String(attempt.attempt)}</td>
        <td class="mono">{utcTime(attempt.startedAtMs)}</td>
        <td class="mono">
          {attempt.finishedAtMs === null ? "-" : utcTime(attempt.finishedAtMs)}
        </td>
        <td>{attempt.step}</td>
        <td class="error-text">{attempt.error ?? ""}</td>
      </tr>
      {attempt.run !== null && (
        <tr class="run">
          <td></td>
          <td colspan={5}>
            <RunFacts run={attempt.run} />
            {attempt.answer !== null && (
              <details>
                <summary>This run's answer</summary>
                <pre>{attempt.answer}</pre>
              </details>
            )}
          </td>
        </tr>
      )}
    </tbody>
  );
}

/** An agent run: provider, model, prompt and completion tokens, duration. */
function RunFacts(props: { run: AgentRun }) {
  const { run } = props;
  const tokens = (count: number | null) => count === null ? "not reported" : String(count);
  return (
    <dl class="facts run-facts">
      <dt>Provider</dt>
      <dd>{run.provider}</dd>
      <dt>Model</dt>
      <dd class="mono model">{run.model ?? "not named"}</dd>
      <dt>Prompt tokens</dt>
      <dd class="prompt-tokens">{tokens(run.promptTokens)}</dd>
      <dt>Completion tokens</dt>
      <dd class="completion-tokens">{tokens(run.completionTokens)}</dd>
      <dt>Took</dt>
      <dd>{duration(run.durationMs)}</dd>
    </dl>
  );
}

/** Each message part a platform took: target, chat, its message id or link, and when. */
export function Delivered(props: { parts: PartReceipt[] }) {
  return (
    <section class="block" id="delivery">
      <h2>Delivered</h2>
      {props.parts.length === 0 ? <p class="muted">No part delivered yet.</p> : (
        <table>
          <thead>
            <tr>
              <th>Part</th>
              <th>Target</th>
              <th>Chat</th>
              <th>Message</th>
              <th>Sent (UTC)</th>
            </tr>
          </thead>
          <tbody>
            {props.parts.map((part) => (
              <tr>
                <td>{`${part.part}/${part.parts}`}</td>
                <td>{part.target}</td>
                <td class="mono">{part.chat}</td>
                <td class="mono message-id">
                  <MessageRef part={part} />
                </td>
                <td class="mono">{utcTime(part.sentAtMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The platform's message id, and a link when it answered with a web address. */
function MessageRef(props: { part: PartReceipt }) {
  const { messageId, url } = props.part;
  const link = url !== null && /^https?:\/\//i.test(url) ? url : null;
  if (link !== null) {
    return (
      <a href={link} rel="noreferrer noopener" target="_blank">
        {messageId ?? link}
      </a>
    );
  }
  return <>{messageId ?? url ?? "-"}</>;
}
