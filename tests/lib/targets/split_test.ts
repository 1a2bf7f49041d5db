import assert from "node:assert/strict";
import { splitMessage } from "../../../lib/targets/mod.ts";
import { splitText } from "../../../lib/targets/split.ts";

const MARKER = /^\((\d+)\/(\d+)\)[ \n]/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Checks the `(i/n)` markers and returns the parts without them. */
function unnumbered(parts: string[]): string[] {
  return parts.map((part, index) => {
    const match = MARKER.exec(part);
    assert.ok(match, `part ${index + 1} has no (i/n) marker: ${part.slice(0, 40)}`);
    assert.deepEqual([Number(match[1]), Number(match[2])], [index + 1, parts.length]);
    return part.slice(match[0].length);
  });
}

/** The text without fence lines and whitespace: what must survive splitting unchanged. */
function substance(text: string): string {
  return text.split("\n").filter((line) => !FENCE.test(line)).join("").replace(/\s+/g, "");
}

/** Whether every fence opened in `part` is closed in it (CommonMark: same char, no shorter). */
function balanced(part: string): boolean {
  let open: string | undefined;
  for (const line of part.split("\n")) {
    const match = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line.trimEnd());
    if (match === null) continue;
    const [, marker, rest] = match;
    if (open === undefined) open = marker;
    else if (marker[0] === open[0] && marker.length >= open.length && rest.trim() === "") {
      open = undefined;
    }
  }
  return open === undefined;
}

function checkParts(text: string, maxChars: number): string[] {
  const parts = splitMessage(text, maxChars);
  for (const part of parts) {
    assert.ok(part.length <= maxChars, `a part of ${part.length} > ${maxChars}`);
    assert.ok(!LONE_SURROGATE.test(part), "a surrogate pair was split");
  }
  if (parts.length === 1) return parts;
  const bodies = unnumbered(parts);
  assert.equal(substance(bodies.join("\n")), substance(text));
  return bodies;
}

/** Long Markdown as an agent writes it: headings, paragraphs, a list, code, a long URL. */
function markdown(): string {
  const code = Array.from(
    { length: 60 },
    (_, i) => `  const value${i} = compute(${i}, "some argument that makes the line longer");`,
  ).join("\n");
  const list = Array.from({ length: 25 }, (_, i) => `- item ${i}: check the build of service ${i}`);
  return [
    "# Build report 🚀",
    "The pipeline for `main` failed in three jobs. Here is what happened and what to do next. "
      .repeat(12),
    list.join("\n"),
    "```ts\nfunction main() {\n" + code + "\n}\n```",
    `Logs: https://ci.example.com/${"a1b2c3d4".repeat(80)}`,
    "Emoji everywhere 🎉✅❌🔥 ".repeat(60),
    "~~~json\n" + JSON.stringify({ jobs: Array.from({ length: 40 }, (_, i) => i) }, null, 2) +
    "\n~~~",
    "Thanks for reading.",
  ].join("\n\n");
}

Deno.test("splitMessage() returns a message that fits as it is, without a number", () => {
  assert.deepEqual(splitMessage("hello  \n", 100), ["hello  \n"]);
  assert.deepEqual(splitMessage("x".repeat(100), 100), ["x".repeat(100)]);
});

Deno.test("splitMessage() cuts between paragraphs before lines", () => {
  const text = `${"A".repeat(30)}\n${"B".repeat(10)}\n\n${"C".repeat(30)}`;
  assert.deepEqual(splitMessage(text, 60), [
    `(1/2) ${"A".repeat(30)}\n${"B".repeat(10)}`,
    `(2/2) ${"C".repeat(30)}`,
  ]);
});

Deno.test("splitMessage() cuts between lines when a paragraph is too long", () => {
  const lines = Array.from(
    { length: 20 },
    (_, i) => `line ${String(i).padStart(2, "0")} of the log`,
  );
  const bodies = checkParts(lines.join("\n"), 100);
  for (const body of bodies) {
    for (const line of body.split("\n")) assert.ok(lines.includes(line), `cut line: ${line}`);
  }
});

