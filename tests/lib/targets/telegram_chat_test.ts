/**
 * The Telegram chat a subscription names: a numeric chat id or an `@channelusername`, with a
 * forum topic after a colon. Checked at `subscribe` and again when a message goes out.
 */
import assert from "node:assert/strict";
import { UsageError } from "../../../lib/errors.ts";
import { deliver, validateTarget } from "../../../lib/targets/mod.ts";
import { startFakeTelegram } from "../../fakes/chat_servers.ts";
import { job, recordingContext, targetError } from "./_context.ts";

const env = { TELEGRAM_BOT_TOKEN: "t" };
const check = (chatId: string) =>
  validateTarget({ target: "telegram", chatId, deliverOnly: true, env });

Deno.test("validateTarget() accepts a Telegram user, group, channel or @channelusername, with a forum topic", () => {
  for (
    const chatId of [
      "123456",
      "-4012345678",
      "-1001234567890",
      "-1001234567890:42",
      "@build_alerts",
      "@Build_Alerts_2:7",
      `@${"a".repeat(32)}`,
    ]
  ) {
    assert.deepEqual(check(chatId), [], chatId);
  }
});

Deno.test("validateTarget() refuses a Telegram chat that is neither a number nor an @username, saying what it must be", () => {
  for (
    const chatId of [
      "abc",
      "general",
      "12ab",
      "1.5",
      "- 100",
      "--100",
      "@",
      "@abcd",
      `@${"a".repeat(33)}`,
      "@build-alerts",
      "@build alerts",
      "@@build_alerts",
      "https://t.me/build_alerts",
    ]
  ) {
    assert.throws(
      () => check(chatId),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message.startsWith(`--deliver-chat-id ${JSON.stringify(chatId)}: `) &&
        error.message.includes("@channelusername"),
      chatId,
    );
  }
});

Deno.test("deliver() telegram refuses a home channel that is no chat id before sending anything", async () => {
  await using telegram = startFakeTelegram();
  const ctx = recordingContext({ ...telegram.env, TELEGRAM_HOME_CHANNEL: "general" });
  const error = await targetError(deliver(job("telegram"), ctx));
  assert.equal(error.permanent, true);
  assert.match(error.message, /"general"/);
  assert.equal(telegram.requests, 0);
});
