/**
 * What `deliver()` reports of each part it sends: the target, the destination, and the message's
 * id (and link) as each platform answered it, read from the loopback fakes' real answer shapes.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  deliver,
  type DeliveryJob,
  type SentPart,
  splitMessage,
} from "../../../lib/targets/mod.ts";
import {
  startFakeDiscord,
  startFakeGitHub,
  startFakeGitLab,
  startFakeSlack,
  startFakeTelegram,
} from "../../fakes/chat_servers.ts";
import { githubExample, job, longText, recordingContext } from "./_context.ts";

/** Delivers `text` to `target` and returns what `onPartSent` was told of each part. */
async function sentParts(
  target: string,
  options: Partial<DeliveryJob> & { env: Record<string, string> },
): Promise<{ partsSent: number; parts: number; sent: SentPart }[]> {
  const reported: { partsSent: number; parts: number; sent: SentPart }[] = [];
  const { env, ...fields } = options;
  await deliver(job(target, fields), recordingContext(env), (partsSent, parts, sent) => {
    reported.push({ partsSent, parts, sent });
  });
  return reported;
}

Deno.test("deliver() reports each Telegram part's message_id, in order", async () => {
  await using telegram = startFakeTelegram();
  const text = longText(40);
  const count = splitMessage(text, 4096).length;
  const reported = await sentParts("telegram", { env: telegram.env, chatId: "-100:7", text });
  assert.ok(count >= 3);
  assert.deepEqual(
    reported,
    Array.from({ length: count }, (_, i) => ({
      partsSent: i + 1,
      parts: count,
      sent: { target: "telegram", destination: "-100:7", messageId: String(i + 1) },
    })),
  );
});

Deno.test("deliver() reports a Slack message's ts and a Discord message's id", async () => {
  await using slack = startFakeSlack();
  await using discord = startFakeDiscord();
  const [fromSlack] = await sentParts("slack", { env: slack.env, chatId: "C0123" });
  assert.deepEqual(fromSlack.sent, {
    target: "slack",
    destination: "C0123",
    messageId: "1700000000.000001",
  });
  const [fromDiscord] = await sentParts("discord", { env: discord.env, chatId: "42" });
  assert.deepEqual(fromDiscord.sent, { target: "discord", destination: "42", messageId: "1" });
});

Deno.test("deliver() reports a GitHub comment's id and html_url, and a GitLab note's id", async () => {
  await using github = startFakeGitHub();
  await using gitlab = startFakeGitLab();
  const [comment] = await sentParts("github_comment", {
    env: github.env,
    chatId: "octo/repo#12",
  });
  assert.deepEqual(comment.sent, {
    target: "github_comment",
    destination: "octo/repo#12",
    messageId: "1",
    url: "https://github.com/octo/repo/issues/12#issuecomment-1",
  });
  const [note] = await sentParts("gitlab_comment", { env: gitlab.env, chatId: "group/app!3" });
  assert.deepEqual(note.sent, {
    target: "gitlab_comment",
    destination: "group/app!3",
    messageId: "1",
  });
});

Deno.test("deliver() names the target origin picked, and no message id for the log", async () => {
  await using github = startFakeGitHub();
  const payload = githubExample("issues", "opened");
  const [reply] = await sentParts("origin", { env: github.env, payload, source: "github" });
  assert.equal(reply.sent.target, "github_comment");
  assert.equal(reply.sent.messageId, "1");
  const [logged] = await sentParts("log", { env: {} });
  assert.deepEqual(logged.sent, { target: "log", destination: "gateway log" });
});