Deno.test("splitMessage() cuts between words when a line is too long", () => {
  const words = Array.from({ length: 200 }, (_, i) => `word${i}`);
  const bodies = checkParts(words.join(" "), 80);
  assert.deepEqual(bodies.join(" ").split(" "), words);
});

Deno.test("splitMessage() hard-cuts a word longer than a part", () => {
  const text = `start ${"x".repeat(500)} end`;
  const bodies = checkParts(text, 100);
  assert.equal(bodies.join("").replace(/\s/g, ""), text.replace(/\s/g, ""));
  assert.ok(bodies.length >= 6);
});

Deno.test("splitMessage() never splits a surrogate pair or an emoji sequence", () => {
  checkParts("😀".repeat(300), 101);
  checkParts(`a${"😀".repeat(300)}`, 100);
  const family = "👨‍👩‍👧‍👦";
  for (const body of checkParts(family.repeat(40), 120)) {
    assert.match(body, new RegExp(`^(${family})+$`, "u"));
  }
});

Deno.test("splitMessage() closes a code fence at a cut and reopens it with its info string", () => {
  const code = Array.from({ length: 30 }, (_, i) => `print(${i})  # step ${i}`).join("\n");
  const text = `Run this:\n\n\`\`\`python\n${code}\n\`\`\`\n\nDone.`;
  const parts = splitMessage(text, 200);
  const bodies = checkParts(text, 200);
  assert.ok(bodies.length >= 3);
  for (const [index, body] of bodies.entries()) {
    assert.ok(balanced(body), `part ${index + 1} leaves a fence open:\n${body}`);
    if (index > 0) {
      assert.ok(body.startsWith("```python\n"), `part ${index + 1} does not reopen the fence`);
      assert.match(parts[index], /^\(\d+\/\d+\)\n```python\n/);
    }
  }
  // The original opening line plus one reopening per later part.
  const openings = bodies.join("\n").split("\n").filter((line) => line === "```python");
  assert.equal(openings.length, bodies.length);
});

Deno.test("splitMessage() numbers parts within the limit when there are more than nine", () => {
  const parts = checkParts("word ".repeat(400).trim(), 60);
  assert.ok(parts.length >= 10);
  assert.match(splitMessage("word ".repeat(400).trim(), 60).at(-1)!, /^\(\d\d\/\d\d\) /);
});

Deno.test("splitMessage() keeps long Markdown whole, balanced and within every platform limit", () => {
  const text = markdown();
  for (const limit of [150, 400, 1000, 2000, 4000]) {
    const bodies = checkParts(text, limit);
    assert.ok(bodies.length >= 2, `${limit}`);
    bodies.forEach((body, index) => assert.ok(balanced(body), `limit ${limit} part ${index + 1}`));
  }
});

Deno.test("splitMessage() drops whitespace at cut points and never yields an empty part", () => {
  const text = `${"a ".repeat(60)}\n\n\n\n      \n\n${"b ".repeat(60)}      \n\n   `;
  const parts = splitMessage(text, 70);
  for (const body of unnumbered(parts)) {
    assert.notEqual(body.trim(), "");
    assert.equal(body, body.trimEnd());
  }
});

Deno.test("splitMessage() refuses a limit too small for a numbered part", () => {
  assert.throws(() => splitMessage("x".repeat(50), 10), RangeError);
});

Deno.test("splitMessage() keeps its promises on 300 seeded random Markdown texts", () => {
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const atoms = ["word", "longer-word", "😀", "👨‍👩‍👧‍👦", " ", " ", "\n", "\n\n", "\t", "é", "🇫🇷"]
    .concat(["\n```ts\n", "\n```\n", "\n~~~\n", "x".repeat(50), "    indented", "`inline`"]);
  for (let run = 0; run < 300; run++) {
    const length = Math.floor(random() * 400);
    const text = Array.from({ length }, () => atoms[Math.floor(random() * atoms.length)]).join("");
    const limit = 60 + Math.floor(random() * 300);
    const bodies = checkParts(text, limit);
    if (bodies.length === 1) continue;
    for (const body of bodies) assert.notEqual(body.trim(), "");
    // Every part but the last closes what it opens; the last may end as the text does.
    for (const part of splitMessage(text, limit).slice(0, -1)) {
      assert.ok(balanced(part), `limit ${limit}: ${JSON.stringify(part)}`);
    }
  }
});

Deno.test("splitMessage() sends an intro and a minified JSON block to Telegram as 2 full parts", () => {
  const answer = `Here is the event payload:\n\n\`\`\`json\n{"data": "${
    "A".repeat(5000)
  }"}\n\`\`\``;
  const parts = checkParts(answer, 4096);
  assert.equal(parts.length, 2);
  assert.match(parts[0], /^Here is the event payload:\n\n```json\n\{"data": "A{4000,}\n```$/);
  assert.match(parts[1], /^```json\nA+"\}\n```$/);
});

Deno.test("splitMessage() fills a part rather than cut at a space far before the limit", () => {
  const bodies = checkParts(`See: ${"x".repeat(5000)}`, 4096);
  assert.equal(bodies.length, 2);
  assert.ok(bodies[0].length >= 4000, `part 1 holds ${bodies[0].length}`);
});

Deno.test("splitMessage() cuts after a sentence before a later space in the same line", () => {
  const text = `${"word ".repeat(14)}ends here. And ${"more ".repeat(20)}`;
  assert.match(splitMessage(text, 100)[0], /ends here\.$/);
});

Deno.test("splitMessage() moves a fence opener at the end of a part into the next part", () => {
  const text = `${"p ".repeat(2000)}\n\`\`\`json\n${"y".repeat(3000)}\n\`\`\``;
  const parts = splitMessage(text, 4096);
  assert.equal(parts.length, 2);
  assert.match(parts[0], /p$/);
  assert.match(parts[1], /^\(2\/2\)\n```json\ny{3000}\n```$/);
});

Deno.test("splitMessage() does not reopen a fence only to close it at the start of a part", () => {
  const text = `\`\`\`json\n${"x".repeat(4050)}\n\n\`\`\`\n${"after ".repeat(100)}`;
  const parts = splitMessage(text, 4096);
  assert.equal(parts.length, 2);
  assert.match(parts[0], /x\n```$/);
  assert.match(parts[1], /^\(2\/2\) after after/);
});

Deno.test("splitMessage() keeps flags, ZWJ families and skin tones whole at the Telegram limit", () => {
  for (const emoji of ["🇫🇷", "👨‍👩‍👧‍👦", "👍🏽", "🏳️‍🌈", "e\u0301"]) {
    for (const prefix of ["", "a", "ab", "abc"]) {
      for (const limit of [2000, 4096]) {
        const bodies = checkParts(prefix + emoji.repeat(Math.ceil(9000 / emoji.length)), limit);
        for (const [index, body] of bodies.entries()) {
          const whole = new RegExp(`^${index === 0 ? prefix : ""}(${emoji})+$`, "u");
          assert.match(body, whole, `${emoji} ${prefix} ${limit} part ${index + 1}`);
        }
      }
    }
  }
});

/** The grapheme clusters of `text` outside fence lines, whitespace left out. */
function graphemes(text: string): string[] {
  const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });
  const lines = text.split("\n").filter((line) => !FENCE.test(line)).join("\n");
  return [...segmenter.segment(lines)].map(({ segment }) => segment).filter((g) => g.trim());
}

/** `text` read as one message: how many code blocks hold only blank lines, whether it shows text. */
function rendered(text: string): { emptyBlocks: number; showsText: boolean } {
  let open: string | undefined;
  let blank = true;
  let emptyBlocks = 0;
  let showsText = false;
  for (const line of text.split("\n")) {
    const match = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line.trimEnd());
    if (open === undefined && match) [open, blank] = [match[1], true];
    else if (open && match?.[1][0] === open[0] && match[1].length >= open.length && !match[2]) {
      if (blank) emptyBlocks++;
      open = undefined;
    } else if (line.trim() !== "") [blank, showsText] = [false, true];
  }
  return { emptyBlocks, showsText };
}

Deno.test("splitMessage() keeps graphemes, content and blocks whole on 300 random answers", () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const atoms = ["🇫🇷", "🇩🇪🇯🇵", "🇫", "👨‍👩‍👧‍👦", "👩🏽‍💻", "👍🏿", "🏳️‍🌈", "e\u0301", "中文字", "한국어"]
    .concat(["word ", "Sentence ends. ", "x".repeat(120), `https://e.com/${"q".repeat(80)}`])
    .concat([" ", "\n", "\n\n", "\n```json\n", "\n```\n", "\n~~~\n", '{"k": "v"}', "。"]);
  for (let run = 0; run < 300; run++) {
    const text = Array.from({ length: 20 + Math.floor(random() * 200) }, () => {
      const atom = atoms[Math.floor(random() * atoms.length)];
      const fenceLine = atom.includes("``") || atom.includes("~~");
      return !fenceLine && random() < 0.2 ? atom.repeat(1 + Math.floor(random() * 12)) : atom;
    }).join("");
    const limit = 40 + Math.floor(random() * 1000);
    const parts = splitMessage(text, limit);
    const bodies = checkParts(text, limit);
    const where = `run ${run}, limit ${limit}`;
    assert.deepEqual(bodies.flatMap(graphemes), graphemes(text), `${where}: a grapheme was cut`);
    const emptyBlocks = bodies.map((body) => rendered(body).emptyBlocks);
    assert.ok(emptyBlocks.reduce((a, b) => a + b) <= rendered(text).emptyBlocks, `${where}: empty`);
    for (const [index, body] of bodies.entries()) {
      assert.ok(rendered(body).showsText, `${where}: part ${index + 1} shows no text`);
      if (index < bodies.length - 1) {
        assert.ok(parts[index].length > limit / 4, `${where}: part ${index + 1} is a fragment`);
      }
    }
  }
});

Deno.test("splitMessage() cuts CJK text after a full stop and its closing bracket", () => {
  const sentence = `${"中".repeat(27)}。」`;
  const bodies = checkParts(`「${sentence}`.repeat(12), 100);
  for (const body of bodies.slice(0, -1)) assert.match(body, /。」$/);
});

Deno.test("splitMessage() moves a link that fits in the next part there whole, rather than cut it", () => {
  const url = `https://ci.example.com/logs/${"a1b2c3d4".repeat(189)}`; // 1,540 characters
  const text = `${
    "The build failed on main after the cache change. ".repeat(11)
  }\nFull log:\n${url}`;
  const parts = splitMessage(text, 2000);
  assert.equal(parts.length, 2);
  assert.ok(parts[1].endsWith(` ${url}`) || parts[1].endsWith(`\n${url}`), parts[1].slice(0, 80));
  assert.ok(parts.every((part) => part.length <= 2000));
});

Deno.test("splitText() cuts before a kept Markdown link rather than inside it, and numbers nothing", () => {
  const text = "See [the build log](https://ci.example/42) for details.";
  const link = { start: 4, end: 42 };
  assert.deepEqual(splitText(text, 40, [link]), [
    "See",
    "[the build log](https://ci.example/42)",
    "for details.",
  ]);
  // Unkept, the same text is cut between the link's words.
  assert.deepEqual(splitText(text, 40, []), [
    "See [the build",
    "log](https://ci.example/42) for details.",
  ]);
});

Deno.test("splitText() cuts inside a kept span between words when the span alone is longer than a part", () => {
  const text = `Intro [${"word ".repeat(20)}](https://a.example) end`;
  const parts = splitText(text, 40, [{ start: 6, end: text.length - 4 }]);
  assert.ok(parts.length > 1 && parts.every((part) => part.length <= 40));
  // Joined with a space, the parts give the text back: no word was cut in two.
  assert.equal(parts.join(" ").replace(/\s+/g, " "), text.replace(/\s+/g, " "));
});
