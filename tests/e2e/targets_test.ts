/**
 * End to end, in process: a signed webhook POST to the real gateway (`startGateway` on port 0)
 * reaches every delivery target, in agent mode (through a loopback OpenAI-compatible endpoint)
 * and in direct mode, and `origin` answers GitHub, GitLab and other senders where they belong.
 * An agent's Markdown arrives in each chat's formatting; a direct message as written, unless its
 * subscription says `--format markdown`. Loopback fakes play Telegram, Discord, Slack, GitHub and
 * GitLab; GitHub payloads come from `@octokit/webhooks-examples` and are signed by
 * `@octokit/webhooks-methods`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { loadConfig } from "../../lib/config/mod.ts";
import type { StoredEvent } from "../../lib/state/mod.ts";
import type { Subscription } from "../../lib/subscriptions/mod.ts";
import { OWN_COMMENT_MARKER } from "../../lib/targets/own_comments.ts";
import { startGateway } from "../../server/gateway.ts";
import { webhookSubscribe } from "../../commands/webhook_subscribe.ts";
import { enabledConfig, eventually, fakeContext, tempHome } from "../_helpers.ts";
import {
  type FakePlatform,
  type PlatformKind,
  type ReceivedMessage,
  startFakePlatform,
} from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { startFakeLlm } from "../fakes/llm_server.ts";
import { parseTelegramHtml } from "../fakes/telegram_entities.ts";

const KINDS: PlatformKind[] = ["telegram", "discord", "slack", "github", "gitlab"];
const HOME_CHAT = "5555";

/** An event as its sender signs it: GitHub HMAC, GitLab token, or a Bearer token. */
type Sent =
  | { sender: "github"; event: string; payload: Record<string, unknown> }
  | { sender: "gitlab" | "bearer"; payload: Record<string, unknown>; event?: string };

const ISSUE = githubExample("issues", "opened");
const PULL = githubExample("pull_request", "opened");
const REPO = (ISSUE.repository as { full_name: string }).full_name;
const ISSUE_OPENED: Sent = { sender: "github", event: "issues", payload: ISSUE };
const PULL_OPENED: Sent = { sender: "github", event: "pull_request", payload: PULL };
const PUSH: Sent = { sender: "github", event: "push", payload: githubExample("push") };
const MERGE_REQUEST: Sent = {
  sender: "gitlab",
  payload: {
    object_kind: "merge_request",
    project: { id: 42, path_with_namespace: "group/project" },
    object_attributes: { iid: 7, title: "Cache the build", action: "open" },
  },
};
const ALERT: Sent = {
  sender: "bearer",
  payload: { event_type: "alert", alert: { name: "DiskFull", severity: "critical" } },
};

/** 5,000-odd characters of Markdown: paragraphs, then a code fence too long for one part. */
const LONG_ANSWER = [
  "# Incident report",
  ...Array.from({ length: 12 }, (_, i) => `Paragraph ${i + 1}: ${"the disk is full. ".repeat(8)}`),
  ["```ts", ...Array.from({ length: 64 }, (_, i) => `const line${i} = "${"x".repeat(30)}";`), "```"]
    .join("\n"),
  "Done.",
].map((block) => block.trim()).join("\n\n");

const secretOf = (name: string) => `secret-of-${name}`;

