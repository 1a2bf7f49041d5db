/**
 * Markdown answers as each chat receives them, at the loopback Telegram, Slack and Discord fakes:
 * known-answer renderings, the escaping Telegram and Slack require, a 10,000-character answer in
 * valid parts, and the plain-text resend when Telegram refuses the formatting.
 */
import assert from "node:assert/strict";
import { deliver } from "../../../lib/targets/mod.ts";
import { messageParts } from "../../../lib/targets/_format.ts";
import { telegramHtml } from "../../../lib/targets/_telegram_html.ts";
import { discordMarkdown } from "../../../lib/targets/_discord_markdown.ts";
import { slackMrkdwn } from "../../../lib/targets/_slack_mrkdwn.ts";
import type { Dialect, Tokens } from "../../../lib/targets/_markdown.ts";
import { startFakePlatform, startFakeTelegram } from "../../fakes/chat_servers.ts";
import { discordShows, slackShows } from "../../fakes/chat_markup.ts";
import { parseTelegramHtml } from "../../fakes/telegram_entities.ts";
import { longAnswer, RESERVED, TRIAGE, words } from "./_answers.ts";
import { job, recordingContext, targetError } from "./_context.ts";

const markdown = (target: string, chatId: string, text: string) =>
  job(target, { chatId, text, format: "markdown" });

Deno.test("deliver() telegram renders Markdown for parse_mode HTML: bold headings, nested lists, code with its language, links, a table", async () => {
  await using telegram = startFakeTelegram();
  await deliver(markdown("telegram", "7", TRIAGE), recordingContext(telegram.env));
  const [message] = telegram.messages;
  assert.equal(message.body.parse_mode, "HTML");
  assert.equal(
    message.text,
    `<b>Summary</b>

The build of <b>main</b> failed in <code>deno test</code>: see <a href="https://ci.example/runs/42?tab=logs&amp;step=3">run 42</a>.

<b>Next steps</b>

1. Reproduce locally:
   ◦ run <code>deno task test</code> with <b>--filter flaky</b>
   ◦ compare with <i>yesterday's</i> run
2. Fix the <s>timeout</s> race in <code>worker.ts</code>

<pre><code class="language-ts">if (a &lt; b &amp;&amp; c &gt; d) retry();</code></pre>

<pre>Job  | Result
-----+-------
lint |   ok
test | failed</pre>`,
  );
});

Deno.test('deliver() telegram escapes every <, > and & (and " in a link); the reader sees them as written', async () => {
  await using telegram = startFakeTelegram();
  await deliver(markdown("telegram", "7", RESERVED), recordingContext(telegram.env));
  const [message] = telegram.messages;
  assert.equal(message.body.parse_mode, "HTML");
  assert.match(message.text, /<a href="https:\/\/example\.com\/\?a=1&amp;b=&quot;2&quot;">/);
  assert.equal(
    message.shown,
    `<Tags> & "quotes"

Compare a<b, b>c and AT&T; & is written as &amp; and <br> as <br>.
A link: x < y & z, and <not-a-tag> or </b> stray.

<p class="x">Fish & Chips</p>`,
  );
});

Deno.test("deliver() telegram links only web and mail addresses: a tg:// mention or a relative path shows as text", async () => {
  await using telegram = startFakeTelegram();
  const text = "Ask [the boss](tg://user?id=42), see [x](docs/x.md) or [mail](mailto:a@b.example)";
  await deliver(markdown("telegram", "7", text), recordingContext(telegram.env));
  assert.equal(
    telegram.messages[0].text,
    'Ask the boss (tg://user?id=42), see x (docs/x.md) or <a href="mailto:a@b.example">mail</a>',
  );
});

Deno.test("deliver() shows a link with no text as its address in Telegram, Slack and Discord, rather than nothing", async () => {
  await using telegram = startFakeTelegram();
  await using slack = startFakePlatform("slack");
  await using discord = startFakePlatform("discord");
  const text =
    "See [](https://e.com/x) or [ ](docs/x.md).\n\n| Log |\n| --- |\n| [](https://e.com/l) |";
  await deliver(markdown("telegram", "7", text), recordingContext(telegram.env));
  await deliver(markdown("slack", "C1", text), recordingContext(slack.env));
  await deliver(markdown("discord", "1", text), recordingContext(discord.env));
  assert.equal(
    telegram.messages[0].text,
    'See <a href="https://e.com/x">https://e.com/x</a> or docs/x.md.\n\n' +
      "<pre>Log\n---------------\nhttps://e.com/l</pre>",
  );
  assert.equal(
    slack.messages[0].text,
    "See <https://e.com/x> or docs/x.md.\n\n```\nLog\n---------------\nhttps://e.com/l\n```",
  );
  assert.equal(
    discord.messages[0].text,
    "See https://e.com/x or docs/x.md.\n\n```\nLog\n---------------\nhttps://e.com/l\n```",
  );
});

