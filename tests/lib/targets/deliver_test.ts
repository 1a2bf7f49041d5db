import assert from "node:assert/strict";
import { deliver, splitMessage, TARGET_NAMES, TARGETS } from "../../../lib/targets/mod.ts";
import { startFakeTelegram } from "../../fakes/chat_servers.ts";
import { job, longText, recordingContext, targetError } from "./_context.ts";

Deno.test("deliver() log writes 'delivered to log' with subscription, event, event id and text", async () => {
  const ctx = recordingContext({});
  const text = longText(50);
  const receipt = await deliver(job("log", { text }), ctx);
  assert.deepEqual(receipt, { target: "log", parts: 1, destination: "gateway log" });
  assert.deepEqual(ctx.logs, [{
    message: "delivered to log",
    properties: { subscription: "ci-alerts", event: "pipeline", event_id: "ev_1", text },
  }]);
});

Deno.test("deliver() resumes after partsAlreadySent and reports the parts it sends", async () => {
  await using telegram = startFakeTelegram();
  const text = longText(40);
  const parts = splitMessage(text, 4096);
  assert.ok(parts.length >= 3);
  const progress: number[] = [];
  const receipt = await deliver(
    job("telegram", { chatId: "1", text, partsAlreadySent: 1 }),
    recordingContext(telegram.env),
    async (sent) => {
      await Promise.resolve();
      progress.push(sent);
    },
  );
  assert.equal(receipt.parts, parts.length);
  assert.deepEqual(telegram.messages.map((m) => m.text), parts.slice(1));
  assert.deepEqual(progress, parts.slice(1).map((_, index) => index + 2));
});

Deno.test("deliver() reports progress up to a failed part so a retry resends only the rest", async () => {
  await using telegram = startFakeTelegram();
  const text = longText(40);
  const parts = splitMessage(text, 4096);
  const progress: number[] = [];
  const failing = deliver(
    job("telegram", { chatId: "1", text }),
    recordingContext(telegram.env),
    (sent) => {
      progress.push(sent);
      if (sent === 1) telegram.failNext(1, { status: 500 });
    },
  );
  const error = await targetError(failing);
  assert.equal(error.permanent, false);
  assert.deepEqual(progress, [1]);
  await deliver(
    job("telegram", { chatId: "1", text, partsAlreadySent: progress.at(-1) }),
    recordingContext(telegram.env),
  );
  assert.deepEqual(telegram.messages.map((m) => m.text), parts);
});

Deno.test("deliver() shares the 429 wait budget between the parts of one message", async () => {
  await using telegram = startFakeTelegram();
  const ctx = recordingContext(telegram.env, { maxRateLimitWaitMs: 5000 });
  const failing = deliver(job("telegram", { chatId: "1", text: longText(40) }), ctx, () => {
    telegram.failNext(1, { status: 429, retryAfterSeconds: 3 });
  });
  const error = await targetError(failing);
  assert.deepEqual(ctx.waits, [3000]);
  assert.equal(error.retryAfterSeconds, 3);
  assert.equal(telegram.messages.length, 2);
});

Deno.test("deliver() stops after 5 rate-limit retries even when each wait is zero", async () => {
  await using telegram = startFakeTelegram();
  telegram.failNext(10, { status: 429, retryAfterSeconds: 0 });
  const ctx = recordingContext(telegram.env);
  const error = await targetError(deliver(job("telegram", { chatId: "1" }), ctx));
  assert.equal(error.permanent, false);
  assert.equal(ctx.waits.length, 5);
  assert.equal(telegram.requests, 6);
});

Deno.test("deliver() refuses an unknown target permanently, listing the valid ones", async () => {
  const error = await targetError(deliver(job("sms"), recordingContext({})));
  assert.equal(error.permanent, true);
  assert.match(error.message, /Unknown delivery target "sms"/);
  assert.match(error.message, /telegram, discord, slack/);
});

Deno.test("deliver() refuses an empty message to a chat target without sending", async () => {
  await using telegram = startFakeTelegram();
  const error = await targetError(
    deliver(job("telegram", { chatId: "1", text: " \n " }), recordingContext(telegram.env)),
  );
  assert.equal(error.permanent, true);
  assert.equal(telegram.requests, 0);
});

Deno.test("TARGET_NAMES and TARGETS list the seven targets with their limits", () => {
  assert.deepEqual(TARGET_NAMES, [
    "log",
    "telegram",
    "discord",
    "slack",
    "github_comment",
    "gitlab_comment",
    "origin",
  ]);
  const limits = Object.fromEntries(TARGETS.map((target) => [target.name, target.maxChars]));
  assert.deepEqual(limits, {
    log: undefined,
    telegram: 4096,
    discord: 2000,
    slack: 4000,
    // The platforms' limits, less the 46 characters of the marker each comment ends with.
    github_comment: 65490,
    gitlab_comment: 999_954,
    origin: undefined,
  });
  assert.match(TARGETS.find((target) => target.name === "telegram")!.needs, /TELEGRAM_BOT_TOKEN/);
});
