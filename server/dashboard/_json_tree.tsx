/**
 * A payload as the event's page shows it: a tree of `<details>`, each object and list
 * collapsible, open to the second level, with the keys and values escaped as any text is.
 * Beyond {@link MAX_TREE_DEPTH} levels, or for a payload too large to draw as a tree, the
 * rest is shown as indented text.
 *
 * @module
 */
import type { Child } from "hono/jsx";

/** Levels drawn as a tree; deeper values are shown as text. */
export const MAX_TREE_DEPTH = 24;

/** Largest payload drawn as a tree, in characters of its JSON text; larger ones are text. */
export const MAX_TREE_CHARS = 256 * 1024;

/**
 * A JSON value as a tree.
 * @param props `value`: the parsed JSON; `depth`: its level, from 0
 */
export function JsonTree(props: { value: unknown; depth?: number }): Child {
  const { value } = props;
  const depth = props.depth ?? 0;
  if (value === null || typeof value !== "object") return <Scalar value={value} />;
  if (depth >= MAX_TREE_DEPTH) return <span class="str">{prettyJson(value)}</span>;
  const open = depth < 2;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span class="lit">[]</span>;
    return (
      <details open={open}>
        <summary>[ {value.length} {value.length === 1 ? "item" : "items"} ]</summary>
        <ol start={0}>
          {value.map((item) => (
            <li>
              <JsonTree value={item} depth={depth + 1} />
            </li>
          ))}
        </ol>
      </details>
    );
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return <span class="lit">{"{}"}</span>;
  return (
    <details open={open}>
      <summary>{`{ ${entries.length} ${entries.length === 1 ? "key" : "keys"} }`}</summary>
      <dl>
        {entries.map(([key, item]) => (
          <div>
            <dt>{key}</dt>
            <dd>
              <JsonTree value={item} depth={depth + 1} />
            </dd>
          </div>
        ))}
      </dl>
    </details>
  );
}

/** A string, number, boolean or null, coloured by its kind. */
function Scalar(props: { value: unknown }) {
  const { value } = props;
  if (typeof value === "string") return <span class="str">{JSON.stringify(value)}</span>;
  if (typeof value === "number") return <span class="num">{String(value)}</span>;
  return <span class="lit">{String(value)}</span>;
}

/**
 * JSON text indented by two spaces; a value too deep to turn into text (a hostile payload) is
 * said to be so rather than thrown.
 */
export function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return "(too deeply nested to show)";
  }
}
