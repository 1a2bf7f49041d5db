/**
 * In-process tests of `agent webhook show`, over a state database filled through the store in
 * a temporary home: the text sections, `--json`, id prefixes, text from outside made safe, and
 * the routing steps (a transform's outcome, a conversation's turns).
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { webhookShow } from "../../commands/webhook_show.ts";
import { NotFoundError, UsageError } from "../../lib/errors.ts";
import { openStateStore, type SqliteStateStore } from "../../lib/state/sqlite/mod.ts";
import { enabledConfig, tempHome } from "../_helpers.ts";
import { homeWithEvents, newEvent, rejectsWith, run, T0 } from "./_event_history.ts";

const HEADERS = {
  "content-type": "application/json",
  "x-github-event": "issues",
  "x-hub-signature-256": "[redacted]",
};

/** A home with one delivered agent-mode event: run, answer, two parts; ids `evt_lin...`. */
async function homeWithLineage() {
  const h = await tempHome({ config: enabledConfig() });
  const ids = ["evt_lin001"];
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
    newId: () => ids.shift()!,
  });
  try {
    const event = newEvent({
      deliveryId: "d-1",
      headers: HEADERS,
      scheme: "github",
      prompt: "Triage issue #7:\nCrash on start",
      route: { deliver: "telegram", chatId: "42", skills: ["triage"] },
    });
    const id = (await store.accept(event) as { eventId: string }).eventId;
    await store.claimDue(T0, 1);
    const run = {
      provider: "openai",
      model: "gpt-4o-mini",
      promptTokens: 812,
      completionTokens: 96,
    };
    await store.saveResponse(id, "Likely a duplicate.\nSee #3.", { ...run, durationMs: 2100 });
    for (const part of [1, 2]) {
      const receipt = { part, parts: 2, target: "telegram", chat: "42", url: null };
      await store.savePartsSent(id, part, {
        sentBefore: 0,
        parts: 2,
        receipts: [{ ...receipt, messageId: String(500 + part), sentAtMs: T0 + 2200 + part }],
      });
    }
    await store.markDelivered(id, T0 + 2300);
  } finally {
    await store.close();
  }
  return h;
}