/** Starts the fakes, the fake LLM and the gateway with these subscriptions in a fresh home. */
async function startWorld(subscriptions: Record<string, Subscription>, { extra = "" } = {}) {
  const home = await tempHome({ config: enabledConfig(0, extra) });
  const fakes = {} as Record<PlatformKind, FakePlatform>;
  for (const kind of KINDS) fakes[kind] = startFakePlatform(kind);
  const llm = await startFakeLlm({
    answer: ({ messages }) => {
      const prompt = messages.at(-1)?.content ?? "";
      return prompt.startsWith("LONG") ? LONG_ANSWER : `Answer: ${prompt}`;
    },
  });
  const records = Object.fromEntries(
    Object.entries(subscriptions).map(([name, sub]) => [name, { secret: secretOf(name), ...sub }]),
  );
  await Deno.writeTextFile(join(home.home, "webhook_subscriptions.json"), JSON.stringify(records));
  const env = {
    AGENT_HOME: home.home,
    HOME: "/nonexistent",
    ...Object.assign({}, ...KINDS.map((kind) => fakes[kind].env)),
    TELEGRAM_HOME_CHANNEL: HOME_CHAT,
    ...llm.env,
  };
  const config = await loadConfig(env);
  const gateway = await startGateway(config);
  return {
    gateway,
    fakes,
    /** The environment the gateway was configured with, for CLI commands on the same home. */
    env,
    /**
     * POSTs `sent` to `/webhooks/<name>`, authenticated with that subscription's secret, with
     * a fresh delivery id unless one is given.
     */
    post: (name: string, sent: Sent, deliveryId?: string) =>
      post(`${gateway.url}/webhooks/${name}`, secretOf(name), sent, deliveryId),
    /** Waits until an agent-mode event is delivered or failed. */
    settled: (eventId: unknown): Promise<StoredEvent> =>
      eventually(async () => {
        const event = await gateway.store.getEvent(String(eventId));
        return event?.status === "delivered" || event?.status === "failed" ? event : null;
      }, { what: `event ${eventId} to be delivered or failed` }),
    async [Symbol.asyncDispose]() {
      await gateway.stop();
      await llm.close();
      await Promise.all(KINDS.map((kind) => fakes[kind].close()));
      await home[Symbol.asyncDispose]();
    },
  };
}

async function post(
  url: string,
  secret: string,
  sent: Sent,
  deliveryId: string = crypto.randomUUID(),
) {
  const body = JSON.stringify(sent.payload);
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (sent.sender === "github") {
    headers["x-github-event"] = sent.event;
    headers["x-github-delivery"] = deliveryId;
    headers["x-hub-signature-256"] = await sign(secret, body);
  } else if (sent.sender === "gitlab") {
    headers["x-gitlab-event"] = sent.event ?? "Merge Request Hook";
    headers["x-gitlab-event-uuid"] = deliveryId;
    headers["x-gitlab-token"] = secret;
  } else {
    headers.authorization = `Bearer ${secret}`;
  }
  const response = await fetch(url, { method: "POST", headers, body });
  return {
    status: response.status,
    headers: response.headers,
    body: await response.json() as Record<string, unknown>,
  };
}

/**
 * Each target, the event it is sent, and the platform call it must make: `to` as the fake
 * records it, path, headers (`<token>` stands for the fake's token) and the JSON body whose
 * `textField` holds the message.
 */
interface TargetCase {
  target: string;
  kind: PlatformKind;
  chatId?: string;
  sent: Sent;
  to: string;
  path: string;
  headers: Record<string, string | RegExp>;
  body: Record<string, unknown>;
  textField: string;
  /** Added to `body` for an agent's answer (Markdown): Telegram's `parse_mode`. */
  markdownBody?: Record<string, unknown>;
  /** Added to `body` for a direct message (plain text): Slack's `mrkdwn: false`. */
  plainBody?: Record<string, unknown>;
}

const CASES: TargetCase[] = [
  {
    target: "telegram",
    kind: "telegram",
    chatId: "4242",
    sent: ISSUE_OPENED,
    to: "4242",
    path: "/bot<token>/sendMessage",
    headers: {},
    body: { chat_id: "4242" },
    textField: "text",
    markdownBody: { parse_mode: "HTML" },
  },
  {
    target: "discord",
    kind: "discord",
    chatId: "111222333",
    sent: ISSUE_OPENED,
    to: "111222333",
    path: "/api/v10/channels/111222333/messages",
    headers: { authorization: "Bot <token>", "user-agent": /^DiscordBot \(.+, .+\)$/ },
    body: { allowed_mentions: { parse: [] } },
    textField: "content",
  },
  {
    target: "slack",
    kind: "slack",
    chatId: "C0123",
    sent: ISSUE_OPENED,
    to: "C0123",
    path: "/api/chat.postMessage",
    headers: { authorization: "Bearer <token>" },
    body: { channel: "C0123" },
    textField: "text",
    plainBody: { mrkdwn: false },
  },
  {
    target: "github_comment",
    kind: "github",
    sent: ISSUE_OPENED,
    to: `${REPO}#1`,
    path: `/repos/${REPO}/issues/1/comments`,
    headers: { authorization: "Bearer <token>", "user-agent": /./, accept: /github/ },
    body: {},
    textField: "body",
  },
  {
    target: "gitlab_comment",
    kind: "gitlab",
    sent: MERGE_REQUEST,
    to: "42!7",
    path: "/api/v4/projects/42/merge_requests/7/notes",
    headers: { "private-token": "<token>" },
    body: {},
    textField: "body",
  },
];

