import assert from "node:assert/strict";
import { deliver, splitMessage } from "../../../lib/targets/mod.ts";
import { startFakeSlack } from "../../fakes/chat_servers.ts";
import { job, longText, recordingContext, targetError } from "./_context.ts";

Deno.test("deliver() slack calls chat.postMessage with a Bearer token", async () => {
  await using slack = startFakeSlack();
  const receipt = await deliver(job("slack", { chatId: "C0123" }), recordingContext(slack.env));
  assert.deepEqual(receipt, { target: "slack", parts: 1, destination: "C0123" });
  const [message] = slack.messages;
  assert.equal(message.path, "/api/chat.postMessage");
  assert.equal(message.headers.authorization, `Bearer ${slack.token}`);
  assert.match(message.headers["content-type"], /^application\/json/);
  assert.equal(message.to, "C0123");
  assert.equal(message.thread, undefined);
});

Deno.test("deliver() slack replies in a thread for <channel>:<thread_ts>", async () => {
  await using slack = startFakeSlack();
  const receipt = await deliver(
    job("slack", { chatId: "C0123:1700000000.000100" }),
    recordingContext(slack.env),
  );
  assert.equal(receipt.destination, "C0123:1700000000.000100");
  assert.equal(slack.messages[0].to, "C0123");
  assert.equal(slack.messages[0].thread, "1700000000.000100");
});

Deno.test("deliver() slack falls back to SLACK_HOME_CHANNEL", async () => {
  await using slack = startFakeSlack();
  await deliver(job("slack"), recordingContext({ ...slack.env, SLACK_HOME_CHANNEL: "C0HOME" }));
  assert.equal(slack.messages[0].to, "C0HOME");
});

Deno.test("deliver() slack splits at 4000 characters, each part within the limit", async () => {
  await using slack = startFakeSlack();
  const text = longText(30);
  const receipt = await deliver(job("slack", { chatId: "C1", text }), recordingContext(slack.env));
  const expected = splitMessage(text, 4000);
  assert.ok(expected.length >= 2);
  assert.equal(receipt.parts, expected.length);
  assert.deepEqual(slack.messages.map((m) => m.text), expected);
});

Deno.test("deliver() slack ok:false is a permanent failure carrying Slack's error code", async () => {
  await using slack = startFakeSlack({ known: ["C1"] });
  const error = await targetError(
    deliver(job("slack", { chatId: "C2" }), recordingContext(slack.env)),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /channel_not_found/);
});

Deno.test("deliver() slack invalid_auth is permanent and does not show the token", async () => {
  await using slack = startFakeSlack();
  const env = { ...slack.env, SLACK_BOT_TOKEN: "xoxb-wrong" };
  const error = await targetError(deliver(job("slack", { chatId: "C1" }), recordingContext(env)));
  assert.equal(error.permanent, true);
  assert.match(error.message, /invalid_auth/);
  assert.ok(!error.message.includes("xoxb-wrong"));
});

Deno.test("deliver() slack waits out ratelimited with its Retry-After header", async () => {
  await using slack = startFakeSlack();
  slack.failNext(1, { status: 429, retryAfterSeconds: 4 });
  const ctx = recordingContext(slack.env);
  await deliver(job("slack", { chatId: "C1" }), ctx);
  assert.deepEqual(ctx.waits, [4000]);
  assert.equal(slack.messages.length, 1);
});

Deno.test("deliver() slack ratelimited beyond the budget is retryable with retryAfterSeconds", async () => {
  await using slack = startFakeSlack();
  slack.failNext(1, { status: 429, retryAfterSeconds: 120 });
  const ctx = recordingContext(slack.env);
  const error = await targetError(deliver(job("slack", { chatId: "C1" }), ctx));
  assert.equal(error.permanent, false);
  assert.equal(error.retryAfterSeconds, 120);
  assert.deepEqual(ctx.waits, []);
});

Deno.test("deliver() slack 500 internal_error is retryable", async () => {
  await using slack = startFakeSlack();
  slack.failNext(1, { status: 500 });
  const error = await targetError(
    deliver(job("slack", { chatId: "C1" }), recordingContext(slack.env)),
  );
  assert.equal(error.permanent, false);
});

Deno.test("deliver() slack without SLACK_BOT_TOKEN names the variable and sends nothing", async () => {
  await using slack = startFakeSlack();
  const error = await targetError(
    deliver(
      job("slack", { chatId: "C1" }),
      recordingContext({ SLACK_API_URL: slack.env.SLACK_API_URL }),
    ),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /SLACK_BOT_TOKEN/);
  assert.equal(slack.requests, 0);
});
