import assert from "node:assert/strict";
import { deliver, splitMessage } from "../../../lib/targets/mod.ts";
import { startFakeDiscord } from "../../fakes/chat_servers.ts";
import { job, longText, recordingContext, targetError } from "./_context.ts";

Deno.test("deliver() discord posts the content with a Bot token and no mention parsing", async () => {
  await using discord = startFakeDiscord();
  const receipt = await deliver(
    job("discord", { chatId: "1122334455", text: "@everyone deploy failed" }),
    recordingContext(discord.env),
  );
  assert.deepEqual(receipt, { target: "discord", parts: 1, destination: "1122334455" });
  const [message] = discord.messages;
  assert.equal(message.path, "/api/v10/channels/1122334455/messages");
  assert.equal(message.headers.authorization, `Bot ${discord.token}`);
  assert.match(message.headers["user-agent"], /^DiscordBot \(/);
  assert.equal(message.text, "@everyone deploy failed");
  assert.deepEqual(message.body.allowed_mentions, { parse: [] });
});

Deno.test("deliver() discord falls back to DISCORD_HOME_CHANNEL", async () => {
  await using discord = startFakeDiscord();
  await deliver(job("discord"), recordingContext({ ...discord.env, DISCORD_HOME_CHANNEL: "99" }));
  assert.equal(discord.messages[0].to, "99");
});

Deno.test("deliver() discord splits at 2000 characters, which the fake enforces", async () => {
  await using discord = startFakeDiscord();
  const text = longText(12);
  const receipt = await deliver(
    job("discord", { chatId: "1", text }),
    recordingContext(discord.env),
  );
  const expected = splitMessage(text, 2000);
  assert.ok(expected.length >= 2);
  assert.equal(receipt.parts, expected.length);
  assert.deepEqual(discord.messages.map((m) => m.text), expected);
});

Deno.test("deliver() discord waits the float retry_after of the body, not the rounded header", async () => {
  await using discord = startFakeDiscord();
  discord.failNext(1, { status: 429, retryAfterSeconds: 0.25 });
  const ctx = recordingContext(discord.env);
  await deliver(job("discord", { chatId: "1" }), ctx);
  assert.deepEqual(ctx.waits, [250]);
  assert.equal(discord.messages.length, 1);
});

Deno.test("deliver() discord stops waiting when 429s exceed the budget of one call", async () => {
  await using discord = startFakeDiscord();
  discord.failNext(3, { status: 429, retryAfterSeconds: 2 });
  const ctx = recordingContext(discord.env, { maxRateLimitWaitMs: 5000 });
  const error = await targetError(deliver(job("discord", { chatId: "1" }), ctx));
  assert.deepEqual(ctx.waits, [2000, 2000]);
  assert.equal(error.permanent, false);
  assert.equal(error.retryAfterSeconds, 2);
});

Deno.test("deliver() discord unknown channel is a permanent error with Discord's message", async () => {
  await using discord = startFakeDiscord({ known: ["1"] });
  const error = await targetError(
    deliver(job("discord", { chatId: "2" }), recordingContext(discord.env)),
  );
  assert.equal(error.permanent, true);
  assert.equal(error.status, 404);
  assert.match(error.message, /Unknown Channel/);
  assert.match(error.message, /10003/);
});

Deno.test("deliver() discord with a bad token is permanent and does not show the token", async () => {
  await using discord = startFakeDiscord();
  const env = { ...discord.env, DISCORD_BOT_TOKEN: "not-the-token" };
  const error = await targetError(deliver(job("discord", { chatId: "1" }), recordingContext(env)));
  assert.equal(error.permanent, true);
  assert.equal(error.status, 401);
  assert.ok(!error.message.includes("not-the-token"));
});

Deno.test("deliver() discord 500 is retryable", async () => {
  await using discord = startFakeDiscord();
  discord.failNext(1, { status: 500 });
  const error = await targetError(
    deliver(job("discord", { chatId: "1" }), recordingContext(discord.env)),
  );
  assert.equal(error.permanent, false);
  assert.equal(error.status, 500);
});

Deno.test("deliver() discord refuses a channel id that is not a snowflake, before sending", async () => {
  await using discord = startFakeDiscord();
  const error = await targetError(
    deliver(job("discord", { chatId: "#general" }), recordingContext(discord.env)),
  );
  assert.equal(error.permanent, true);
  assert.equal(discord.requests, 0);
});

Deno.test("deliver() discord without DISCORD_BOT_TOKEN names the variable", async () => {
  const error = await targetError(
    deliver(job("discord", { chatId: "1" }), recordingContext({})),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /DISCORD_BOT_TOKEN/);
});
