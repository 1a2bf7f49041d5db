/**
 * How every target reads the answers a platform (or something in front of it) can give beside
 * the usual ones: redirects, 2xx answers that are not a success, answers cut off, error pages
 * quoting the token (rate limits are in `rate_limits_test.ts`). Each test runs a real loopback
 * server scripted to answer one way.
 */
import assert from "node:assert/strict";
import { deliver } from "../../../lib/targets/mod.ts";
import { startFakeSlack } from "../../fakes/chat_servers.ts";
import { job, recordingContext, scripted, targetError } from "./_context.ts";

const TOKEN = "123456789:AAHsecretTOKENvalueXYZ0123456789abc";

Deno.test("a redirect is a permanent error naming where it points, and is not followed", async () => {
  // fetch would follow a 301 with a GET, which GitLab answers 200 with the list of notes.
  await using gitlab = scripted((request) =>
    request.method === "POST"
      ? new Response(null, {
        status: 301,
        headers: { location: "https://gitlab.example/api/v4/projects/1/issues/2/notes" },
      })
      : Response.json([{ id: 1, body: "an old note" }])
  );
  const env = { GITLAB_URL: gitlab.url, GITLAB_TOKEN: "glpat-token" };
  const error = await targetError(
    deliver(job("gitlab_comment", { chatId: "1#2" }), recordingContext(env)),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /redirected to https:\/\/gitlab\.example\/api\/v4\/projects\/1/);
  assert.match(error.message, /set the API URL to where it points/);
  assert.deepEqual(gitlab.requests, ["POST /api/v4/projects/1/issues/2/notes"]);
});

Deno.test("a token quoted across the 300-character cut of an error page is still removed", async () => {
  await using telegram = scripted(() =>
    new Response(`${"x".repeat(280)} Cannot POST /bot${TOKEN}/sendMessage`, { status: 404 })
  );
  const env = { TELEGRAM_API_URL: telegram.url, TELEGRAM_BOT_TOKEN: TOKEN };
  const error = await targetError(deliver(job("telegram", { chatId: "1" }), recordingContext(env)));
  assert.equal(error.permanent, true);
  assert.doesNotMatch(error.message, /AAHsecret/);
  assert.match(error.message, /Cannot POST \/bot\*\*\*/);
});

Deno.test("Telegram's 200 answers: ok:false is classed by error_code, a non-API body retries", async () => {
  const answers = [
    Response.json({ ok: false, error_code: 400, description: "Bad Request: chat not found" }),
    new Response("<html>proxy login</html>", { headers: { "content-type": "text/html" } }),
    Response.json({ ok: false, error_code: 429, parameters: { retry_after: 3 } }),
    Response.json({ ok: true, result: { message_id: 7 } }),
  ];
  await using telegram = scripted(() => answers.shift()!);
  const env = { TELEGRAM_API_URL: telegram.url, TELEGRAM_BOT_TOKEN: TOKEN };
  const ctx = recordingContext(env);
  const permanent = await targetError(deliver(job("telegram", { chatId: "1" }), ctx));
  assert.equal(permanent.permanent, true);
  assert.match(permanent.message, /chat not found/);
  const retryable = await targetError(deliver(job("telegram", { chatId: "1" }), ctx));
  assert.equal(retryable.permanent, false);
  assert.match(retryable.message, /not a Bot API answer: <html>proxy login/);
  // The 429 inside a 200 is waited out, then the message goes.
  await deliver(job("telegram", { chatId: "1" }), ctx);
  assert.deepEqual(ctx.waits, [3000]);
  assert.equal(telegram.requests.length, 4);
});

Deno.test("an answer cut off after its status line is a retryable error naming the platform", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const connection of listener) {
      await connection.read(new Uint8Array(65_536));
      await connection.write(
        new TextEncoder().encode(
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"ok":',
        ),
      );
      connection.close();
    }
  })();
  const env = {
    TELEGRAM_API_URL: `http://127.0.0.1:${listener.addr.port}`,
    TELEGRAM_BOT_TOKEN: TOKEN,
  };
  const error = await targetError(deliver(job("telegram", { chatId: "1" }), recordingContext(env)));
  listener.close();
  await serving.catch(() => {});
  assert.equal(error.permanent, false);
  assert.match(error.message, /^Telegram sendMessage to chat 1 answered HTTP 200, then failed: /);
  assert.doesNotMatch(error.message, /AAHsecret/);
});

