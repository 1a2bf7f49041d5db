/**
 * How every target waits out a platform's rate limit, and tells one from a refusal: GitHub's
 * 403 and 429 shapes, other platforms' 403 with an empty bucket, Retry-After on a 5xx, absurd
 * waits. Each test runs a real loopback server scripted to answer one way.
 */
import assert from "node:assert/strict";
import { retryDelayMs } from "../../../lib/worker/retry.ts";
import { deliver } from "../../../lib/targets/mod.ts";
import { job, recordingContext, scripted, targetError } from "./_context.ts";

const TOKEN = "123456789:AAHsecretTOKENvalueXYZ0123456789abc";

Deno.test("GitHub's secondary rate limit (403 with retry-after) is waited out, not failed", async () => {
  let answered = 0;
  await using github = scripted(() =>
    answered++ === 0
      ? Response.json(
        { message: "You have exceeded a secondary rate limit" },
        { status: 403, headers: { "retry-after": "2", "x-ratelimit-remaining": "4000" } },
      )
      : Response.json({ id: 1 }, { status: 201 })
  );
  const ctx = recordingContext({ GITHUB_API_URL: github.url, GITHUB_TOKEN: "ghp_token" });
  await deliver(job("github_comment", { chatId: "o/r#1" }), ctx);
  assert.deepEqual(ctx.waits, [2000]);
  assert.equal(github.requests.length, 2);
});

for (const status of [403, 429]) {
  Deno.test(`GitHub's primary rate limit (${status}) retries at x-ratelimit-reset, not at once`, async () => {
    const reset = Math.ceil(Date.now() / 1000) + 3000;
    await using github = scripted(() =>
      Response.json({ message: "API rate limit exceeded" }, {
        status,
        headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) },
      })
    );
    const ctx = recordingContext({ GITHUB_API_URL: github.url, GITHUB_TOKEN: "ghp_token" });
    const error = await targetError(deliver(job("github_comment", { chatId: "o/r#1" }), ctx));
    assert.equal(error.permanent, false);
    assert.ok(
      error.retryAfterSeconds! >= 2990 && error.retryAfterSeconds! <= 3001,
      `${error.retryAfterSeconds}`,
    );
    assert.equal(github.requests.length, 1, "no retries in place against a limit an hour long");
  });
}

for (const status of [403, 429]) {
  Deno.test(`GitHub's secondary rate limit (${status}) that names no wait is retried after a minute, not failed or retried at once`, async () => {
    await using github = scripted(() =>
      Response.json(
        { message: "You have exceeded a secondary rate limit. Please wait a few minutes." },
        { status, headers: { "x-ratelimit-remaining": "4987" } },
      )
    );
    const ctx = recordingContext({ GITHUB_API_URL: github.url, GITHUB_TOKEN: "ghp_token" });
    const error = await targetError(deliver(job("github_comment", { chatId: "o/r#1" }), ctx));
    assert.equal(error.permanent, false);
    assert.equal(error.retryAfterSeconds, 60);
    assert.equal(github.requests.length, 1, "no retries in place");
  });
}

Deno.test("Discord's 403 Missing Permissions, sent with x-ratelimit-remaining 0, is a permanent refusal, not a rate limit", async () => {
  // What Discord sends a bot that may not post in the channel: its bucket headers come along.
  const reset = Math.ceil(Date.now() / 1000) + 40;
  await using discord = scripted(() =>
    Response.json({ message: "Missing Permissions", code: 50013 }, {
      status: 403,
      headers: {
        "x-ratelimit-limit": "5",
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": `${reset}.250`,
        "x-ratelimit-reset-after": "4.250",
        "x-ratelimit-bucket": "abcd",
      },
    })
  );
  const ctx = recordingContext({ DISCORD_API_URL: discord.url, DISCORD_BOT_TOKEN: "bot-token" });
  const error = await targetError(deliver(job("discord", { chatId: "123" }), ctx));
  assert.equal(error.permanent, true);
  assert.equal(error.retryAfterSeconds, undefined);
  assert.equal(
    error.message,
    "Discord message to channel 123 failed (HTTP 403): Missing Permissions; code 50013",
  );
  assert.deepEqual(ctx.waits, []);
  assert.equal(discord.requests.length, 1);
});

for (const target of ["gitlab_comment", "telegram", "slack"]) {
  Deno.test(`a ${target} 403 with Retry-After and x-ratelimit-remaining 0 is a refusal: only GitHub limits with 403`, async () => {
    await using platform = scripted(() =>
      Response.json({ message: "403 Forbidden" }, {
        status: 403,
        headers: { "retry-after": "30", "x-ratelimit-remaining": "0" },
      })
    );
    const env = {
      GITLAB_URL: platform.url,
      GITLAB_TOKEN: "glpat-token",
      TELEGRAM_API_URL: platform.url,
      TELEGRAM_BOT_TOKEN: TOKEN,
      SLACK_API_URL: platform.url,
      SLACK_BOT_TOKEN: "xoxb-token",
    };
    const ctx = recordingContext(env);
    const chatId = target === "gitlab_comment" ? "1#2" : "12";
    const error = await targetError(deliver(job(target, { chatId }), ctx));
    assert.equal(error.permanent, true);
    assert.equal(error.retryAfterSeconds, undefined);
    assert.match(error.message, /\(HTTP 403\): 403 Forbidden$/);
    assert.deepEqual(ctx.waits, []);
  });
}

Deno.test("a 503 with Retry-After (maintenance) is retried no sooner than it asks", async () => {
  await using telegram = scripted(() =>
    new Response("Service Unavailable", { status: 503, headers: { "retry-after": "30" } })
  );
  const env = { TELEGRAM_API_URL: telegram.url, TELEGRAM_BOT_TOKEN: TOKEN };
  const error = await targetError(
    deliver(job("telegram", { chatId: "42" }), recordingContext(env)),
  );
  assert.equal(error.permanent, false);
  assert.equal(error.retryAfterSeconds, 30);
  assert.match(error.message, /HTTP 503/);
});

Deno.test("an absurd wait (retry_after 1e308) is read as one week, so the retry still comes", async () => {
  await using discord = scripted(() =>
    Response.json({ message: "You are being rate limited.", retry_after: 1e308 }, { status: 429 })
  );
  const env = { DISCORD_API_URL: discord.url, DISCORD_BOT_TOKEN: "bot-token" };
  const error = await targetError(deliver(job("discord", { chatId: "1" }), recordingContext(env)));
  assert.equal(error.retryAfterSeconds, 604_800);
  const delayMs = retryDelayMs(1, {
    initialDelayMs: 10_000,
    maxDelayMs: 3_600_000,
    random: () => 0,
    retryAfterSeconds: 1e26,
  });
  assert.equal(delayMs, 604_800_000);
});
