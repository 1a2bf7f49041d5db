/**
 * An event's lineage as `GET /api/events/<id>` answers it (docs/dashboard.md#apis): the fields
 * of the events listing, then what the event's page shows, with the same names as
 * `agent webhook show --json` where both have a field.
 *
 * @module
 */
import type { Lineage } from "../../lib/state/mod.ts";
import { eventSummary, withSeries } from "./_format.ts";

/**
 * The JSON of one event's lineage. Headers are as stored: redacted before they were stored.
 * @param lineage the event's lineage (`StateStore.lineage`)
 * @param holdsKey whether the event holds its delivery id's idempotency key now
 * @returns a value for `c.json`; times in ms since the epoch (`*_ms`), tokens as counts
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
