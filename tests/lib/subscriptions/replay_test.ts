/**
 * The one replay path (`lib/subscriptions/replay.ts`) that `agent webhook replay` and the
 * dashboard's Replay buttons share, over a real SQLite store and a real subscription file: a
 * replay's changes to the prompt and model, and what it keeps when the file cannot route it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type Config, loadConfig } from "../../../lib/config/mod.ts";
import { ConfigError } from "../../../lib/errors.ts";
import type { NewEvent } from "../../../lib/state/mod.ts";
import { openStateStore, type SqliteStateStore } from "../../../lib/state/sqlite/mod.ts";
import { readReplayRouting, replayEvent } from "../../../lib/subscriptions/replay.ts";
import { transformPending } from "../../../lib/transforms/mod.ts";
import { enabledConfig, tempHome } from "../../_helpers.ts";

const T0 = 1_800_000_000_000;

/** An issue whose id is past what a double holds exactly, as its JSON text writes it. */
const PAYLOAD = '{"action":"opened","issue":{"id":12345678901234567891,"title":"Crash"}}';

/** A stored `issues.opened` event of `gh`, answered to Telegram chat 42. */
function storedEvent(): NewEvent {
  return {
    subscription: "gh",
    eventLabel: "issues.opened",
    deliveryId: "d-1",
    dedupe: true,
    source: "github",
    mode: "agent",
    payload: PAYLOAD,
    prompt: "Old prompt",
    route: { deliver: "telegram", chatId: "42", skills: [] },
    receivedAtMs: T0,
  };
}

/** A home with `subscriptions` as its file (text as written), a store and one event in it. */
async function world(subscriptions: string) {
  const h = await tempHome({ config: enabledConfig(0) });
  const config: Config = await loadConfig({ AGENT_HOME: h.home });
  await Deno.writeTextFile(config.paths.subscriptions, subscriptions);
  const store: SqliteStateStore = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
    now: () => T0,
  });
  const { eventId } = await store.accept(storedEvent());
  return {
    config,
    store,
    eventId: eventId!,
    async [Symbol.asyncDispose]() {
      await store.close();
      await h[Symbol.asyncDispose]();
    },
  };
}

const GH = { gh: { prompt: "Triage {issue.title}", deliver: "log", skills: ["triage"] } };

Deno.test("replayEvent() renders a changed template with the payload's numbers as written, and asks for the changed model", async () => {
  await using w = await world(JSON.stringify(GH));
  const { event, keptBecause } = await replayEvent(w.store, w.eventId, {
    nowMs: T0 + 1000,
    routing: await readReplayRouting(w.config),
    changes: { prompt: { template: "Issue {issue.id}: {issue.title}" }, model: "gpt-4o" },
  });
  assert.equal(keptBecause, undefined);
  assert.equal(event.prompt, "Issue 12345678901234567891: Crash");
  assert.deepEqual(event.route, { deliver: "log", skills: ["triage"], agent: { model: "gpt-4o" } });
  assert.equal(event.replayedAtMs, T0 + 1000);
  assert.equal(
    JSON.parse(await Deno.readTextFile(w.config.paths.subscriptions)).gh.model,
    undefined,
  );
});

Deno.test("replayEvent() sends a prompt given as text as written, braces and backslashes too", async () => {
  await using w = await world(JSON.stringify(GH));
  const { event } = await replayEvent(w.store, w.eventId, {
    nowMs: T0 + 1000,
    routing: await readReplayRouting(w.config),
    changes: { prompt: { text: "Literal {issue.title}\\n" } },
  });
  assert.equal(event.prompt, "Literal {issue.title}\\n");
  assert.equal(event.route.agent, undefined, "no model asked for: the configured one runs");
});

Deno.test("replayEvent() without changes keeps what the event had while the file is corrupt, and says why", async () => {
  await using w = await world("{ not json");
  const routing = await readReplayRouting(w.config);
  assert.ok(routing.readError instanceof ConfigError);
  const { event, keptBecause } = await replayEvent(w.store, w.eventId, {
    nowMs: T0 + 1000,
    routing,
  });
  assert.equal(keptBecause, "the subscription file could not be read");
  assert.equal(event.prompt, "Old prompt");
  assert.deepEqual(event.route, { deliver: "telegram", chatId: "42", skills: [] });
});

Deno.test("replayEvent() of an event whose subscription is gone applies the changes to the target it had", async () => {
  await using w = await world("{}");
  const { event, keptBecause } = await replayEvent(w.store, w.eventId, {
    nowMs: T0 + 1000,
    routing: await readReplayRouting(w.config),
    changes: { prompt: { template: "" }, model: "gpt-4o" },
  });
  assert.equal(keptBecause, "subscription gh no longer exists");
  assert.match(event.prompt, /^Webhook event 'issues\.opened' on subscription 'gh':/, "default");
  assert.match(event.prompt, /"id": 12345678901234567891/, "its number as written");
  assert.deepEqual(event.route, {
    deliver: "telegram",
    chatId: "42",
    skills: [],
    agent: { model: "gpt-4o" },
  });
});

/** `gh` with a transform that picks the issue, and a template for what it prints. */
const GH_TRANSFORMED = {
  gh: { transform: "cat", prompt: "Triage {title}", deliver: "log", skills: [] },
};

Deno.test("replayEvent() sends a prompt given as text as written on a subscription with a transform", async () => {
  await using w = await world(JSON.stringify(GH_TRANSFORMED));
  const { event } = await replayEvent(w.store, w.eventId, {
    nowMs: T0 + 1000,
    routing: await readReplayRouting(w.config),
    changes: { prompt: { text: "Just say hi" } },
  });
  assert.equal(event.prompt, "Just say hi");
  // The worker runs a pending transform first and renders the prompt over the one typed.
  assert.equal(transformPending(event), false, "no transform left to run over the typed prompt");
});

Deno.test("replayEvent() renders a changed template against what the transform prints", async () => {
  await using w = await world(JSON.stringify(GH_TRANSFORMED));
  const { event } = await replayEvent(w.store, w.eventId, {
    nowMs: T0 + 1000,
    routing: await readReplayRouting(w.config),
    changes: { prompt: { template: "Look at {title}" } },
  });
  assert.ok(transformPending(event), "the transform runs again");
  assert.equal(event.route.transform?.prompt, "Look at {title}");
});

Deno.test("replayEvent() of a transformed event whose subscription is gone keeps the transform for a template only", async () => {
  await using w = await world(JSON.stringify(GH_TRANSFORMED));
  const routing = await readReplayRouting(w.config);
  await replayEvent(w.store, w.eventId, { nowMs: T0 + 1000, routing }); // stored with its transform
  await Deno.writeTextFile(w.config.paths.subscriptions, "{}");
  const gone = await readReplayRouting(w.config);
  const template = await replayEvent(w.store, w.eventId, {
    nowMs: T0 + 2000,
    routing: gone,
    changes: { prompt: { template: "Look at {title}" } },
  });
  assert.equal(template.keptBecause, "subscription gh no longer exists");
  assert.ok(transformPending(template.event), "the transform runs again");
  assert.equal(template.event.route.transform?.prompt, "Look at {title}");
  const text = await replayEvent(w.store, w.eventId, {
    nowMs: T0 + 3000,
    routing: gone,
    changes: { prompt: { text: "Just say hi" } },
  });
  assert.equal(text.event.prompt, "Just say hi");
  assert.equal(transformPending(text.event), false);
});