Deno.test("deliver() telegram and slack flatten a quote inside a quote (neither nests them) and leave out an empty one", async () => {
  await using telegram = startFakeTelegram();
  await using slack = startFakePlatform("slack");
  const text = "> outer **b**\n> > inner `x`\n> ```\n> code\n> ```\n\n>\n\nend";
  await deliver(markdown("telegram", "7", text), recordingContext(telegram.env));
  await deliver(markdown("slack", "C1", text), recordingContext(slack.env));
  assert.equal(
    telegram.messages[0].text,
    "<blockquote>outer <b>b</b>\ninner <code>x</code>\ncode</blockquote>\n\nend",
  );
  assert.equal(slack.messages[0].text, "> outer *b*\n> inner `x`\n> ```\n> code\n> ```\n\nend");
});

Deno.test("deliver() slack renders Markdown as mrkdwn: *bold*, _italic_, ~strike~, <url|text>, code blocks", async () => {
  await using slack = startFakePlatform("slack");
  await deliver(markdown("slack", "C1", TRIAGE), recordingContext(slack.env));
  assert.equal(
    slack.messages[0].text,
    `*Summary*

The build of *main* failed in \`deno test\`: see <https://ci.example/runs/42?tab=logs&amp;step=3|run 42>.

*Next steps*

1. Reproduce locally:
   ◦ run \`deno task test\` with *--filter flaky*
   ◦ compare with _yesterday's_ run
2. Fix the ~timeout~ race in \`worker.ts\`

\`\`\`
if (a &lt; b &amp;&amp; c &gt; d) retry();
\`\`\`

\`\`\`
Job  | Result
-----+-------
lint |   ok
test | failed
\`\`\``,
  );
});

Deno.test("deliver() slack escapes &, < and > outside its own links, so <!channel> cannot ping", async () => {
  await using slack = startFakePlatform("slack");
  const text = "Hey <!channel>, see <https://evil.example|the docs> & **this**";
  await deliver(markdown("slack", "C1", text), recordingContext(slack.env));
  // The would-be disguised link shows its real target.
  assert.equal(
    slack.messages[0].text,
    "Hey &lt;!channel&gt;, see &lt;<https://evil.example%7Cthe> docs&gt; &amp; *this*",
  );
  assert.deepEqual(slackProblems(slack.messages[0].text), []);
});

Deno.test("deliver() discord sends Markdown as written, a table as aligned columns, a #### heading bold", async () => {
  await using discord = startFakePlatform("discord");
  const text = TRIAGE + "\n#### Deep heading\n";
  await deliver(markdown("discord", "1", text), recordingContext(discord.env));
  const sent = discord.messages[0].text;
  assert.ok(sent.startsWith(TRIAGE.slice(0, TRIAGE.indexOf("| Job"))), sent);
  assert.ok(
    sent.endsWith(
      "```\nJob  | Result\n-----+-------\nlint |   ok\ntest | failed\n```\n\n**Deep heading**",
    ),
  );
});

Deno.test("deliver() github_comment posts Markdown as written: GitHub draws it", async () => {
  await using github = startFakePlatform("github");
  await deliver(
    markdown("github_comment", "octo/repo#1", TRIAGE),
    recordingContext(github.env),
  );
  assert.ok(github.messages[0].text.startsWith(TRIAGE));
});

Deno.test("deliver() plain format sends Markdown characters as written: no parse_mode, Slack only escaped", async () => {
  await using telegram = startFakeTelegram();
  await using slack = startFakePlatform("slack");
  const text = "**Build** <failed> & [log](https://ci.example)";
  await deliver(
    job("telegram", { chatId: "7", text, format: "plain" }),
    recordingContext(telegram.env),
  );
  await deliver(job("slack", { chatId: "C1", text, format: "plain" }), recordingContext(slack.env));
  assert.equal(telegram.messages[0].text, text);
  assert.equal(telegram.messages[0].body.parse_mode, undefined);
  assert.equal(slack.messages[0].text, "**Build** &lt;failed&gt; &amp; [log](https://ci.example)");
});

