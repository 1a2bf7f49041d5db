/**
 * Agent answers in Markdown, as the default system prompt gets them: a short triage answer with
 * each construct chats draw differently, one with every character Telegram's HTML reserves, and
 * a 10,000-character report. Every word a reader must see is a numbered token (`word17`), so a
 * test can check that the parts, in order, lost and repeated nothing.
 *
 * @module
 */

/** A triage answer: heading, bold inside a nested list, inline code, a link, a fence, a table. */
export const TRIAGE = `## Summary

The build of **main** failed in \`deno test\`: see [run 42](https://ci.example/runs/42?tab=logs&step=3).

### Next steps

1. Reproduce locally:
   - run \`deno task test\` with **--filter flaky**
   - compare with *yesterday's* run
2. Fix the ~~timeout~~ race in \`worker.ts\`

\`\`\`ts
if (a < b && c > d) retry();
\`\`\`

| Job | Result |
| --- | :----: |
| lint | ok |
| test | **failed** |
`;

/** Every character Telegram's HTML asks to escape, in text, code, a link and a heading. */
export const RESERVED = `# <Tags> & "quotes"

Compare a<b, b>c and AT&T; &amp; is written as \`&amp;\` and <br> as \`<br>\`.
A link: [x < y & z](https://example.com/?a=1&b="2"), and <not-a-tag> or </b> stray.

\`\`\`html
<p class="x">Fish & Chips</p>
\`\`\`
`;

/** The numbered tokens of `text`, in order: what a reader must see, each exactly once. */
export function words(text: string): string[] {
  return text.match(/\bword\d+\b/g) ?? [];
}

/**
 * A report of about 10,000 characters: sections with headings, paragraphs with bold phrases and
 * links, long paragraphs (one a single sentence of links), nested lists, a code block longer than
 * a Discord message, a table.
 */
export function longAnswer(): string {
  let n = 0;
  const word = () => `word${n++}`;
  const sentence = () =>
    `The **check ${word()}** reported ${word()} after [run ${word()}](https://ci.example/runs/${n}) and ${word()}.`;
  const paragraph = (sentences: number) => Array.from({ length: sentences }, sentence).join(" ");
  // One sentence longer than a Discord message: cut between words, never inside a link.
  const links = () =>
    "Related: " + Array.from(
      { length: 60 },
      () => `[run ${word()} of **job ${word()}**](https://ci.example/runs/${n})`,
    ).join(", ");
  const list = () =>
    Array.from(
      { length: 4 },
      (_, i) =>
        `${
          i + 1
        }. **Step ${word()}** needs \`cmd-${word()}\`\n   - detail ${word()}\n   - detail ${word()} with [docs](https://docs.example/${n})`,
    ).join("\n");
  const code = () =>
    "```ts\n" +
    Array.from({ length: 40 }, () => `const ${word()} = check("${"x".repeat(20)}") && a < b;`)
      .join("\n") +
    "\n```";
  const table = () =>
    "| Name | Value |\n| --- | ---: |\n" +
    Array.from({ length: 6 }, () => `| ${word()} | ${word()} |`).join("\n");
  const sections = [
    `# Report ${word()}`,
    paragraph(6),
    `## Findings ${word()}`,
    list(),
    paragraph(22),
    `## Code ${word()}`,
    code(),
    table(),
    `## More ${word()}`,
    paragraph(8),
    list(),
    links(),
    `> Quoted ${word()} with **bold ${word()}** and a [link ${word()}](https://q.example/${n})`,
    paragraph(12),
    `### Last ${word()}`,
    paragraph(9),
  ];
  return sections.join("\n\n") + "\n";
}
