/**
 * In-process tests of `agent webhook show`, over a state database filled through the store in
 * a temporary home: the text sections, `--json`, id prefixes, and text from outside made safe.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { webhookShow } from "../../commands/webhook_show.ts";
import { NotFoundError, UsageError } from "../../lib/errors.ts";
import { openStateStore } from "../../lib/state/sqlite/mod.ts";
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
    store.claimDue(T0, 1);
    const run = {
      provider: "openai",
      model: "gpt-4o-mini",
      promptTokens: 812,
      completionTokens: 96,
    };
    store.saveResponse(id, "Likely a duplicate.\nSee #3.", { ...run, durationMs: 2100 });
    for (const part of [1, 2]) {
      const receipt = { part, parts: 2, target: "telegram", chat: "42", url: null };
      store.savePartsSent(id, part, {
        sentBefore: 0,
        parts: 2,
        receipts: [{ ...receipt, messageId: String(500 + part), sentAtMs: T0 + 2200 + part }],
      });
    }
    store.markDelivered(id, T0 + 2300);
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
  store.claimDue(T0, 1);
  store.saveResponse(id, `answer ${evil}`);
  await store.close();
  const { out } = await run(webhookShow, h.home, [id]);
  assert.ok(!out.includes("\x1b") && !out.includes("\x07"), "no escape reaches the terminal");
  assert.match(out, /user-agent: \\u001b\]0;owned\\u0007/);
  assert.match(out, /\| hello \\u001b/);
  assert.match(out, /\| answer \\u001b/);
});