Deno.test("deliver() plain format reaches Slack and Discord as written: a payload's *URGENT* _x_ ~y~ draws nothing", async () => {
  await using slack = startFakePlatform("slack");
  await using discord = startFakePlatform("discord");
  const text = "New issue: *URGENT* _x_ ~y~";
  await deliver(job("slack", { chatId: "C1", text, format: "plain" }), recordingContext(slack.env));
  await deliver(
    job("discord", { chatId: "1", text, format: "plain" }),
    recordingContext(discord.env),
  );
  assert.equal(slackShows(slack.messages[0]), text);
  assert.equal(discordShows(discord.messages[0]), text);
});

Deno.test("deliver() plain format escapes every Markdown character Discord reads, but web addresses", async () => {
  await using discord = startFakePlatform("discord");
  const text = [
    "# Deploy **prod** of `app` || [docs](https://e.com/a) ~~now~~ __ok__",
    "> quoted",
    "- item",
    "  1. sub",
    "-# small",
    String.raw`C:\temp\new and https://e.com/a_b_c?x=*y*`,
  ].join("\n");
  await deliver(
    job("discord", { chatId: "1", text, format: "plain" }),
    recordingContext(discord.env),
  );
  assert.equal(discordShows(discord.messages[0]), text);
  assert.ok(discord.messages[0].text.includes(" https://e.com/a_b_c?x=*y*"), "the link as it is");
});

Deno.test("deliver() plain format to Discord counts the escapes in its 2,000 characters", async () => {
  await using discord = startFakePlatform("discord");
  const text = Array.from({ length: 240 }, (_, i) => `a_b_c_${String(i).padStart(3, "0")}`)
    .join(" "); // 2,399 characters, 3,119 escaped
  const receipt = await deliver(
    job("discord", { chatId: "1", text, format: "plain" }),
    recordingContext(discord.env),
  );
  assert.equal(receipt.parts, 2);
  const shown = discord.messages.map((message) => {
    assert.ok(message.text.length <= 2000, `${message.text.length}`);
    return discordShows(message).replace(/^\(\d\/2\) /, "");
  });
  assert.equal(shown.join(" "), text);
});

const DIALECTS = [
  ["telegram", telegramHtml, 4096],
  ["slack", slackMrkdwn, 4000],
  ["discord", discordMarkdown, 2000],
] as const;

const LONG = longAnswer();
const LINKS = LONG.match(/\[[^\]]+\]\(https:\/\/[^)]+\)/g)!;
const CHATS = [
  { kind: "telegram", chatId: "7", limit: 4096 },
  { kind: "slack", chatId: "C1", limit: 4000 },
  { kind: "discord", chatId: "1", limit: 2000 },
] as const;