Deno.test("webhook show prints the request, decisions, prompt, agent run, answer and parts", async () => {
  await using h = await homeWithLineage();
  const { code, out } = await run(webhookShow, h.home, ["evt_lin"]);
  assert.equal(code, 0);
  const sections = out.split("\n\n");
  assert.match(sections[0], /^Event evt_lin001: delivered\n {2}subscription: gh\n/);
  assert.match(sections[1], /^Received 2026-03-01 10:00:00 UTC, verified by github\n/);
  assert.match(sections[1], /\n {2}x-hub-signature-256: \[redacted\]/);
  assert.match(sections[1], /\n {2}x-github-event: issues/);
  assert.match(sections[2], /^Decisions\n/);
  assert.match(sections[2], /answered as a duplicate/, "it holds its delivery id");
  assert.match(sections[2], /its answer goes to telegram chat 42/);
  assert.match(sections[2], /skills: triage/);
  assert.equal(sections[3], "Prompt\n  | Triage issue #7:\n  | Crash on start");
  assert.match(
    sections[4],
    /^Attempts\n {2}1\. 2026-03-01 10:00:00 UTC, 2\.3 s: delivered\n {5}agent: openai gpt-4o-mini, 812 prompt \+ 96 completion tokens, 2\.1 s$/,
  );
  assert.equal(sections[5], "Answer\n  | Likely a duplicate.\n  | See #3.");
  assert.match(
    sections[6],
    /^Delivered\n {2}part 1\/2 {2}telegram 42 {2}message 501 {2}2026-03-01/,
  );
  assert.match(sections[6], /\n {2}part 2\/2 {2}telegram 42 {2}message 502 /);
  assert.match(sections[7], /^Payload: \d+ characters/);
  assert.doesNotMatch(out, /payload-secret"/, "the payload itself is only in --json");
});

Deno.test("webhook show --json has the headers, scheme, payload, runs, answers and parts", async () => {
  await using h = await homeWithLineage();
  const { code, out } = await run(webhookShow, h.home, ["evt_lin001", "--json"]);
  assert.equal(code, 0);
  const shown = JSON.parse(out);
  assert.equal(shown.id, "evt_lin001");
  assert.equal(shown.scheme, "github");
  assert.deepEqual(shown.headers, HEADERS);
  assert.deepEqual(shown.payload, { action: "opened", token: "payload-secret" });
  assert.equal(shown.answer, "Likely a duplicate.\nSee #3.");
  assert.deepEqual(shown.attempts_detail[0].agent_run, {
    provider: "openai",
    model: "gpt-4o-mini",
    prompt_tokens: 812,
    completion_tokens: 96,
    duration_ms: 2100,
  });
  assert.equal(shown.attempts_detail[0].answer, "Likely a duplicate.\nSee #3.");
  assert.deepEqual(shown.parts[1], {
    part: 2,
    parts: 2,
    target: "telegram",
    chat: "42",
    message_id: "502",
    url: null,
    sent_at: new Date(T0 + 2202).toISOString(),
  });
});

Deno.test("webhook show of an event stored before lineages were kept says what is missing", async () => {
  await using h = await homeWithEvents();
  const { code, out } = await run(webhookShow, h.home, ["evt_aaa002"]);
  assert.equal(code, 0);
  assert.match(out, /^Event evt_aaa002: failed\n/);
  assert.match(out, /the scheme was not recorded/);
  assert.match(out, /headers were not kept/);
  assert.match(out, /\n {2}1\. .*: failed at agent: LLM endpoint answered 500\n/);
  assert.match(out, /\n {2}2\. .*: failed at delivery: Telegram failed \(HTTP 500\): down\n/);
  assert.match(out, /Answer\n {2}none yet/);
  assert.match(out, /Delivered\n {2}no part yet/);
});

Deno.test("webhook show refuses an unknown id, an ambiguous prefix and a missing id", async () => {
  await using h = await homeWithEvents();
  await rejectsWith(
    run(webhookShow, h.home, ["evt_zzz"]),
    NotFoundError,
    /No event "evt_zzz".*kept 7 days/,
  );
  await rejectsWith(run(webhookShow, h.home, ["evt_aaa"]), NotFoundError, /ambiguous/);
  await rejectsWith(run(webhookShow, h.home, []), UsageError, /Expected one <event-id>/);
});

Deno.test("webhook show prints escape sequences from headers, prompt and answer as \\u escapes", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
  });
  const evil = "\x1b]0;owned\x07\x1b[2J";
  const id = (await store.accept(
    newEvent({ headers: { "user-agent": evil }, prompt: `hello ${evil}` }),
  ) as { eventId: string }).eventId;
  await store.claimDue(T0, 1);
  await store.saveResponse(id, `answer ${evil}`);
  await store.close();
  const { out } = await run(webhookShow, h.home, [id]);
  assert.ok(!out.includes("\x1b") && !out.includes("\x07"), "no escape reaches the terminal");
  assert.match(out, /user-agent: \\u001b\]0;owned\\u0007/);
  assert.match(out, /\| hello \\u001b/);
  assert.match(out, /\| answer \\u001b/);
});

/** A home whose store `fill` writes to, events numbered `evt_stp001`, `evt_stp002`, ... */
async function homeWith(fill: (store: SqliteStateStore) => Promise<void>) {
  const h = await tempHome({ config: enabledConfig() });
  let next = 0;
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
    newId: () => `evt_stp${String(++next).padStart(3, "0")}`,
  });
  try {
    await fill(store);
  } finally {
    await store.close();
  }
  return h;
}

const TRANSFORM = { command: ["node", "headline.js"], timeoutSeconds: 5 };

