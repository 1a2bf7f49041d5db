/**
 * `agent webhook events --follow` over a real state database, its waits injected: each wait
 * lets the test change the database as a gateway would, or stop the following.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FOLLOW_POLL_MS, followEvents } from "../../commands/_follow.ts";
import { webhookEvents } from "../../commands/webhook_events.ts";
import { UsageError } from "../../lib/errors.ts";
import type { EventStatus } from "../../lib/state/mod.ts";
import { openStateStore, type SqliteStateStore } from "../../lib/state/sqlite/mod.ts";
import { homeWithEvents, newEvent, rejectsWith, run, T0 } from "./_event_history.ts";

/**
 * Follows the events of `store` (which already holds those of {@link homeWithEvents}), running
 * one of `steps` at each wait, then stopping.
 * @returns the lines printed, and the waits asked for (ms)
 */
async function follow(
  store: SqliteStateStore,
  steps: (() => Promise<void> | void)[],
  options: { subscription?: string; status?: EventStatus; limit?: number } = {},
): Promise<{ lines: string[]; waits: number[] }> {
  const lines: string[] = [];
  const waits: number[] = [];
  const stop = new AbortController();
  await followEvents(store, {
    limit: 20,
    ...options,
    print: (line) => lines.push(line),
    signal: stop.signal,
    sleep: async (ms) => {
      waits.push(ms);
      const step = steps.shift();
      if (step === undefined) stop.abort();
      else await step();
    },
  });
  return { lines, waits };
}

/** The store of a home with the events of {@link homeWithEvents}, and new events' ids. */
async function storeWithEvents() {
  const h = await homeWithEvents();
  const ids = ["evt_ddd001", "evt_ddd002"];
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
    newId: () => ids.shift()!,
  });
  return {
    store,
    async [Symbol.asyncDispose]() {
      await store.close();
      await h[Symbol.asyncDispose]();
    },
  };
}

Deno.test("follow prints the latest events, then a new event and each change until it is delivered", async () => {
  await using h = await storeWithEvents();
  const { store } = h;
  const { lines, waits } = await follow(store, [
    async () =>
      void await store.accept(newEvent({ deliveryId: "d-new", receivedAtMs: T0 + 20_000 })),
    async () => void await store.claimDue(T0 + 20_100, 1),
    () => store.markDelivered("evt_ddd001", T0 + 22_200),
    () => {}, // nothing changed: nothing printed
  ]);
  assert.deepEqual(waits, [
    FOLLOW_POLL_MS,
    FOLLOW_POLL_MS,
    FOLLOW_POLL_MS,
    FOLLOW_POLL_MS,
    FOLLOW_POLL_MS,
  ]);
  assert.deepEqual(lines.map((line) => line.split("  ").slice(1)), [
    ["evt_aaa001", "gh", "issues.opened", "delivered after 1 try, 1.5 s"],
    [
      "evt_aaa002",
      "gh",
      "issues.opened",
      "failed after 2 tries, 3.0 s: Telegram failed (HTTP 500): down",
    ],
    ["evt_bbb001", "ci", "push", "queued for a retry: later"],
    ["evt_ccc001", "ci", "push", "running (attempt 1)"],
    ["evt_ddd001", "gh", "issues.opened", "queued"],
    ["evt_ddd001", "gh", "issues.opened", "running (attempt 1)"],
    ["evt_ddd001", "gh", "issues.opened", "delivered after 1 try, 2.2 s"],
  ]);
  assert.match(lines.at(-1)!, /^2026-03-01 10:00:22 {2}evt_ddd001/, "when it changed, in UTC");
});

Deno.test("follow sees the retry and the failure of an event it listed, and filters by status", async () => {
  await using h = await storeWithEvents();
  const { store } = h;
  const retry = { error: "LLM endpoint answered 503", step: "agent" as const };
  const { lines } = await follow(store, [
    async () => void await store.claimDue(T0 + 60_000, 1), // evt_bbb001 runs again
    () => store.markFailed("evt_bbb001", { ...retry, nowMs: T0 + 61_000 }),
    async () =>
      void await store.accept(newEvent({ subscription: "ci", receivedAtMs: T0 + 70_000 })),
  ], { status: "failed", subscription: "ci", limit: 5 });
  assert.deepEqual(lines.map((line) => line.split("  ")[1]), ["evt_bbb001"]);
  assert.match(lines[0], /failed after 2 tries, .*: LLM endpoint answered 503$/);
});

Deno.test("follow stops at once when stopped, and refuses --json", async () => {
  await using h = await storeWithEvents();
  const stop = new AbortController();
  stop.abort();
  const lines: string[] = [];
  await followEvents(h.store, {
    limit: 1,
    print: (line) => lines.push(line),
    signal: stop.signal,
    sleep: () => Promise.reject(new Error("no wait once stopped")),
  });
  assert.deepEqual(lines.map((line) => line.split("  ")[1]), ["evt_ccc001"]);
  await rejectsWith(
    run(webhookEvents, "/nonexistent", ["--follow", "--json"]),
    UsageError,
    /--follow/,
  );
});