for (const { kind, chatId, limit } of CHATS) {
  Deno.test(`deliver() a 10,000-character Markdown answer reaches ${kind} in numbered parts, each valid and within ${limit}, cut between blocks`, async () => {
    assert.ok(LONG.length >= 10_000, `${LONG.length}`);
    await using fake = startFakePlatform(kind);
    const receipt = await deliver(markdown(kind, chatId, LONG), recordingContext(fake.env));
    // Every part was accepted: the Telegram fake refuses HTML that breaks Telegram's rules.
    assert.equal(fake.messages.length, receipt.parts);
    assert.ok(receipt.parts >= Math.ceil(LONG.length / limit), `${receipt.parts} parts`);
    const shown = fake.messages.map((message) => message.shown ?? message.text);
    shown.forEach((part, index) => {
      assert.ok(part.length <= limit, `part ${index + 1}: ${part.length} characters`);
      assert.ok(part.startsWith(`(${index + 1}/${receipt.parts})`), `part ${index + 1} numbered`);
      // No part ends or starts inside a link or a bold phrase: none shows their Markdown.
      if (kind === "discord") assert.equal(part.split("**").length % 2, 1, `part ${index + 1}`);
      else assert.doesNotMatch(part, /\]\(|\*\*/, `part ${index + 1}`);
    });
    assert.deepEqual(words(shown.join("\n")), words(LONG), "nothing lost, repeated or reordered");
    if (kind === "telegram") {
      for (const message of fake.messages) {
        assert.equal(message.body.parse_mode, "HTML");
        assert.ok("text" in parseTelegramHtml(message.text), "tags balanced in each part");
      }
      const anchors = fake.messages.flatMap((m) => m.text.match(/<a href="[^"]+">.*?<\/a>/g) ?? []);
      assert.equal(anchors.length, LINKS.length, "every link arrives whole, as a link");
    }
    if (kind === "slack") {
      for (const part of shown) assert.deepEqual(slackProblems(part), []);
      const links = shown.flatMap((part) => part.match(/<https:\/\/[^|>]+\|[^>]+>/g) ?? []);
      assert.equal(links.length, LINKS.length, "every link arrives whole, as <url|text>");
    }
    if (kind === "discord") {
      for (const part of shown) {
        assert.equal(part.split("\n").filter((line) => line.startsWith("```")).length % 2, 0);
        assert.doesNotMatch(part, /^\| --- \|/m, "no Markdown table");
      }
      assert.ok(shown.some((part) => /^\(\d+\/\d+\)\n```ts\n/.test(part)), "the fence reopens");
      const links = shown.flatMap((part) => part.match(/\[[^\]]+\]\(https:\/\/[^)]+\)/g) ?? []);
      assert.deepEqual(links, LINKS, "every link arrives whole");
    }
  });
}

Deno.test("messageParts() cuts a nested list too long for a part between items, its numbers going on", () => {
  const list = Array.from(
    { length: 4 },
    (_, i) => `${i + 1}. item word${i} with **bold**\n    - sub word${i}a\n    - sub word${i}b`,
  ).join("\n");
  const parts = messageParts(list, { format: "markdown", maxChars: 100, dialect: telegramHtml });
  assert.deepEqual(
    parts.map((part) => part.text),
    [0, 1, 2, 3].map((i) =>
      `(${i + 1}/4)\n${
        i + 1
      }. item word${i} with <b>bold</b>\n   ◦ sub word${i}a\n   ◦ sub word${i}b`
    ),
  );
  assert.equal(
    parts[1].plain,
    "(2/4)\n2. item word1 with **bold**\n    - sub word1a\n    - sub word1b",
  );
});

Deno.test("messageParts() cuts a table too long for a part between rows, each part under the header", () => {
  const table = "| Name | Value |\n| --- | ---: |\n" +
    Array.from({ length: 6 }, (_, i) => `| word${i} | ${i * 1000} |`).join("\n");
  const parts = messageParts(table, { format: "markdown", maxChars: 90, dialect: discordMarkdown });
  assert.ok(parts.length >= 2);
  for (const part of parts) {
    assert.match(part.text, /^\(\d\/\d\)\n```\nName +\| Value\n-+\+-+\n(word\d +\| +\d+\n)+```$/);
    assert.ok(part.text.length <= 90);
  }
  assert.deepEqual(words(parts.map((part) => part.text).join("\n")), words(table));
});

Deno.test("messageParts() gives a text that grows when rendered (Slack's escapes) less room per part", () => {
  const text = "&<>&<> ".repeat(1300).trim(); // 9,099 characters, about four times as many escaped
  const parts = messageParts(text, { format: "markdown", maxChars: 4000, dialect: slackMrkdwn });
  assert.ok(parts.every((part) => part.formatted && part.text.length <= 4000));
  const unescaped = parts.map((part) =>
    part.text.replace(/^\(\d+\/\d+\) /, "").replaceAll("&lt;", "<").replaceAll("&gt;", ">")
      .replaceAll("&amp;", "&")
  );
  assert.equal(unescaped.join(" "), text);
});

/** `dialect`, counting what it renders: blocks, table rows, and characters of Markdown. */
function counting(dialect: Dialect) {
  const rendered = { blocks: 0, rows: 0, chars: 0 };
  const counted: Dialect = {
    block(token) {
      rendered.blocks++;
      rendered.rows += token.type === "table" ? (token as Tokens.Table).rows.length : 0;
      rendered.chars += token.raw.length;
      return dialect.block(token);
    },
    length: dialect.length,
  };
  return { dialect: counted, rendered };
}

/** A Markdown table of at least `chars` characters, in short rows. */
function bigTable(chars: number): { markdown: string; rows: number } {
  const lines = ["| Check | Status | Time |", "| --- | :---: | ---: |"];
  for (let i = 0, size = 0; size < chars; i++) {
    lines.push(`| check-${i} | ${i % 9 ? "ok" : "**failed**"} | ${(i * 37) % 900} ms |`);
    size += lines[lines.length - 1].length + 1;
  }
  return { markdown: lines.join("\n"), rows: lines.length - 2 };
}

for (const [name, dialect, maxChars] of DIALECTS) {
  Deno.test(`messageParts() renders each row of a 270 KB table a few times for ${name}, not once for every longer run`, () => {
    const table = bigTable(270_000);
    const { dialect: counted, rendered } = counting(dialect);
    const parts = messageParts(table.markdown, { format: "markdown", maxChars, dialect: counted });
    assert.ok(parts.length > 50 && parts.every((part) => part.formatted), `${parts.length}`);
    // Whole once, then about twice a row for each part-number width tried (three or four).
    assert.ok(rendered.rows <= 10 * table.rows, `${rendered.rows} rows for ${table.rows}`);
  });
}

Deno.test("messageParts() renders a 1 MB paragraph whole once, then its pieces once for each part-number width tried", () => {
  const sentence = (i: number) =>
    `The **check ${i}** timed out after [run ${i}](https://ci.example/runs/${i}).`;
  const text = Array.from({ length: 15_000 }, (_, i) => sentence(i)).join(" ");
  assert.ok(text.length >= 1_000_000, `${text.length}`);
  const { dialect, rendered } = counting(telegramHtml);
  const parts = messageParts(text, { format: "markdown", maxChars: 4096, dialect });
  assert.ok(parts.length > 200, `${parts.length}`);
  // Whole once, to know it does not fit, then cut at four rooms: without a part number, and for
  // "(n/n)" of one, two and three digits.
  assert.ok(rendered.chars <= 5 * text.length, `${rendered.chars} for ${text.length}`);
});

Deno.test("deliver() telegram sends a part again as plain text when Telegram answers can't parse entities", async () => {
  await using telegram = startFakeTelegram();
  const refusal = {
    status: 400,
    description: `Bad Request: can't parse entities: Unsupported start tag "x" at byte offset 7`,
  };
  telegram.failNext(1, refusal, { after: 1 }); // part 2 is refused
  const ctx = recordingContext(telegram.env);
  const receipt = await deliver(markdown("telegram", "7", LONG), ctx);
  assert.equal(telegram.requests, receipt.parts + 1);
  const [first, second, ...rest] = telegram.messages;
  assert.equal(first.body.parse_mode, "HTML");
  assert.equal(second.body.parse_mode, undefined);
  assert.match(second.text, new RegExp(`^\\(2/${receipt.parts}\\)[ \\n]`));
  assert.ok(second.text.includes("**check word"), "the part's Markdown, as written");
  assert.ok(second.text.length <= 4096);
  assert.ok(rest.every((message) => message.body.parse_mode === "HTML"));
  assert.deepEqual(words(telegram.messages.map((m) => m.shown ?? m.text).join("\n")), words(LONG));
  assert.equal(ctx.logs.length, 1);
  assert.match(ctx.logs[0].message, /refused the formatting/);
});

Deno.test("deliver() telegram does not resend on another 400: chat not found stays a permanent error", async () => {
  await using telegram = startFakeTelegram({ known: ["1"] });
  const error = await targetError(
    deliver(markdown("telegram", "7", "**hi**"), recordingContext(telegram.env)),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /chat not found/);
  assert.equal(telegram.requests, 1);
});

Deno.test("the Telegram fake refuses HTML that Telegram refuses, so a part it accepts is valid", () => {
  for (
    const html of [
      "<b>open",
      "a < b",
      "a > b",
      "Fish & Chips",
      "<p>para</p>",
      "<b><code>x</code></b>",
      "<a>no href</a>",
      "<i><b>crossed</i></b>",
      "<blockquote><blockquote>x</blockquote></blockquote>",
    ]
  ) {
    assert.ok("error" in parseTelegramHtml(html), html);
  }
  assert.deepEqual(
    parseTelegramHtml('<b>a &lt; b</b> <a href="https://x.example/?a=1&amp;b=2">x</a>'),
    { text: "a < b x" },
  );
  assert.deepEqual(
    parseTelegramHtml('<pre><code class="language-ts">1 &amp;&amp; 2</code></pre>'),
    { text: "1 && 2" },
  );
});

/**
 * What Slack would not read as written: a `<` that opens no link, a `>` that neither closes one
 * nor starts a quote, an `&` that is no escape.
 */
function slackProblems(text: string): string[] {
  const outside = text.replace(/<(?:https?:\/\/|mailto:)[^<>|\s]+(?:\|[^<>]*)?>/g, "")
    .replace(/^> /gm, "");
  const problems: string[] = [];
  if (outside.includes("<")) problems.push(`a "<" that opens no link`);
  if (outside.includes(">")) problems.push(`a ">" outside a link or quote`);
  if (/&(?!amp;|lt;|gt;)/.test(outside)) problems.push(`an "&" that is no escape`);
  return problems;
}
