/**
 * The prompt of a coalesced run (docs/subscriptions.md#coalescing): the store folded the events
 * of a burst into the run of the first one; the agent gets each event's rendered prompt, in the
 * order they arrived, numbered, with its event label and time.
 *
 * @module
 */
import type { StateStore, StoredEvent } from "../state/mod.ts";

/**
 * The prompt an event's agent run is given: its own, or, when events were folded into its run,
 * all of theirs in one text:
 *
 * ```text
 * 3 events arrived together (coalescing key "octo/repo#12"); answer them as one.
 *
 * ## Event 1 of 3: issues.opened at 2026-11-28T01:15:00Z
 *
 * <its rendered prompt>
 *
 * ## Event 2 of 3: issue_comment.created at 2026-11-28T01:15:04Z
 * ...
 * ```
 * @param store the state store, which knows what was folded into the run
 * @param event the claimed event whose run it is
 * @returns the prompt
 * @throws StoreUnavailableError when the store cannot be read
 */
export async function runPrompt(
  store: Pick<StateStore, "foldedInto">,
  event: StoredEvent,
): Promise<string> {
  if (event.route.coalesce === undefined) return event.prompt;
  const folded = await store.foldedInto(event.id);
  if (folded.length === 0) return event.prompt;
  // The run's own event is the first of its window as the claim picks it; sorted all the same,
  // since the order promised is the arrival order.
  const events = [event, ...folded].sort((a, b) =>
    a.receivedAtMs - b.receivedAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
  const key = JSON.stringify(event.route.coalesce.key);
  const sections = events.map((one, i) =>
    `## Event ${i + 1} of ${events.length}: ${one.eventLabel} at ${isoSeconds(one.receivedAtMs)}` +
    `\n\n${one.prompt}`
  );
  return [
    `${events.length} events arrived together (coalescing key ${key}); answer them as one.`,
    ...sections,
  ].join("\n\n");
}

/** An instant as ISO 8601 UTC to the second: `2026-11-28T01:15:00Z`. */
function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}
