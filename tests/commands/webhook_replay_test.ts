/**
 * In-process tests of `agent webhook replay`, over a state database filled directly through
 * the store in a temporary home.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { webhookReplay } from "../../commands/webhook_replay.ts";
import { ConflictError, NotFoundError, UsageError } from "../../lib/errors.ts";
import { openStateStore } from "../../lib/state/sqlite/mod.ts";
import { enabledConfig, tempHome } from "../_helpers.ts";
import { homeWithEvents, json, newEvent, rejectsWith, run, T0 } from "./_event_history.ts";

Deno.test("webhook replay requeues a failed event as a new series and keeps its history", async () => {
  await using h = await homeWithEvents();
  const { code, out } = await run(webhookReplay, h.home, ["evt_aaa002"]);
  assert.equal(code, 0);
  assert.match(
    out,
    /^Queued evt_aaa002 \(gh, issues\.opened\) again, with the prompt and target it had \(to telegram chat 42\): subscription gh no longer exists\./,
  );
  assert.match(out, /No gateway is running with this home: the next agent gateway run runs it/);
  assert.match(out, /agent webhook events/);
  const [row] = await json(h.home, ["gh", "--status", "queued"]);
  assert.equal(row.id, "evt_aaa002");
  assert.equal(row.attempts, 0);
  assert.equal(row.last_error, null);
  assert.equal(row.next_attempt_at, "2026-03-01T10:01:40.000Z", "due at the command's now");
  assert.equal((row.attempts_detail as unknown[]).length, 2, "earlier attempts are kept");

  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
  });
  try {
    const event = (await store.getEvent("evt_aaa002"))!;
    assert.equal(event.response, null, "the agent runs again");
    assert.equal(event.partsSent, 0);
  } finally {
    await store.close();
  }
});

Deno.test("webhook replay keeps the event's target when its subscription was edited into one the gateway cannot serve", async () => {
  await using h = await homeWithEvents();
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({ gh: { secret: "s", prompt: "Now: {action}", deliver: "telegramm" } }),
  );
  const { code, out } = await run(webhookReplay, h.home, ["evt_aaa002"]);
  assert.equal(code, 0);
  assert.match(
    out,
    /^Queued evt_aaa002 \(gh, issues\.opened\) again, with the prompt and target it had \(to telegram chat 42\): subscription "gh" in .*: deliver: unknown target "telegramm"/,
  );
});

Deno.test("webhook replay renders and routes the event as its subscription does now", async () => {
  await using h = await homeWithEvents();
  // The subscription was fixed after the event failed: new prompt, target, chat and skills.
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({
      gh: {
        secret: "s",
        prompt: "Now: {action} ({__delivery_id__})",
        deliver: "discord",
        deliver_extra: { chat_id: "{action}-room" },
        skills: ["triage"],
      },
      ci: { secret: "s", prompt: "Ship {action}", deliver: "slack", deliver_only: true },
    }),
    { mode: 0o600 },
  );
  const { code, out } = await run(webhookReplay, h.home, ["evt_aaa002"]);
  assert.equal(code, 0);
  assert.match(
    out,
    /^Queued evt_aaa002 \(gh, issues\.opened\) again, as gh renders and routes it now \(to discord chat opened-room\)\./,
  );
  const direct = await run(webhookReplay, h.home, ["evt_bbb001"]);
  assert.match(direct.out, /\(to slack, directly\)/);

  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
  });
  try {
    const replayed = (await store.getEvent("evt_aaa002"))!;
    assert.equal(replayed.prompt, "Now: opened (d-failed)");
    assert.deepEqual(replayed.route, {
      deliver: "discord",
      chatId: "opened-room",
      skills: ["triage"],
    });
    assert.equal(replayed.mode, "agent");
    assert.equal(replayed.payload, JSON.stringify({ action: "opened", token: "payload-secret" }));
    const nowDirect = (await store.getEvent("evt_bbb001"))!;
    assert.equal(nowDirect.mode, "direct", "the subscription now delivers directly");
    assert.equal(nowDirect.prompt, "Ship opened");
    assert.deepEqual(nowDirect.route, { deliver: "slack", skills: [] });
  } finally {
    await store.close();
  }
});

Deno.test("webhook replay still works while the subscription file is corrupt, keeping the event's own route", async () => {
  await using h = await homeWithEvents();
  await Deno.writeTextFile(join(h.home, "webhook_subscriptions.json"), "{ not json", {
    mode: 0o600,
  });
  const { code, out, err } = await run(webhookReplay, h.home, ["evt_aaa002"]);
  assert.equal(code, 0);
  assert.match(err, /webhook_subscriptions\.json/);
  assert.match(
    out,
    /again, with the prompt and target it had \(to telegram chat 42\): the subscription file could not be read\./,
  );
  const [row] = await json(h.home, ["gh", "--status", "queued"]);
  assert.equal(row.id, "evt_aaa002");
  assert.equal(row.target, "telegram");
});

Deno.test("webhook replay takes a unique prefix and a delivered event too", async () => {
  await using h = await homeWithEvents();
  const { code, out } = await run(webhookReplay, h.home, ["evt_aaa001"]);
  assert.equal(code, 0);
  assert.match(out, /Queued evt_aaa001/);
  const byPrefix = await run(webhookReplay, h.home, ["evt_b"]);
  assert.equal(byPrefix.code, 0);
  assert.match(byPrefix.out, /^Queued evt_bbb001 \(ci, push\) again/);
  const statuses = (await json(h.home)).map((row) => [row.id, row.status]);
  assert.deepEqual(statuses, [
    ["evt_ccc001", "running"],
    ["evt_bbb001", "queued"],
    ["evt_aaa002", "failed"],
    ["evt_aaa001", "queued"],
  ]);
});

Deno.test("webhook replay refuses an unknown id, an ambiguous prefix and a running event", async () => {
  await using h = await homeWithEvents();
  await rejectsWith(
    run(webhookReplay, h.home, ["evt_zzz"]),
    NotFoundError,
    /No event "evt_zzz"/,
  );
  await rejectsWith(
    run(webhookReplay, h.home, ["evt_aaa"]),
    NotFoundError,
    /"evt_aaa" is ambiguous: evt_aaa00[12], evt_aaa00[12]/,
  );
  await rejectsWith(
    run(webhookReplay, h.home, ["evt_ccc001"]),
    ConflictError,
    /Cannot replay evt_ccc001: it is running, or was when the gateway last stopped/,
  );
  await rejectsWith(run(webhookReplay, h.home, []), UsageError, /Expected one <event-id>/);
  await rejectsWith(run(webhookReplay, h.home, ["a", "b"]), UsageError, /Expected one/);
  const unchanged = (await json(h.home)).map((row) => row.status);
  assert.deepEqual(unchanged, ["running", "queued", "failed", "delivered"]);
});

Deno.test("webhook replay refuses a failed direct message the sender's retry has delivered since", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const ids = ["evt_ddd001", "evt_ddd002"];
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
    newId: () => ids.shift()!,
    now: () => T0 + 500,
  });
  try {
    const message = newEvent({ mode: "direct", deliveryId: "d-retried", prompt: "three parts" });
    await store.recordDirect(message, { delivered: false, error: "502 on part 2", partsSent: 1 });
    await store.recordDirect({ ...message, receivedAtMs: T0 + 60_000 }, {
      delivered: true,
      partsSent: 3,
    });
  } finally {
    await store.close();
  }
  await rejectsWith(
    run(webhookReplay, h.home, ["evt_ddd001"]),
    ConflictError,
    /^Not replayed: the sender retried delivery d-retried after evt_ddd001 failed, and that retry is event evt_ddd002 \(delivered\); .*agent webhook replay evt_ddd002$/,
  );
  const [failed] = await json(h.home, ["--status", "failed"]);
  assert.equal(failed.id, "evt_ddd001", "left as it was");
  const again = await run(webhookReplay, h.home, ["evt_ddd002"]);
  assert.equal(again.code, 0, "the delivered copy can be sent again on purpose");
});