/**
 * Asserts one recorded platform call: destination, path, auth headers and the exact body, with
 * `extraBody` (Telegram's `parse_mode` for Markdown).
 */
function assertCall(
  c: TargetCase,
  fake: FakePlatform,
  message: ReceivedMessage,
  { text, extraBody = {} }: { text: string; extraBody?: Record<string, unknown> },
) {
  const withToken = (value: string) => value.replace("<token>", fake.token);
  assert.equal(message.to, c.to);
  assert.equal(message.path, withToken(c.path));
  for (const [name, expected] of Object.entries(c.headers)) {
    if (expected instanceof RegExp) assert.match(message.headers[name] ?? "", expected, name);
    else assert.equal(message.headers[name], withToken(expected), name);
  }
  assert.deepEqual(message.body, { ...c.body, ...extraBody, [c.textField]: posted(c, text) });
}

/** The text a platform receives: a comment ends with the gateway's marker. */
const posted = (c: TargetCase, text: string) =>
  c.kind === "github" || c.kind === "gitlab" ? text + OWN_COMMENT_MARKER : text;

const label = (sent: Sent) => sent.sender === "github" ? `${sent.event}.opened` : "merge_request";

for (const c of CASES) {
  Deno.test(`${c.target}: an agent answer arrives (202), a direct message gets 200, 502 on a 500, 429 waited out`, async (t) => {
    const chat = c.chatId === undefined ? {} : { deliver_extra: { chat_id: c.chatId } };
    const prompt = "{__event__} via {__subscription__}";
    await using world = await startWorld({
      agent: { deliver: c.target, ...chat, prompt: `Summarise ${prompt}` },
      direct: { deliver: c.target, ...chat, prompt: `Direct ${prompt}`, deliver_only: true },
    });
    const fake = world.fakes[c.kind];

    await t.step("agent mode: 202, then the LLM's answer at the platform", async () => {
      const { status, body } = await world.post("agent", c.sent);
      assert.equal(status, 202, JSON.stringify(body));
      assert.equal(body.status, "accepted");
      const event = await world.settled(body.event_id);
      assert.equal(event.status, "delivered", event.lastError ?? "");
      assert.equal(fake.messages.length, 1);
      assertCall(c, fake, fake.messages[0], {
        text: `Answer: Summarise ${label(c.sent)} via agent`,
        extraBody: c.markdownBody,
      });
    });

    await t.step("direct mode: 200 and the rendered template arrives", async () => {
      const { status, body } = await world.post("direct", c.sent);
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.status, "delivered");
      assertCall(c, fake, fake.messages.at(-1)!, {
        text: `Direct ${label(c.sent)} via direct`,
        extraBody: c.plainBody,
      });
    });

    await t.step("direct mode: the platform failing with 500 gets the sender a 502", async () => {
      const before = fake.messages.length;
      fake.failNext(1, { status: 500 });
      const { status, body } = await world.post("direct", c.sent);
      assert.equal(status, 502);
      assert.equal(body.error, "delivery failed");
      assert.doesNotMatch(JSON.stringify(body), new RegExp(fake.token));
      assert.equal(fake.messages.length, before);
    });

    await t.step("direct mode: a 429 with retry_after 1 is waited out, then 200", async () => {
      const requests = fake.requests;
      fake.failNext(1, { status: 429, retryAfterSeconds: 1 });
      const started = performance.now();
      const { status } = await world.post("direct", c.sent);
      assert.equal(status, 200);
      assert.ok(performance.now() - started >= 950, "the gateway waited retry_after");
      assert.equal(fake.requests, requests + 2);
      assert.equal(fake.messages.at(-1)!.text, posted(c, `Direct ${label(c.sent)} via direct`));
    });
  });
}