Deno.test("webhook show says what the transform printed, that it skipped, or why it is pending", async () => {
  const route = { deliver: "log", skills: [], transform: TRANSFORM };
  await using h = await homeWith(async (store) => {
    await store.accept(newEvent({ route, transformed: '{"headline":"DISK IS FULL"}' }));
    await store.accept(newEvent({ route, transformed: '{"skip":true}' }));
    await store.accept(newEvent({ route }));
    await store.claimDue(T0, 3);
    await store.markRetry("evt_stp003", {
      error: "transform node exited with status 1:\nTypeError: no title",
      step: "agent",
      nextAttemptAtMs: T0 + 30_000,
      nowMs: T0,
    });
  });
  const section = async (id: string) =>
    (await run(webhookShow, h.home, [id])).out.split("\n\n")
      .find((one) => one.startsWith("Transformed by"));
  assert.equal(
    await section("evt_stp001"),
    'Transformed by node headline.js\n  | {"headline":"DISK IS FULL"}',
  );
  assert.equal(
    await section("evt_stp002"),
    'Transformed by node headline.js\n  | {"skip":true}\n' +
      "  it skipped the event: no agent ran, nothing was sent",
  );
  assert.equal(
    await section("evt_stp003"),
    "Transformed by node headline.js\n" +
      "  not yet: the transform runs again with the next attempt\n" +
      "  last error: transform node exited with status 1: TypeError: no title",
  );
  const json = async (id: string) =>
    JSON.parse((await run(webhookShow, h.home, [id, "--json"])).out);
  assert.deepEqual((await json("evt_stp001")).transform, {
    command: ["node", "headline.js"],
    timeout_seconds: 5,
    state: "printed",
  });
  assert.equal((await json("evt_stp002")).transform.state, "skipped");
  assert.equal((await json("evt_stp003")).transform.state, "pending");
});

Deno.test("webhook show prints the session key and the earlier turns the run was given", async () => {
  // About 26 tokens a turn: a budget of 60 holds the newest two.
  const conversation = {
    route: { deliver: "log", skills: [], sessionBudget: 60 },
    sessionKey: "octo/repo#12",
  };
  await using h = await homeWith(async (store) => {
    for (let turn = 1; turn <= 3; turn++) {
      const accepted = await store.accept(
        newEvent({ ...conversation, prompt: `Turn ${turn} `.repeat(8) }),
      );
      const id = (accepted as { eventId: string }).eventId;
      await store.claimDue(T0 + turn * 1000, 1);
      await store.saveResponse(id, `Answer ${turn} `.repeat(5));
      await store.markDelivered(id, T0 + turn * 1000);
    }
    await store.accept(newEvent(conversation));
    await store.accept(newEvent({}));
  });
  const section = async (id: string) =>
    (await run(webhookShow, h.home, [id])).out.split("\n\n")
      .find((one) => one.startsWith("Conversation"));
  assert.equal(
    await section("evt_stp002"),
    'Conversation\n  session key "octo/repo#12"\n' +
      "  its run was given 1 earlier turn, within 60 tokens",
  );
  assert.equal(
    await section("evt_stp004"),
    'Conversation\n  session key "octo/repo#12"\n' +
      "  its run will be given the turns held then: 2 earlier turns now (of 3 held before " +
      "it: the older did not fit)",
  );
  assert.equal(await section("evt_stp005"), undefined, "an event of no conversation");
  const shown = JSON.parse((await run(webhookShow, h.home, ["evt_stp003", "--json"])).out);
  assert.deepEqual(shown.session, {
    key: "octo/repo#12",
    own_turn: true,
    turns_given: 2,
    turns_held_before: 2,
  });
});

Deno.test("webhook show says a coalescing event waits in its open window, or ran alone", async () => {
  const route = {
    deliver: "log",
    skills: [],
    coalesce: { key: "octo/repo#7", windowSeconds: 10, maxSeconds: 300 },
  };
  await using h = await homeWith(async (store) => {
    await store.accept(newEvent({ route }));
    await store.accept(
      newEvent({ route: { ...route, coalesce: { ...route.coalesce, key: "b" } } }),
    );
    await store.claimDue(T0 + 11_000, 1);
  });
  const section = async (id: string) =>
    (await run(webhookShow, h.home, [id])).out.split("\n\n")
      .find((one) => one.startsWith("Coalesced"));
  assert.equal(await section("evt_stp001"), 'Coalesced\n  key "octo/repo#7": alone in its window');
  assert.equal(
    await section("evt_stp002"),
    'Coalesced\n  key "b": its window is open: the first event of the window runs for all of them',
  );
});
