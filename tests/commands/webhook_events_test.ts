/**
 * In-process tests of `agent webhook events`, over a state database filled directly through
 * the store in a temporary home.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { webhookEvents } from "../../commands/webhook_events.ts";
import { webhookReplay } from "../../commands/webhook_replay.ts";
import { UsageError } from "../../lib/errors.ts";
import { openStateStore } from "../../lib/state/sqlite/mod.ts";
import { enabledConfig, tempHome } from "../_helpers.ts";
import { homeWithEvents, json, newEvent, rejectsWith, run, T0 } from "./_event_history.ts";

Deno.test("webhook events prints a table, newest first, with tries, duration and last error", async () => {
  await using h = await homeWithEvents();
  const { code, out } = await run(webhookEvents, h.home, []);
  assert.equal(code, 0);
  const lines = out.split("\n");
  assert.match(
    lines[0],
    /^ID\s+SUBSCRIPTION\s+EVENT\s+DELIVERY ID\s+STATUS\s+TRIES\s+RECEIVED \(UTC\)\s+TOOK\s+LAST ERROR$/,
  );
  assert.deepEqual(lines.slice(1).map((line) => line.split(/\s{2,}/).slice(0, 6)), [
    ["evt_ccc001", "ci", "push", "d-running", "running", "1"],
    ["evt_bbb001", "ci", "push", "d-queued", "queued", "1"],
    ["evt_aaa002", "gh", "issues.opened", "d-failed", "failed", "2"],
    ["evt_aaa001", "gh", "issues.opened", "d-delivered", "delivered", "1"],
  ]);
  assert.match(lines[4], /2026-03-01 10:00:00\s+1\.5 s$/, "delivered: took 1.5 s, no error");
  assert.match(lines[3], /3\.0 s\s+Telegram failed \(HTTP 500\): down$/, "one line per event");
  assert.match(lines[2], /\s-\s+later$/, "queued: no duration yet");
  assert.doesNotMatch(out, /payload-secret/);
});

Deno.test("webhook events: a replayed event's TOOK counts from its replay, not from when it first came in", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
  });
  try {
    const { eventId } = await store.accept(newEvent({ receivedAtMs: T0 })) as { eventId: string };
    await store.claimDue(T0, 1);
    await store.markFailed(eventId, { error: "down", step: "agent", nowMs: T0 + 1000 });
    const threeDaysLater = T0 + 3 * 86_400_000;
    await store.replay(eventId, threeDaysLater);
    await store.claimDue(threeDaysLater, 1);
    await store.markDelivered(eventId, threeDaysLater + 2500);
  } finally {
    await store.close();
  }
  const { out } = await run(webhookEvents, h.home, []);
  assert.match(out.split("\n")[1], /2026-03-01 10:00:00\s+2\.5 s$/);
  const [row] = await json(h.home);
  assert.equal(row.replayed_at, new Date(T0 + 3 * 86_400_000).toISOString());
});

Deno.test("webhook events cuts long delivery ids and errors so a row stays one line", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
  });
  const { eventId } = await store.accept(newEvent({ deliveryId: "x".repeat(40) })) as {
    eventId: string;
  };
  await store.claimDue(T0, 1);
  await store.markFailed(eventId, {
    error: `${"e".repeat(100)} tail`,
    step: "agent",
    nowMs: T0 + 10,
  });
  await store.close();
  const { out } = await run(webhookEvents, h.home, []);
  const row = out.split("\n")[1];
  assert.match(row, new RegExp(` ${"x".repeat(23)}… `));
  assert.match(row, new RegExp(` ${"e".repeat(79)}…$`), "80 characters, the cut marked");
  assert.doesNotMatch(row, /tail/);
});

Deno.test("webhook events shows escape sequences and bidi overrides from senders as \\u escapes", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
  });
  const { eventId } = await store.accept(
    newEvent({ eventLabel: "push\u202egnp.exe", deliveryId: "d\u2066x" }),
  ) as { eventId: string };
  await store.claimDue(T0, 1);
  // As a platform echoes a chat id templated from the payload back in its error.
  const error = 'bad chat "42:\u001b]0;PWNED\u0007\u001b[2J\u009b31m"\nnext line';
  await store.markFailed(eventId, { error, step: "delivery", nowMs: T0 + 10 });
  await store.close();
  const { out } = await run(webhookEvents, h.home, []);
  // deno-lint-ignore no-control-regex
  assert.doesNotMatch(out, /[\x1b\x07\x9b\u202e\u2066]/);
  const row = out.split("\n")[1];
  assert.match(row, /push\\u202egnp\.exe/);
  assert.match(row, /d\\u2066x/);
  assert.match(row, /bad chat "42:\\u001b\]0;PWNED\\u0007\\u001b\[2J\\u009b31m" next line/);
});

Deno.test("webhook events --json gives every public field and the attempts, not the payload", async () => {
  await using h = await homeWithEvents();
  const rows = await json(h.home);
  assert.deepEqual(rows.map((row) => row.id), [
    "evt_ccc001",
    "evt_bbb001",
    "evt_aaa002",
    "evt_aaa001",
  ]);
  const failed = rows[2];
  assert.deepEqual(failed, {
    id: "evt_aaa002",
    subscription: "gh",
    event: "issues.opened",
    source: "github",
    delivery_id: "d-failed",
    mode: "agent",
    status: "failed",
    attempts: 2,
    uncounted_attempts: 0,
    received_at: "2026-03-01T10:00:00.001Z",
    replayed_at: null,
    updated_at: "2026-03-01T10:00:03.000Z",
    next_attempt_at: null,
    target: "telegram",
    last_error: "Telegram failed\n   (HTTP 500):\tdown",
    coalesced_into: null,
    attempts_detail: [
      {
        series: 1,
        attempt: 1,
        step: "agent",
        started_at: "2026-03-01T10:00:00.001Z",
        finished_at: "2026-03-01T10:00:01.000Z",
        error: "LLM endpoint answered 500",
        agent_run: null,
      },
      {
        series: 1,
        attempt: 2,
        step: "delivery",
        started_at: "2026-03-01T10:00:02.000Z",
        finished_at: "2026-03-01T10:00:03.000Z",
        error: "Telegram failed\n   (HTTP 500):\tdown",
        agent_run: null,
      },
    ],
  });
  assert.equal(rows[1].next_attempt_at, "2026-03-01T10:01:00.000Z");
  assert.doesNotMatch(JSON.stringify(rows), /payload-secret|the answer/);
});

Deno.test("webhook events filters by subscription, status and limit", async () => {
  await using h = await homeWithEvents();
  const ids = async (args: string[]) => (await json(h.home, args)).map((row) => row.id);
  assert.deepEqual(await ids(["gh"]), ["evt_aaa002", "evt_aaa001"]);
  assert.deepEqual(await ids(["--status", "queued"]), ["evt_bbb001"]);
  assert.deepEqual(await ids(["ci", "--status", "running"]), ["evt_ccc001"]);
  assert.deepEqual(await ids(["gh", "--status", "running"]), []);
  assert.deepEqual(await ids(["--limit", "2"]), ["evt_ccc001", "evt_bbb001"]);
  assert.deepEqual(await ids(["nobody"]), []);
  const empty = await run(webhookEvents, h.home, ["nobody"]);
  assert.equal(
    empty.out,
    'No events match. No subscription is called "nobody" now: agent webhook list shows them.',
  );
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({ quiet: { secret: "s" } }),
    { mode: 0o600 },
  );
  const quiet = await run(webhookEvents, h.home, ["quiet"]);
  assert.equal(quiet.out, "No events match.", "a subscription without events yet");
});

Deno.test("webhook events refuses a bad status, limit or extra argument with a usage error", async () => {
  await using h = await homeWithEvents();
  const cases: [string[], RegExp][] = [
    [["--status", "done"], /--status must be one of: queued, running, delivered, failed/],
    [["--limit", "0"], /--limit must be a whole number/],
    [["--limit", "2.5"], /--limit must be a whole number/],
    [["--limit", "lots"], /--limit must be a whole number/],
    [["--limit", "1e1"], /--limit must be a whole number/],
    [["--limit", "0x10"], /--limit must be a whole number/],
    [["gh", "ci"], /at most one <name>/],
    [["--since", "1h"], /Unknown option --since\./],
  ];
  for (const [args, message] of cases) {
    await rejectsWith(run(webhookEvents, h.home, args), UsageError, message);
  }
});

Deno.test("webhook events and replay answer a disabled platform with how to enable it", async () => {
  await using h = await tempHome();
  for (const [command, args] of [[webhookEvents, []], [webhookReplay, ["evt_x"]]] as const) {
    const { code, err } = await run(command, h.home, [...args]);
    assert.equal(code, 1);
    assert.match(err, /Webhook platform is not enabled/);
    assert.match(err, /agent gateway setup/);
  }
});