Deno.test("direct mode: the sender's retry of a 502 resumes after the parts already delivered", async () => {
  await using world = await startWorld({
    long: {
      deliver: "telegram",
      deliver_extra: { chat_id: "4242" },
      prompt: "{issue.body}",
      deliver_only: true,
    },
  });
  const fake = world.fakes.telegram;
  const issue = { ...(ISSUE.issue as Record<string, unknown>), body: LONG_ANSWER };
  const sent: Sent = { sender: "github", event: "issues", payload: { ...ISSUE, issue } };
  const deliveryId = crypto.randomUUID();
  fake.failNext(1, { status: 500 }, { after: 1 }); // part 1 goes out, part 2 fails

  const first = await world.post("long", sent, deliveryId);
  assert.equal(first.status, 502, JSON.stringify(first.body));
  assert.equal(fake.messages.length, 1, "part 1 was delivered");
  const retry = await world.post("long", sent, deliveryId);
  assert.equal(retry.status, 200, JSON.stringify(retry.body));

  const texts = fake.messages.map((message) => String(message.text));
  assert.deepEqual(
    texts.map((text) => text.slice(0, 5)),
    ["(1/2)", "(2/2)"],
    "part 1 once, then part 2",
  );
  assert.ok(texts[1].endsWith("Done."));
  const again = await world.post("long", sent, deliveryId);
  assert.equal(again.body.status, "duplicate", "delivered: the id is now taken");
  assert.equal(fake.messages.length, 2);
});

Deno.test("direct mode: a platform's rate limit longer than the gateway waits is passed on as Retry-After", async () => {
  await using world = await startWorld({
    direct: { deliver: "telegram", deliver_extra: { chat_id: "4242" }, deliver_only: true },
  });
  world.fakes.telegram.failNext(1, { status: 429, retryAfterSeconds: 40 });
  const { status, headers, body } = await world.post("direct", ISSUE_OPENED);
  assert.equal(status, 502, JSON.stringify(body));
  assert.equal(headers.get("retry-after"), "40");
  const plain = await world.post("direct", ISSUE_OPENED);
  assert.equal(plain.status, 200, "the next request goes through");
  world.fakes.telegram.failNext(1, { status: 500 });
  const failed = await world.post("direct", ISSUE_OPENED);
  assert.equal(failed.status, 502);
  assert.equal(failed.headers.get("retry-after"), null, "a 500 names no wait");
});

Deno.test("origin answers a GitHub issue or pull request with a comment, a GitLab merge request with a note, others at extra.home", async () => {
  await using world = await startWorld(
    { origin: { deliver: "origin", prompt: "Reply to {__event__}" } },
    { extra: "      home: telegram:9001\n" },
  );
  const sends: [Sent, PlatformKind, string, string][] = [
    [ISSUE_OPENED, "github", `/repos/${REPO}/issues/1/comments`, "issues.opened"],
    [PULL_OPENED, "github", `/repos/${REPO}/issues/2/comments`, "pull_request.opened"],
    [MERGE_REQUEST, "gitlab", "/api/v4/projects/42/merge_requests/7/notes", "merge_request"],
    [ALERT, "telegram", `/bot${world.fakes.telegram.token}/sendMessage`, "alert"],
  ];
  for (const [sent, kind, path, event] of sends) {
    const { status, body } = await world.post("origin", sent);
    assert.equal(status, 202, JSON.stringify(body));
    const stored = await world.settled(body.event_id);
    assert.equal(stored.status, "delivered", stored.lastError ?? "");
    const message = world.fakes[kind].messages.at(-1)!;
    assert.equal(message.path, path);
    const marker = kind === "telegram" ? "" : OWN_COMMENT_MARKER;
    assert.equal(message.text, `Answer: Reply to ${event}${marker}`);
  }
  assert.equal(world.fakes.github.messages.length, 2);
  assert.equal(world.fakes.telegram.messages[0].to, "9001");
});

