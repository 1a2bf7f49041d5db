/**
 * Shared fixtures for the state store tests, whatever the backend: events.
 *
 * @module
 */
import type { NewEvent } from "../../../lib/state/mod.ts";

/** A GitHub `issues` event for subscription `gh`, delivered to the log. */
export function newEvent(overrides: Partial<NewEvent> = {}): NewEvent {
  return {
    subscription: "gh",
    eventLabel: "issues",
    deliveryId: crypto.randomUUID(),
    dedupe: true,
    source: "github",
    mode: "agent",
    payload: JSON.stringify({ action: "opened", issue: { number: 1, title: "Bug" } }),
    prompt: "Triage issue #1: Bug",
    route: { deliver: "log", skills: ["triage"] },
    receivedAtMs: 1_700_000_000_000,
    ...overrides,
  };
}
