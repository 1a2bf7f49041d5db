/**
 * What `agent webhook show` prints of coalescing (docs/subscriptions.md#coalescing): for an
 * event folded into another's agent run, that run's event; for an event whose run answered
 * others too, those events.
 *
 * @module
 */
import { oneTerminalLine } from "../lib/log.ts";
import type { StoredEvent } from "../lib/state/mod.ts";
import { utcTime } from "./_event_listing.ts";

/**
 * The "Coalesced" section of an event's lineage, as lines; none for an event whose route does
 * not coalesce.
 * @param event the event shown
 * @param folded the events folded into its run (`StateStore.foldedInto`)
 * @returns the section's title and lines, or none
 */
export function coalesceSection(event: StoredEvent, folded: StoredEvent[]): string[] {
  if (event.coalescedInto !== undefined) {
    return [
      "Coalesced\n  answered by the agent run of " + event.coalescedInto + ", into which it " +
      `was folded (agent webhook show ${event.coalescedInto})`,
    ];
  }
  const key = event.route.coalesce?.key;
  if (key === undefined) return [];
  if (folded.length === 0) {
    const open = event.status === "queued" && event.attempts === 0 && event.replayedAtMs === null;
    const state = open
      ? "its window is open: the first event of the window runs for all of them"
      : "alone in its window";
    return [`Coalesced\n  key ${oneTerminalLine(JSON.stringify(key))}: ${state}`];
  }
  const others = folded.map((one) =>
    `  ${one.id}  ${oneTerminalLine(one.eventLabel)}  ${
      utcTime(one.receivedAtMs)
    } UTC  ${one.status}`
  );
  return [
    [
      "Coalesced",
      `  key ${oneTerminalLine(JSON.stringify(key))}: this event's run answered ` +
      `${folded.length} more, its prompt listing theirs after this one's:`,
      ...others,
    ].join("\n"),
  ];
}

/**
 * The events folded into an event's run, as `show --json` prints them.
 * @param folded the events (`StateStore.foldedInto`)
 * @returns id, event label, time received and status of each
 */
export function foldedJson(folded: StoredEvent[]) {
  return folded.map((one) => ({
    id: one.id,
    event: one.eventLabel,
    received_at: new Date(one.receivedAtMs).toISOString(),
    status: one.status,
  }));
}