Deno.test("Slack text is escaped, so a payload cannot ping the channel or disguise a link", async () => {
  await using slack = startFakeSlack();
  const text = "Deploy <!channel> & see <https://evil.example|https://github.com/o/r> > now";
  await deliver(job("slack", { chatId: "C1", text }), recordingContext(slack.env));
  assert.equal(
    slack.messages[0].text,
    "Deploy &lt;!channel&gt; &amp; see &lt;https://evil.example|https://github.com/o/r&gt; &gt; now",
  );
});

Deno.test("a redirect whose Location quotes the token, past the cut, shows none of it", async () => {
  await using telegram = scripted(() =>
    new Response(null, {
      status: 307,
      headers: { location: `https://${"a".repeat(270)}.example/bot${TOKEN}/sendMessage` },
    })
  );
  const env = { TELEGRAM_API_URL: telegram.url, TELEGRAM_BOT_TOKEN: TOKEN };
  const error = await targetError(deliver(job("telegram", { chatId: "1" }), recordingContext(env)));
  assert.doesNotMatch(error.message, /AAH|123456789:/);
  assert.ok(error.message.length < 420, `${error.message.length} characters`);
});

Deno.test("a huge 2xx answer that is not the platform's is described in a few hundred characters", async () => {
  await using telegram = scripted(() => Response.json({ result: "y".repeat(100_000) }));
  const env = { TELEGRAM_API_URL: telegram.url, TELEGRAM_BOT_TOKEN: TOKEN };
  const error = await targetError(deliver(job("telegram", { chatId: "1" }), recordingContext(env)));
  assert.match(error.message, /not a Bot API answer/);
  assert.ok(error.message.length < 420, `${error.message.length} characters`);
});

Deno.test("a proxy's login page answered 200 is a retryable failure quoting it, for every target", async () => {
  const page = "<html><body>Corporate proxy: please log in</body></html>";
  await using proxy = scripted(() =>
    new Response(page, { headers: { "content-type": "text/html" } })
  );
  const env = {
    TELEGRAM_API_URL: proxy.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    DISCORD_API_URL: proxy.url,
    DISCORD_BOT_TOKEN: "bot-token",
    SLACK_API_URL: proxy.url,
    SLACK_BOT_TOKEN: "xoxb-token",
    GITHUB_API_URL: proxy.url,
    GITHUB_TOKEN: "ghp-token",
    GITLAB_URL: proxy.url,
    GITLAB_TOKEN: "glpat-token",
  };
  const expected = {
    telegram: ["1", "Telegram sendMessage to chat 1 failed: not a Bot API answer"],
    discord: ["1", "Discord message to channel 1 failed: not a Discord message"],
    slack: ["1", "Slack chat.postMessage to 1 failed: not a Slack Web API answer"],
    github_comment: ["octo/repo#1", "GitHub comment on octo/repo#1 failed: not a GitHub comment"],
    gitlab_comment: ["42!7", "GitLab note on merge request 42!7 failed: not a GitLab note"],
  };
  for (const [target, [chatId, failure]] of Object.entries(expected)) {
    const error = await targetError(deliver(job(target, { chatId }), recordingContext(env)));
    assert.equal(error.message, `${failure}: ${page}`);
    assert.equal(error.permanent, false, `${target}: the message was not sent, a retry may be`);
  }
});

Deno.test("a proxy page that echoes the request URL shows no part of the token", async () => {
  // The token would straddle a cut at 100 characters, made before it was taken out.
  const page = `<html>${
    "x".repeat(60)
  } continue to https://api.telegram.org/bot${TOKEN}/sendMessage`;
  await using proxy = scripted(() =>
    new Response(page, { headers: { "content-type": "text/html" } })
  );
  const env = { TELEGRAM_API_URL: proxy.url, TELEGRAM_BOT_TOKEN: TOKEN };
  const error = await targetError(deliver(job("telegram", { chatId: "1" }), recordingContext(env)));
  assert.match(error.message, /continue to https:\/\/api\.telegram\.org\/bot\*\*\*\/sendMessage$/);
  assert.ok(!error.message.includes(TOKEN.slice(0, 8)), error.message);
});

Deno.test("Discord's 200 without a message id (JSON, but not a created message) is not taken for a delivery", async () => {
  await using discord = scripted(() => Response.json({ status: "ok" }));
  const env = { DISCORD_API_URL: discord.url, DISCORD_BOT_TOKEN: "bot-token" };
  const error = await targetError(deliver(job("discord", { chatId: "1" }), recordingContext(env)));
  assert.equal(error.permanent, false);
  assert.match(error.message, /not a Discord message: \{"status":"ok"\}$/);
});