Deno.test("a comment the gateway posted is not answered again when GitHub or GitLab sends its event back", async () => {
  await using world = await startWorld({
    answers: { deliver: "origin", events: ["issue_comment"], prompt: "Reply to {comment.body}" },
    notes: { deliver: "gitlab_comment", prompt: "Reply to {object_attributes.note}" },
    // Forwards comments to a chat: it posts none, so it still gets the gateway's own.
    watch: { deliver: "telegram", deliver_extra: { chat_id: "77" }, events: ["issue_comment"] },
  });
  const comment = githubExample("issue_comment", "created") as { comment: { body: string } };
  const first = await world.post("answers", {
    sender: "github",
    event: "issue_comment",
    payload: comment,
  });
  assert.equal(first.status, 202);
  assert.equal((await world.settled(first.body.event_id)).status, "delivered");
  const posted = world.fakes.github.messages[0].text;
  assert.ok(posted.endsWith("\n\n<!-- posted by the agent webhook gateway -->"), posted);
  // What GitHub sends for the comment the gateway just posted.
  const echo: Sent = {
    sender: "github",
    event: "issue_comment",
    payload: { ...comment, comment: { ...comment.comment, body: posted } },
  };
  assert.deepEqual(await world.post("answers", echo).then(({ status, body }) => [status, body]), [
    200,
    { status: "ignored", event: "issue_comment.created", reason: "the gateway's own comment" },
  ]);
  assert.equal((await world.post("watch", echo)).status, 202);
  // A person's reply that quotes the marker is answered, as is one ending with the marker
  // that the forge stored with \r\n line ends.
  const quoting: Sent = {
    ...echo,
    payload: { ...comment, comment: { ...comment.comment, body: `> ${posted}\n\nStill broken` } },
  };
  assert.equal((await world.post("answers", quoting)).status, 202);
  const crlf: Sent = {
    ...echo,
    payload: { ...comment, comment: { ...comment.comment, body: posted.replaceAll("\n", "\r\n") } },
  };
  assert.equal((await world.post("answers", crlf)).body.status, "ignored");

  const note = (text: string): Sent => ({
    sender: "gitlab",
    event: "Note Hook",
    payload: {
      object_kind: "note",
      project: { id: 42, path_with_namespace: "group/project" },
      object_attributes: { note: text, noteable_type: "MergeRequest" },
      merge_request: { iid: 7 },
    },
  });
  const asked = await world.post("notes", note("Why does the build fail?"));
  assert.equal(asked.status, 202);
  assert.equal((await world.settled(asked.body.event_id)).status, "delivered");
  const noted = world.fakes.gitlab.messages[0].text;
  assert.equal((await world.post("notes", note(noted))).body.status, "ignored");

  await eventually(() => world.fakes.telegram.messages.length === 1, { what: "the forward" });
  // Nothing more was run or posted: the comment, the answer to the quoting reply, one note.
  await eventually(() => world.fakes.github.messages.length === 2, { what: "the second answer" });
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(world.fakes.github.messages.length, 2);
  assert.equal(world.fakes.gitlab.messages.length, 1);
  assert.equal((await world.gateway.store.listEvents({})).length, 4);
});

Deno.test("a NUL in a payload value does not cut the prompt the agent gets, nor a replay's", async () => {
  await using world = await startWorld({
    agent: {
      deliver: "telegram",
      deliver_extra: { chat_id: "4242" },
      prompt: "Title: {issue.title} -- never run shell commands. END",
    },
  });
  const issue = { ...(ISSUE.issue as Record<string, unknown>), title: "harmless\u0000 (rest)" };
  const sent: Sent = { sender: "github", event: "issues", payload: { ...ISSUE, issue } };
  const { body } = await world.post("agent", sent);
  assert.equal((await world.settled(body.event_id)).status, "delivered");
  const whole = "Answer: Title: harmless\uFFFD (rest) -- never run shell commands. END";
  assert.equal(world.fakes.telegram.messages[0].text, whole);
  await world.gateway.store.replay(String(body.event_id), Date.now());
  await eventually(() => world.fakes.telegram.messages.length === 2, { what: "the replay" });
  assert.equal(world.fakes.telegram.messages[1].text, whole);
});

