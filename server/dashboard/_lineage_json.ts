/**
 * An event's lineage as `GET /api/events/<id>` answers it (docs/dashboard.md#apis): the fields
 * of the events listing, then what the event's page shows, with the same names as
 * `agent webhook show --json` where both have a field.
 *
 * @module
 */
import type { Lineage } from "../../lib/state/mod.ts";
import { transformJson } from "../../lib/transforms/mod.ts";
import { eventSummary, withSeries } from "./_format.ts";
import { turnsGiven } from "./_lineage_steps.tsx";

/**
 * The JSON of one event's lineage. Headers are as stored: redacted before they were stored.
 * @param lineage the event's lineage (`StateStore.lineage`)
 * @param holdsKey whether the event holds its delivery id's idempotency key now
 * @returns a value for `c.json`; times in ms since the epoch (`*_ms`), tokens as counts;
 *   `transformed` as text, as the transform printed it
 */
export function lineageJson(lineage: Lineage, holdsKey: boolean) {
  const { event, attempts, parts } = lineage;
  return {
    ...eventSummary(event),
    source: event.source,
    scheme: event.scheme ?? null,
    headers: event.headers ?? null,
    payload: event.payload,
    decisions: {
      dedupe: event.dedupe,
      holds_delivery_id: holdsKey,
      mode: event.mode,
    },
    transform: transformJson(event),
    transformed: event.transformed ?? null,
    coalesced_into: event.coalescedInto ?? null,
    folded: (lineage.folded ?? []).map((one) => ({
      id: one.id,
      event: one.eventLabel,
      received_at_ms: one.receivedAtMs,
      status: one.status,
    })),
    session: sessionJson(lineage),
    prompt: event.prompt,
    skills: event.route.skills,
    route: event.route,
    response: event.response,
    parts_sent: event.partsSent,
    replayed_at_ms: event.replayedAtMs,
    attempts_detail: withSeries(attempts).map((attempt) => ({
      series: attempt.series,
      attempt: attempt.attempt,
      step: attempt.step,
      started_at_ms: attempt.startedAtMs,
      finished_at_ms: attempt.finishedAtMs,
      error: attempt.error,
      run: attempt.run === null ? null : {
        provider: attempt.run.provider,
        model: attempt.run.model,
        prompt_tokens: attempt.run.promptTokens,
        completion_tokens: attempt.run.completionTokens,
        duration_ms: attempt.run.durationMs,
      },
      answer: attempt.answer,
    })),
    parts: parts.map((part) => ({
      part: part.part,
      parts: part.parts,
      target: part.target,
      chat: part.chat,
      message_id: part.messageId,
      url: part.url,
      sent_at_ms: part.sentAtMs,
    })),
  };
}

/**
 * The conversation: its key, whether its latest run's turn is held, and the earlier turns that
 * run was (or, while it has none, will be) given; null for an event of no conversation.
 */
function sessionJson(lineage: Lineage) {
  const { event, conversation } = lineage;
  if (event.sessionKey === undefined) return null;
  const turns = conversation && turnsGiven(event, conversation);
  return {
    key: event.sessionKey,
    own_turn: conversation?.ownTurn ?? null,
    turns_given: turns?.given ?? null,
    turns_held_before: turns?.held ?? null,
  };
}
