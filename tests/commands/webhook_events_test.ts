/**
 * In-process tests of `agent webhook events` and `agent webhook replay`, over a state database
 * filled directly through the store in a temporary home.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { webhookEvents } from "../../commands/webhook_events.ts";
import { webhookReplay } from "../../commands/webhook_replay.ts";
import { ConflictError, NotFoundError, UsageError } from "../../lib/errors.ts";
import type { NewEvent } from "../../lib/state/mod.ts";
import { openStateStore, type SqliteStateStore } from "../../lib/state/sqlite/mod.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

const T0 = Date.parse("2026-03-01T10:00:00Z");

function newEvent(overrides: Partial<NewEvent>): NewEvent {
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
async function homeWithEvents() {
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

async function fill(store: SqliteStateStore): Promise<void> {
  const accept = async (event: NewEvent) => {
    const result = await store.accept(event);
    assert.equal(result.status, "accepted");
    return (result as { eventId: string }).eventId;
  };
  const delivered = await accept(newEvent({ deliveryId: "d-delivered" }));
  const failed = await accept(newEvent({ deliveryId: "d-failed", receivedAtMs: T0 + 1 }));
  store.claimDue(T0 + 1, 2);
  store.saveResponse(delivered, "the answer");
  store.markDelivered(delivered, T0 + 1500);
  store.markRetry(failed, {
    error: "LLM endpoint answered 500",
    step: "agent",
    nextAttemptAtMs: T0 + 2000,
    nowMs: T0 + 1000,
  });
  store.claimDue(T0 + 2000, 1);
  store.markFailed(failed, {
    error: "Telegram failed\n   (HTTP 500):\tdown",
    step: "delivery",
    nowMs: T0 + 3000,
  });
  await accept(newEvent({ subscription: "ci", eventLabel: "push", deliveryId: "d-queued" }));
  await accept(newEvent({ subscription: "ci", eventLabel: "push", deliveryId: "d-running" }));
  // Both are claimed; the older one is put back, so one event of each status remains.
  const claimed = store.claimDue(T0 + 10_000, 2).map((event) => event.id);
  assert.deepEqual(claimed, ["evt_bbb001", "evt_ccc001"]);
  store.markRetry("evt_bbb001", {
    error: "later",
    step: "agent",
    nextAttemptAtMs: T0 + 60_000,
    nowMs: T0 + 10_000,
  });
}

async function run(
  command: typeof webhookEvents,
  home: string,
  args: string[],
): Promise<{ code: number; out: string; err: string }> {
  const ctx = fakeContext({ AGENT_HOME: home }, { now: () => T0 + 100_000 });
  const code = await command.run(args, ctx);
  return { code, out: ctx.output(), err: ctx.err.join("\n") };
}

async function json(home: string, args: string[] = []): Promise<Record<string, unknown>[]> {
  const { code, out } = await run(webhookEvents, home, ["--json", ...args]);
  assert.equal(code, 0);
  return JSON.parse(out);
}

/** Asserts that `promise` rejects with an instance of `type` whose message matches `message`. */
async function rejectsWith(
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
    store.claimDue(T0, 1);
    store.markFailed(eventId, { error: "down", step: "agent", nowMs: T0 + 1000 });
    const threeDaysLater = T0 + 3 * 86_400_000;
    store.replay(eventId, threeDaysLater);
    store.claimDue(threeDaysLater, 1);
    store.markDelivered(eventId, threeDaysLater + 2500);
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
  store.claimDue(T0, 1);
  store.markFailed(eventId, { error: `${"e".repeat(100)} tail`, step: "agent", nowMs: T0 + 10 });
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
  store.claimDue(T0, 1);
  // As a platform echoes a chat id templated from the payload back in its error.
  const error = 'bad chat "42:\u001b]0;PWNED\u0007\u001b[2J\u009b31m"\nnext line';
  store.markFailed(eventId, { error, step: "delivery", nowMs: T0 + 10 });
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
    attempts_detail: [
      {
        series: 1,
        attempt: 1,
        step: "agent",
        started_at: "2026-03-01T10:00:00.001Z",
        finished_at: "2026-03-01T10:00:01.000Z",
        error: "LLM endpoint answered 500",
      },
      {
        series: 1,
        attempt: 2,
        step: "delivery",
        started_at: "2026-03-01T10:00:02.000Z",
        finished_at: "2026-03-01T10:00:03.000Z",
        error: "Telegram failed\n   (HTTP 500):\tdown",
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
    const event = store.getEvent("evt_aaa002")!;
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
    const replayed = store.getEvent("evt_aaa002")!;
    assert.equal(replayed.prompt, "Now: opened (d-failed)");
    assert.deepEqual(replayed.route, {
      deliver: "discord",
      chatId: "opened-room",
      skills: ["triage"],
    });
    assert.equal(replayed.mode, "agent");
    assert.equal(replayed.payload, JSON.stringify({ action: "opened", token: "payload-secret" }));
    const nowDirect = store.getEvent("evt_bbb001")!;
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