Deno.test("origin without extra.home fails an event that has no place to reply to, and says why", async () => {
  await using world = await startWorld({ origin: { deliver: "origin" } });
  const reasons = [
    [ALERT, /"other" senders have no place to reply to.*no home target is configured/],
    [PUSH, /GitHub "push" event has no issue or pull request.*no home target/],
  ] as const;
  for (const [sent, reason] of reasons) {
    const { status, body } = await world.post("origin", sent);
    assert.equal(status, 202);
    const stored = await world.settled(body.event_id);
    assert.equal(stored.status, "failed");
    assert.match(stored.lastError ?? "", reason);
  }
  const failed = (await world.gateway.store.listEvents({})).filter((event) =>
    event.status === "failed"
  );
  assert.equal(failed.length, 2);
  assert.equal(world.fakes.telegram.requests, 0);
});

Deno.test("a long Markdown answer arrives at Telegram, Slack and Discord in numbered parts, each valid and within its limit", async () => {
  await using world = await startWorld({
    "long-tg": { deliver: "telegram", deliver_extra: { chat_id: "4242" }, prompt: "LONG" },
    "long-sl": { deliver: "slack", deliver_extra: { chat_id: "C0123" }, prompt: "LONG" },
    "long-dc": { deliver: "discord", deliver_extra: { chat_id: "111222333" }, prompt: "LONG" },
  });
  assert.ok(LONG_ANSWER.length >= 5000 && LONG_ANSWER.includes("```ts\n"));
  const chats = [["long-tg", "telegram", 4096], ["long-sl", "slack", 4000], [
    "long-dc",
    "discord",
    2000,
  ]] as const;
  for (const [name, kind, limit] of chats) {
    const { body } = await world.post(name, ISSUE_OPENED);
    const stored = await world.settled(body.event_id);
    assert.equal(stored.status, "delivered", stored.lastError ?? "");
    const messages = world.fakes[kind].messages;
    // What a reader sees: Telegram's text after its HTML is read.
    const parts = messages.map((message) => message.shown ?? message.text);
    assert.ok(parts.length >= Math.ceil(LONG_ANSWER.length / limit), `${kind} parts`);
    assert.equal(stored.partsSent, parts.length);
    parts.forEach((part, i) => {
      assert.ok(part.length <= limit, `${kind} part ${i + 1} is within the limit`);
      assert.ok(part.startsWith(`(${i + 1}/${parts.length})`), `${kind} part ${i + 1} numbered`);
      const fences = part.split("\n").filter((line) => line.startsWith("```")).length;
      assert.equal(fences % 2, 0, `${kind} part ${i + 1} has balanced code fences`);
    });
    if (kind === "telegram") {
      for (const { text, body } of messages) {
        assert.equal(body.parse_mode, "HTML");
        assert.ok("text" in parseTelegramHtml(text), "each part's tags are balanced");
      }
      // The code block fits in a part: it goes whole to one, rather than cut where a part ends.
      const blocks = messages.filter(({ text }) =>
        text.includes('<pre><code class="language-ts">')
      );
      assert.equal(blocks.length, 1);
      assert.equal(blocks[0].text.match(/const line\d+ = /g)?.length, 64);
      assert.ok(parts[0].includes("Incident report") && !parts[0].includes("# "), "the heading");
    } else {
      const reopened = kind === "discord" ? /^\(\d+\/\d+\)\n```ts\n/ : /^\(\d+\/\d+\)\n```\n/;
      assert.ok(parts.some((part) => reopened.test(part)), `${kind} reopens the fence`);
    }
    const whole = parts.join("\n");
    for (
      const line of LONG_ANSWER.split("\n").filter((line) => /^(Paragraph|const|Done)/.test(line))
    ) {
      assert.ok(whole.includes(line), `${kind} lost nothing: ${line}`);
    }
  }
});

