/**
 * How much of a platform's answer the gateway reads: enough for any real answer (a GitLab note
 * echoing a 1,000,000-character comment), never a misbehaving server's hundreds of megabytes.
 * Each test runs a real loopback server.
 */
import assert from "node:assert/strict";
import { deliver } from "../../../lib/targets/mod.ts";
import { startFakeGitLab } from "../../fakes/chat_servers.ts";
import { job, recordingContext, scripted, targetError } from "./_context.ts";
import { OWN_COMMENT_MARKER } from "../../../lib/targets/own_comments.ts";

const TOKEN = "123456789:AAHsecretTOKENvalueXYZ0123456789abc";
const MiB = 1_048_576;

/**
 * A body of `totalBytes` bytes of `x`, made 64 KiB at a time as the client reads it. `sent`
 * counts the bytes handed to the server so far; `finished` resolves once the body was sent
 * whole or cancelled.
 */
function streamedBody(totalBytes: number) {
  const chunk = new TextEncoder().encode("x".repeat(65_536));
  let settle!: () => void;
  const finished = new Promise<void>((resolve) => settle = resolve);
  const progress = { sent: 0, finished };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (progress.sent >= totalBytes) {
        controller.close();
        settle();
        return;
      }
      controller.enqueue(chunk);
      progress.sent += chunk.byteLength;
    },
    cancel: () => settle(),
  });
  return { body, progress };
}

Deno.test("a 200 answer of 64 MiB is refused after about 1 MiB, and the rest is never read", async () => {
  const { body, progress } = streamedBody(64 * MiB);
  await using telegram = scripted(() => new Response(body, { status: 200 }));
  const env = { TELEGRAM_API_URL: telegram.url, TELEGRAM_BOT_TOKEN: TOKEN };
  const error = await targetError(
    deliver(job("telegram", { chatId: "42" }), recordingContext(env)),
  );
  assert.match(
    error.message,
    /^Telegram sendMessage to chat 42 answered HTTP 200 with more than 10\d\d KiB, which is not a Telegram answer: the rest was not read$/,
  );
  assert.equal(error.permanent, false, "something in between answered: a retry may get through");
  await progress.finished;
  // What the server pushed out before it saw the cancel: socket buffers, not the whole body.
  assert.ok(progress.sent < 16 * MiB, `${progress.sent / MiB} MiB sent`);
});

Deno.test("a 502 error page of 64 MiB is still a retryable 502, described by its beginning", async () => {
  const { body, progress } = streamedBody(64 * MiB);
  await using discord = scripted(() => new Response(body, { status: 502 }));
  const env = { DISCORD_API_URL: discord.url, DISCORD_BOT_TOKEN: "bot-token" };
  const error = await targetError(deliver(job("discord", { chatId: "1" }), recordingContext(env)));
  assert.equal(error.permanent, false);
  assert.equal(error.status, 502);
  assert.match(error.message, /^Discord message to channel 1 failed \(HTTP 502\): x{300}…$/);
  await progress.finished;
  assert.ok(progress.sent < 16 * MiB, `${progress.sent / MiB} MiB sent`);
});

Deno.test("a GitLab note as long as GitLab takes (1,000,000 characters with the marker), two bytes each and echoed in the answer (2 MB), is delivered", async () => {
  await using gitlab = startFakeGitLab();
  const text = "é".repeat(1_000_000 - OWN_COMMENT_MARKER.length);
  const receipt = await deliver(
    job("gitlab_comment", { chatId: "1#2", text }),
    recordingContext(gitlab.env),
  );
  assert.equal(receipt.parts, 1);
  assert.equal(gitlab.messages[0].text, text + OWN_COMMENT_MARKER);
});
