/**
 * A state database filled directly through the store in a temporary home, for the tests of
 * `agent webhook events` and `agent webhook replay`, and how they run those commands.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Command } from "../../commands/mod.ts";
import { webhookEvents } from "../../commands/webhook_events.ts";
import type { NewEvent } from "../../lib/state/mod.ts";
import { openStateStore, type SqliteStateStore } from "../../lib/state/sqlite/mod.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

/** When the events were received. */
export const T0 = Date.parse("2026-03-01T10:00:00Z");

/** An `issues.opened` event for `gh`, to the Telegram chat 42, with the fields given. */
export function newEvent(overrides: Partial<NewEvent>): NewEvent {
  return {
    subscription: "gh",
    eventLabel: "issues.opened",
    deliveryId: crypto.randomUUID(),
    dedupe: true,
    source: "github",
    mode: "agent",
    payload: JSON.stringify({ action: "opened", token: "payload-secret" }),
    prompt: "Triage: payload-secret",
    route: { deliver: "telegram", chatId: "42", skills: [] },
    receivedAtMs: T0,
    ...overrides,
  };
}

/**
 * A home (platform enabled) whose state database holds, oldest first:
 * `gh` delivered after 1.5 s, `gh` failed twice with a multi-line error, `ci` queued,
 * `ci` running. Ids are fixed so prefixes are predictable.
 */
export async function homeWithEvents() {
  const h = await tempHome({ config: enabledConfig() });
  const ids = ["evt_aaa001", "evt_aaa002", "evt_bbb001", "evt_ccc001"];
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
    newId: () => ids.shift()!,
    now: () => T0 + 500,
  });
  try {
    await fill(store);
  } finally {
    await store.close();
  }
  return h;
}

/** Accepts the four events of {@link homeWithEvents} and takes each to its status. */
async function fill(store: SqliteStateStore): Promise<void> {
  const accept = async (event: NewEvent) => {
    const result = await store.accept(event);
    assert.equal(result.status, "accepted");
    return (result as { eventId: string }).eventId;
  };
  const delivered = await accept(newEvent({ deliveryId: "d-delivered" }));
  const failed = await accept(newEvent({ deliveryId: "d-failed", receivedAtMs: T0 + 1 }));
  await store.claimDue(T0 + 1, 2);
  await store.saveResponse(delivered, "the answer");
  await store.markDelivered(delivered, T0 + 1500);
  await store.markRetry(failed, {
    error: "LLM endpoint answered 500",
    step: "agent",
    nextAttemptAtMs: T0 + 2000,
    nowMs: T0 + 1000,
  });
  await store.claimDue(T0 + 2000, 1);
  await store.markFailed(failed, {
    error: "Telegram failed\n   (HTTP 500):\tdown",
    step: "delivery",
    nowMs: T0 + 3000,
  });
  await accept(newEvent({ subscription: "ci", eventLabel: "push", deliveryId: "d-queued" }));
  await accept(newEvent({ subscription: "ci", eventLabel: "push", deliveryId: "d-running" }));
  // Both are claimed; the older one is put back, so one event of each status remains.
  const claimed = (await store.claimDue(T0 + 10_000, 2)).map((event) => event.id);
  assert.deepEqual(claimed, ["evt_bbb001", "evt_ccc001"]);
  await store.markRetry("evt_bbb001", {
    error: "later",
    step: "agent",
    nextAttemptAtMs: T0 + 60_000,
    nowMs: T0 + 10_000,
  });
}

/**
 * Runs `command` with `args` in `home`, at {@link T0} + 100 s.
 * @returns the exit code and what it printed
 */
export async function run(
  command: Command,
  home: string,
  args: string[],
): Promise<{ code: number; out: string; err: string }> {
  const ctx = fakeContext({ AGENT_HOME: home }, { now: () => T0 + 100_000 });
  const code = await command.run(args, ctx);
  return { code, out: ctx.output(), err: ctx.err.join("\n") };
}

/** Runs `webhook events --json` with `args` and parses its rows. */
export async function json(home: string, args: string[] = []): Promise<Record<string, unknown>[]> {
  const { code, out } = await run(webhookEvents, home, ["--json", ...args]);
  assert.equal(code, 0);
  return JSON.parse(out);
}

/** Asserts that `promise` rejects with an instance of `type` whose message matches `message`. */
export async function rejectsWith(
  promise: Promise<unknown>,
  type: new (...args: never[]) => Error,
  message: RegExp,
): Promise<void> {
  await assert.rejects(promise, (error: Error) => {
    assert.ok(error instanceof type, `expected ${type.name}, got ${error}`);
    assert.match(error.message, message);
    return true;
  });
}