Deno.test("a Telegram part refused with can't parse entities is sent again as plain text, and the event is delivered", async () => {
  await using world = await startWorld({
    agent: {
      deliver: "telegram",
      deliver_extra: { chat_id: "4242" },
      prompt: "**Bold** {__event__}",
    },
  });
  const telegram = world.fakes.telegram;
  telegram.failNext(1, {
    status: 400,
    description:
      "Bad Request: can't parse entities: Can't find end tag corresponding to start tag b",
  });
  const { body } = await world.post("agent", ISSUE_OPENED);
  const stored = await world.settled(body.event_id);
  assert.equal(stored.status, "delivered", stored.lastError ?? "");
  assert.equal(telegram.requests, 2, "the HTML, then the plain text");
  assert.equal(telegram.messages.length, 1);
  assert.deepEqual(telegram.messages[0].body, {
    chat_id: "4242",
    text: "Answer: **Bold** issues.opened",
  });
});

Deno.test("a direct message is sent as written, or rendered with subscribe --format markdown", async () => {
  const prompt = "**{__event__}** <b>raw</b> & [log](https://ci.example/1)";
  await using world = await startWorld({
    plain: { deliver: "telegram", deliver_extra: { chat_id: "4242" }, prompt, deliver_only: true },
  });
  const cli = fakeContext(world.env);
  const argv = ["--deliver", "telegram", "--deliver-chat-id", "4242", "--deliver-only"];
  const code = await webhookSubscribe.run(
    [
      "rendered",
      ...argv,
      "--prompt",
      prompt,
      "--format",
      "markdown",
      "--secret",
      secretOf("rendered"),
    ],
    cli,
  );
  assert.equal(code, 0, cli.err.join("\n"));
  const refused = fakeContext(world.env);
  await assert.rejects(
    webhookSubscribe.run(["other", ...argv, "--format", "html"], refused),
    /--format must be plain or markdown/,
  );

  assert.equal((await world.post("plain", ISSUE_OPENED)).status, 200);
  assert.equal((await world.post("rendered", ISSUE_OPENED)).status, 200);
  const [plain, rendered] = world.fakes.telegram.messages;
  assert.deepEqual(plain.body, {
    chat_id: "4242",
    text: "**issues.opened** <b>raw</b> & [log](https://ci.example/1)",
  });
  assert.deepEqual(rendered.body, {
    chat_id: "4242",
    parse_mode: "HTML",
    text:
      '<b>issues.opened</b> &lt;b&gt;raw&lt;/b&gt; &amp; <a href="https://ci.example/1">log</a>',
  });
});

Deno.test("a static route of config.yaml takes format: markdown as a subscription does", async () => {
  const route = [
    "      routes:",
    "        static-md:",
    `          secret: ${secretOf("static-md")}`,
    "          deliver: slack",
    "          deliver_extra: {chat_id: C0123}",
    "          deliver_only: true",
    "          format: markdown",
    '          prompt: "**{__event__}** <!channel>"',
    "",
  ].join("\n");
  await using world = await startWorld({}, { extra: route });
  const { status, body } = await world.post("static-md", ISSUE_OPENED);
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(world.fakes.slack.messages[0].text, "*issues.opened* &lt;!channel&gt;");
});

Deno.test("telegram without deliver_extra.chat_id goes to TELEGRAM_HOME_CHANNEL", async () => {
  await using world = await startWorld({
    "home-agent": { deliver: "telegram", prompt: "Home {__event__}" },
    "home-direct": { deliver: "telegram", prompt: "Home {__event__}", deliver_only: true },
  });
  const agent = await world.post("home-agent", ISSUE_OPENED);
  assert.equal((await world.settled(agent.body.event_id)).status, "delivered");
  const direct = await world.post("home-direct", ISSUE_OPENED);
  assert.equal(direct.status, 200);
  const sent = world.fakes.telegram.messages.map(({ to, text }) => ({ to, text }));
  assert.deepEqual(sent, [
    { to: HOME_CHAT, text: "Answer: Home issues.opened" },
    { to: HOME_CHAT, text: "Home issues.opened" },
  ]);
});
