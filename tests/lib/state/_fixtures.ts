/**
 * Shared fixtures for the state store tests: a store in a fresh temporary folder, and events.
 *
 * @module
 */
import { join } from "node:path";
import { type NewEvent, openStateStore, type StateStoreOptions } from "../../../lib/state/mod.ts";

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

/** A temporary folder holding `state/gateway.db`, removed by `cleanup()`. */
export async function tempHome(): Promise<
  { dbPath: string; dir: string; cleanup(): Promise<void> }
> {
  const dir = await Deno.makeTempDir({ prefix: "agent-state-" });
  return {
    dir,
    dbPath: join(dir, "state", "gateway.db"),
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
}

/**
 * Opens a store in a temporary folder, runs `body`, then closes the store and removes the folder.
 */
export async function withStore(
  options: StateStoreOptions,
  body: (store: ReturnType<typeof openStateStore>, dbPath: string) => Promise<void> | void,
): Promise<void> {
  const home = await tempHome();
  const store = openStateStore(home.dbPath, options);
  try {
    await body(store, home.dbPath);
  } finally {
    await store.close();
    await home.cleanup();
  }
}
