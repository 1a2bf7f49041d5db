/**
 * Telegram's HTML `parse_mode` as the fake Bot API reads it, strictly by the rules of
 * https://core.telegram.org/bots/api#html-style: only the listed tags, each closed in order,
 * `<`, `>` and `&` escaped outside tags (only `&lt;`, `&gt;`, `&amp;`, `&quot;` and numeric
 * entities), `<a>` with an `href`, and the nesting rules: `pre` and `code` hold no other entity
 * (but a code block's `<pre><code class="language-…">`), a link holds no link, code or block,
 * bold, italic, underline, strikethrough and spoiler hold no `pre` or `code`, a blockquote no
 * blockquote or `pre`.
 *
 * @module
 */

/** Tag names Telegram accepts, and the entity each stands for. */
const TAGS: Record<string, string> = {
  b: "bold",
  strong: "bold",
  i: "italic",
  em: "italic",
  u: "underline",
  ins: "underline",
  s: "strikethrough",
  strike: "strikethrough",
  del: "strikethrough",
  span: "spoiler",
  "tg-spoiler": "spoiler",
  a: "link",
  code: "code",
  pre: "pre",
  blockquote: "blockquote",
};

/** The entities that an entity of each kind may not hold. */
const MAY_NOT_HOLD: Record<string, string[]> = {
  bold: ["pre", "code"],
  italic: ["pre", "code"],
  underline: ["pre", "code"],
  strikethrough: ["pre", "code"],
  spoiler: ["pre", "code"],
  link: ["link", "code", "pre", "blockquote"],
  code: Object.values(TAGS),
  pre: Object.values(TAGS),
  blockquote: ["blockquote", "pre"],
};

const DECODED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

/** One open tag while parsing. */
interface Open {
  name: string;
  entity: string;
  attributes: string;
}

/**
 * Reads `html` as Telegram does with `parse_mode: "HTML"`.
 * @param html the message text
 * @returns the text a reader sees (tags removed, entities decoded), or the reason Telegram
 *   would give after "can't parse entities: "
 */
export function parseTelegramHtml(html: string): { text: string } | { error: string } {
  const stack: Open[] = [];
  let text = "";
  for (let at = 0; at < html.length;) {
    const char = html[at];
    if (char === ">") return { error: `character '>' is reserved at byte offset ${at}` };
    if (char === "&") {
      const entity = /^&(lt|gt|amp|quot|#\d+|#x[\da-f]+);/i.exec(html.slice(at));
      if (entity === null) return { error: `unsupported HTML entity at byte offset ${at}` };
      const name = entity[1].toLowerCase();
      text += DECODED[name] ??
        String.fromCodePoint(
          name.startsWith("#x") ? parseInt(name.slice(2), 16) : parseInt(name.slice(1)),
        );
      at += entity[0].length;
      continue;
    }
    if (char !== "<") {
      text += char;
      at++;
      continue;
    }
    const tag = /^<(\/?)([a-z][a-z-]*)((?:\s+[a-z-]+(?:="[^"<>]*")?)*)\s*>/i.exec(html.slice(at));
    if (tag === null) return { error: `unexpected end of name token at byte offset ${at}` };
    const [whole, closing, rawName, attributes] = tag;
    const problem = closing ? close(stack, rawName) : open(stack, rawName, attributes);
    if (problem !== undefined) return { error: `${problem} at byte offset ${at}` };
    at += whole.length;
  }
  if (stack.length > 0) {
    return { error: `can't find end tag corresponding to start tag "${stack.at(-1)!.name}"` };
  }
  return { text };
}

function open(stack: Open[], rawName: string, attributes: string): string | undefined {
  const name = rawName.toLowerCase();
  const entity = TAGS[name];
  if (entity === undefined) return `unsupported start tag "${name}"`;
  if (name === "a" && !/\shref="[^"]+"/.test(attributes)) return `an <a> tag needs href`;
  if (name === "span" && !/\sclass="tg-spoiler"/.test(attributes)) {
    return `unsupported start tag "span"`;
  }
  const parent = stack.at(-1);
  // A code block's language: <pre><code class="language-…">, the one entity a pre holds.
  const language = name === "code" && parent?.entity === "pre" &&
    /^\s+class="language-[^"]+"$/.test(attributes);
  if (!language) {
    for (const outer of stack) {
      if (MAY_NOT_HOLD[outer.entity]?.includes(entity)) {
        return `a ${outer.entity} entity can't contain a ${entity} entity`;
      }
    }
  }
  stack.push({ name, entity, attributes });
  return undefined;
}

function close(stack: Open[], rawName: string): string | undefined {
  const name = rawName.toLowerCase();
  const top = stack.pop();
  if (top === undefined) return `unmatched end tag "${name}"`;
  if (top.name !== name) {
    return `can't find end tag corresponding to start tag "${top.name}"`;
  }
  return undefined;
}
