import assert from "node:assert/strict";
import { deliver, splitMessage } from "../../../lib/targets/mod.ts";
import { startFakeTelegram } from "../../fakes/chat_servers.ts";
import { job, longText, recordingContext, targetError } from "./_context.ts";

Deno.test("deliver() telegram sends sendMessage to the chat id with the token in the path", async () => {
  await using telegram = startFakeTelegram();
  const ctx = recordingContext(telegram.env);
  const receipt = await deliver(job("telegram", { chatId: "123456" }), ctx);
  assert.deepEqual(receipt, { target: "telegram", parts: 1, destination: "123456" });
  assert.equal(telegram.messages.length, 1);
  const [message] = telegram.messages;
  assert.equal(message.path, `/bot${telegram.token}/sendMessage`);
  assert.equal(message.to, "123456");
  assert.equal(message.text, "Build 42 failed on main");
  assert.equal(message.body.parse_mode, undefined);
});

Deno.test("deliver() telegram falls back to TELEGRAM_HOME_CHANNEL without a chat id", async () => {
  await using telegram = startFakeTelegram();
  const ctx = recordingContext({ ...telegram.env, TELEGRAM_HOME_CHANNEL: "-1001234567890" });
  const receipt = await deliver(job("telegram"), ctx);
  assert.equal(receipt.destination, "-1001234567890");
  assert.equal(telegram.messages[0].to, "-1001234567890");
});

Deno.test("deliver() telegram posts <chat>:<thread> into the forum topic", async () => {
  await using telegram = startFakeTelegram();
  const receipt = await deliver(
    job("telegram", { chatId: "-1001234567890:42" }),
    recordingContext(telegram.env),
  );
  assert.equal(receipt.destination, "-1001234567890:42");
  assert.equal(telegram.messages[0].to, "-1001234567890");
  assert.equal(telegram.messages[0].body.message_thread_id, 42);
});

Deno.test("deliver() telegram splits a long answer into numbered parts of at most 4096", async () => {
  await using telegram = startFakeTelegram();
  const text = longText(40);
  const progress: number[] = [];
  const receipt = await deliver(
    job("telegram", { chatId: "1", text }),
    recordingContext(telegram.env),
    (sent) => void progress.push(sent),
  );
  const expected = splitMessage(text, 4096);
  assert.ok(expected.length >= 3);
  assert.equal(receipt.parts, expected.length);
  assert.deepEqual(telegram.messages.map((m) => m.text), expected);
  assert.deepEqual(progress, expected.map((_, index) => index + 1));
  assert.match(telegram.messages[0].text, /^\(1\/\d\) Paragraph 0/);
});

Deno.test("deliver() telegram waits out a 429 parameters.retry_after, then sends", async () => {
  await using telegram = startFakeTelegram();
  telegram.failNext(2, { status: 429, retryAfterSeconds: 3 });
  const ctx = recordingContext({ ...telegram.env, TELEGRAM_HOME_CHANNEL: "7" });
  await deliver(job("telegram"), ctx);
  assert.deepEqual(ctx.waits, [3000, 3000]);
  assert.equal(telegram.requests, 3);
  assert.equal(telegram.messages.length, 1);
});

Deno.test("deliver() telegram gives up on a 429 longer than maxRateLimitWaitMs, retryable", async () => {
  await using telegram = startFakeTelegram();
  telegram.failNext(1, { status: 429, retryAfterSeconds: 45 });
  const ctx = recordingContext(telegram.env, { maxRateLimitWaitMs: 30_000 });
  const error = await targetError(
    deliver(job("telegram", { chatId: "7" }), ctx),
  );
  assert.equal(error.permanent, false);
  assert.equal(error.retryAfterSeconds, 45);
  assert.equal(error.status, 429);
  assert.deepEqual(ctx.waits, []);
  assert.equal(telegram.messages.length, 0);
});

Deno.test("deliver() telegram turns a 5xx into a retryable TargetError", async () => {
  await using telegram = startFakeTelegram();
  telegram.failNext(1, { status: 502 });
  const error = await targetError(
    deliver(job("telegram", { chatId: "7" }), recordingContext(telegram.env)),
  );
  assert.equal(error.permanent, false);
  assert.equal(error.status, 502);
});

Deno.test("deliver() telegram turns 'chat not found' into a permanent error with the description", async () => {
  await using telegram = startFakeTelegram({ known: ["1"] });
  const error = await targetError(
    deliver(job("telegram", { chatId: "2" }), recordingContext(telegram.env)),
  );
  assert.equal(error.permanent, true);
  assert.equal(error.status, 400);
  assert.match(error.message, /Bad Request: chat not found/);
  assert.ok(!error.message.includes(telegram.token));
});

Deno.test("deliver() telegram to a group upgraded to a supergroup names the new chat id to use", async () => {
  await using telegram = startFakeTelegram({
    known: [],
    upgradedChats: { "-4012345678": -1001234567890 },
  });
  const ctx = recordingContext(telegram.env);
  const error = await targetError(deliver(job("telegram", { chatId: "-4012345678" }), ctx));
  assert.equal(error.permanent, true, "the old id fails every time: a retry cannot help");
  assert.match(error.message, /group chat was upgraded to a supergroup chat/);
  assert.match(error.message, /the chat is now -1001234567890: use it as the chat id$/);
  // Doing what the message says delivers.
  await deliver(job("telegram", { chatId: "-1001234567890" }), ctx);
  assert.equal(telegram.messages[0].to, "-1001234567890");
});

Deno.test("deliver() telegram never shows a rejected token, which sits in the URL path", async () => {
  await using telegram = startFakeTelegram();
  const env = { ...telegram.env, TELEGRAM_BOT_TOKEN: "123:wrong-secret" };
  const error = await targetError(
    deliver(job("telegram", { chatId: "7" }), recordingContext(env)),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /Unauthorized/);
  assert.ok(!error.message.includes("wrong-secret"));
});

Deno.test("deliver() telegram network failure is retryable and does not quote the token", async () => {
  const telegram = startFakeTelegram();
  await telegram.close();
  const env = { ...telegram.env, TELEGRAM_BOT_TOKEN: "123:network-secret" };
  const error = await targetError(
    deliver(job("telegram", { chatId: "7" }), recordingContext(env)),
  );
  assert.equal(error.permanent, false);
  assert.match(error.message, /Connection refused/);
  assert.match(error.message, /bot\*\*\*\/sendMessage/);
  assert.ok(!error.message.includes("network-secret"), error.message);
});

Deno.test("deliver() telegram without TELEGRAM_BOT_TOKEN fails permanently before any request", async () => {
  await using telegram = startFakeTelegram();
  const env = { TELEGRAM_API_URL: telegram.env.TELEGRAM_API_URL };
  const error = await targetError(
    deliver(job("telegram", { chatId: "7" }), recordingContext(env)),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /TELEGRAM_BOT_TOKEN/);
  assert.equal(telegram.requests, 0);
});

Deno.test("deliver() telegram without chat id or home channel says how to set one", async () => {
  await using telegram = startFakeTelegram();
  const error = await targetError(
    deliver(job("telegram"), recordingContext(telegram.env)),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /TELEGRAM_HOME_CHANNEL/);
});

Deno.test("deliver() telegram refuses a topic that is not a number", async () => {
  await using telegram = startFakeTelegram();
  const error = await targetError(
    deliver(job("telegram", { chatId: "7:general" }), recordingContext(telegram.env)),
  );
  assert.equal(error.permanent, true);
  assert.equal(telegram.requests, 0);
});
