/**
 * Benchmark of cutting and rendering a message for the chat targets: how long one
 * `messageParts()` call holds the event loop (it is synchronous), for inputs from a realistic
 * answer to ones a payload or a runaway agent can produce:
 *
 *   - a 10,000-character agent answer (the one the format tests deliver);
 *   - Markdown tables of 65 KB and 270 KB, cut between rows;
 *   - a 1 MB paragraph of sentences with bold phrases and links, cut as text.
 *
 * Each input is split as plain text (`splitMessage`, 4,096 characters) and rendered for
 * Telegram, Slack and Discord at their limits. After one unmeasured split of the answer for each
 * (the JIT's warm-up), it prints the median ms per split of each case and the parts it made.
 * `--baseline <checkout>` runs the same cases on another checkout's `lib/targets/` too, one after
 * the other, to compare with the code before a change (a checkout made by
 * `git worktree add /tmp/before <commit>`), and says when the parts differ.
 *
 * Usage: deno task bench:format [--runs 5] [--budget-seconds 20] [--baseline <checkout>]
 *
 * @module
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { longAnswer } from "../tests/lib/targets/_answers.ts";
import type { Dialect } from "../lib/targets/_markdown.ts";
import type { MessagePart } from "../lib/targets/_target.ts";
import { median } from "./_median.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "5" },
    "budget-seconds": { type: "string", default: "20" },
    baseline: { type: "string" },
  },
});
const RUNS = Number(flags.runs);
/** A case stops repeating once it has taken this long, so that slow code still finishes. */
const BUDGET_MS = Number(flags["budget-seconds"]) * 1000;

/** What a checkout offers to split with: `messageParts` and the three chat dialects. */
interface Code {
  name: string;
  messageParts(
    text: string,
    options: { format: "plain" | "markdown"; maxChars?: number; dialect?: Dialect },
  ): MessagePart[];
  dialects: Record<"telegram" | "slack" | "discord", Dialect>;
}

async function load(name: string, root: string): Promise<Code> {
  const at = (path: string) => new URL(path, pathToFileURL(resolve(root) + "/")).href;
  const format = await import(at("lib/targets/_format.ts"));
  const telegram = await import(at("lib/targets/_telegram_html.ts"));
  const slack = await import(at("lib/targets/_slack_mrkdwn.ts"));
  const discord = await import(at("lib/targets/_discord_markdown.ts"));
  return {
    name,
    messageParts: format.messageParts,
    dialects: {
      telegram: telegram.telegramHtml,
      slack: slack.slackMrkdwn,
      discord: discord.discordMarkdown,
    },
  };
}

/** A Markdown table of check results, of at least `bytes` characters: short rows, as agents write. */
function table(bytes: number): string {
  const lines = ["| Check | Status | Time |", "| --- | :---: | ---: |"];
  let size = lines.join("\n").length;
  for (let i = 0; size < bytes; i++) {
    const line = `| check-${i} | ${i % 9 ? "ok" : "**failed**"} | ${(i * 37) % 900} ms |`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n") + "\n";
}

/** One paragraph of at least `bytes` characters: sentences with bold phrases and links. */
function paragraph(bytes: number): string {
  const sentences: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const sentence = `The **check ${i}** reported a timeout after ` +
      `[run ${i}](https://ci.example/runs/${i}) and retried it with \`--filter flaky\`.`;
    sentences.push(sentence);
    size += sentence.length + 1;
  }
  return sentences.join(" ");
}

const INPUTS: [string, string][] = [
  ["10,000-character answer", longAnswer()],
  ["65 KB table", table(65_000)],
  ["270 KB table", table(270_000)],
  ["1 MB paragraph", paragraph(1_000_000)],
];

const TARGETS = [
  { name: "plain", maxChars: 4096, dialect: undefined },
  { name: "telegram", maxChars: 4096, dialect: "telegram" },
  { name: "slack", maxChars: 4000, dialect: "slack" },
  { name: "discord", maxChars: 2000, dialect: "discord" },
] as const;

/** Splits `text` `RUNS` times (fewer when over the budget): the ms of each and the parts. */
function measure(code: Code, text: string, target: (typeof TARGETS)[number]) {
  const options = target.dialect === undefined
    ? { format: "plain" as const, maxChars: target.maxChars }
    : {
      format: "markdown" as const,
      maxChars: target.maxChars,
      dialect: code.dialects[target.dialect],
    };
  const times: number[] = [];
  let parts: MessagePart[] = [];
  const start = performance.now();
  while (times.length < RUNS && (times.length === 0 || performance.now() - start < BUDGET_MS)) {
    const before = performance.now();
    parts = code.messageParts(text, options);
    times.push(performance.now() - before);
  }
  return { ms: median(times), runs: times.length, parts };
}

const codes = [await load("this", new URL("..", import.meta.url).pathname)];
if (flags.baseline) codes.push(await load("baseline", flags.baseline));
// The first calls run before the JIT has compiled the code: one of each, unmeasured.
for (const code of codes) {
  for (const target of TARGETS) measure(code, INPUTS[0][1], target);
}

console.log(
  `${"input".padEnd(24)} ${"target".padEnd(9)} ${"code".padEnd(9)} ${"ms/split".padStart(10)} ${
    "runs".padStart(5)
  } ${"parts".padStart(6)}`,
);
for (const [label, text] of INPUTS) {
  for (const target of TARGETS) {
    const results = codes.map((code) => ({ code, ...measure(code, text, target) }));
    for (const { code, ms, runs, parts } of results) {
      console.log(
        `${label.padEnd(24)} ${target.name.padEnd(9)} ${code.name.padEnd(9)} ${
          ms.toFixed(1).padStart(10)
        } ${String(runs).padStart(5)} ${String(parts.length).padStart(6)}`,
      );
    }
    const [ours, theirs] = results;
    if (theirs !== undefined && JSON.stringify(ours.parts) !== JSON.stringify(theirs.parts)) {
      console.log(`  the parts differ from the baseline's`);
    }
  }
}
