/**
 * The template playground's page and API (docs/dashboard.md#template-playground), behind the
 * session check: `GET /playground` (a form that works without JavaScript: its Render button
 * sends the template in the query) and `GET /api/playground` (the same rendering as JSON, which
 * `/assets/playground.js` asks for as you type). Both only read.
 *
 * @module
 */
import type { Context, Hono } from "hono";
import type { StoredEvent } from "../../lib/state/mod.ts";
import type { DashboardEnv } from "./_auth.ts";
import { Layout, sendPage } from "./_layout.tsx";
import {
  EVENT_CHOICES,
  MAX_TEMPLATE_CHARS,
  type PlaygroundResult,
  renderPlayground,
  subscriptionPrompts,
} from "./_playground.ts";
import type { AppParts } from "./mod.ts";

/**
 * Adds the playground's routes to the dashboard app.
 * @param app the app, its session check already in front of these paths
 * @param parts what the routes read (the store, the configuration)
 */
export function playgroundRoutes(app: Hono<DashboardEnv>, parts: AppParts): void {
  app.get("/playground", (c) => playgroundPage(c, parts));
  app.get("/api/playground", async (c) => {
    const subscription = c.req.query("subscription") ?? "";
    const prompts = await subscriptionPrompts(parts.config);
    if (!prompts.has(subscription)) {
      return c.json({ error: `No subscription "${subscription}"` }, 404);
    }
    const result = await renderPlayground(parts.store, {
      subscription,
      eventId: c.req.query("event") || undefined,
      template: c.req.query("template") ?? prompts.get(subscription)!,
    });
    if ("error" in result) return c.json({ error: result.error }, result.status);
    return c.json(result);
  });
}

/** What the page shows: the choices, the template, and its rendering or why there is none. */
interface PlaygroundProps {
  csrf: string;
  subscriptions: string[];
  subscription?: string;
  events: StoredEvent[];
  eventId?: string;
  template: string;
  result?: PlaygroundResult;
  error?: string;
}

/** `GET /playground`: the form, filled from the query, and the rendering of what it holds. */
async function playgroundPage(c: Context<DashboardEnv>, parts: AppParts) {
  const prompts = await subscriptionPrompts(parts.config);
  const names = [...prompts.keys()];
  const asked = c.req.query("subscription");
  // By default the subscription of the newest event: the one most likely being worked on.
  const newest = (await parts.store.listEvents({ limit: 1 }))[0]?.subscription;
  const fallback = newest !== undefined && prompts.has(newest) ? newest : names[0];
  const subscription = asked !== undefined && prompts.has(asked) ? asked : fallback;
  const props: PlaygroundProps = {
    csrf: c.get("session")!.csrf,
    subscriptions: names,
    subscription,
    events: [],
    template: "",
  };
  if (asked !== undefined && !prompts.has(asked)) props.error = `No subscription "${asked}"`;
  if (subscription === undefined) return sendPage(c, <PlaygroundPage {...props} />);
  // The template typed for another subscription gives way to this one's own prompt.
  const typed = c.req.query("for") === subscription ? c.req.query("template") : undefined;
  props.template = typed ?? prompts.get(subscription)!;
  props.events = await parts.store.listEvents({ subscription, limit: EVENT_CHOICES });
  const asksEvent = c.req.query("event");
  props.eventId = props.events.some((e) => e.id === asksEvent) ? asksEvent : props.events[0]?.id;
  if (props.eventId === undefined) return sendPage(c, <PlaygroundPage {...props} />);
  const result = await renderPlayground(parts.store, { ...props, subscription });
  if ("error" in result) {
    props.error ??= result.error;
    return sendPage(c, <PlaygroundPage {...props} />, result.status);
  }
  return sendPage(c, <PlaygroundPage {...props} result={result} />, props.error ? 404 : 200);
}

/** The playground: the form on the left, the rendered prompt on the right. */
function PlaygroundPage(props: PlaygroundProps) {
  return (
    <Layout title="Template playground" page="playground" csrf={props.csrf}>
      <script src="/assets/playground.js" defer></script>
      <h1>Template playground</h1>
      <p class="muted">
        Renders a subscription's prompt template against one of its stored payloads, as the gateway
        would. Nothing here changes the subscription: copy the template into{" "}
        <code>agent webhook subscribe --prompt</code> to keep it.
      </p>
      {props.error && <p class="error-text" role="alert">{props.error}</p>}
      {props.subscription === undefined
        ? (
          <p>
            There is no subscription yet: create one with <code>agent webhook subscribe</code>.
          </p>
        )
        : <PlaygroundForm {...props} subscription={props.subscription} />}
    </Layout>
  );
}

/** The form and the rendering beside it. */
function PlaygroundForm(props: PlaygroundProps & { subscription: string }) {
  return (
    <form method="get" action="/playground" class="playground" id="playground">
      <input type="hidden" name="for" value={props.subscription} />
      <div class="pg-edit">
        <div class="pg-choices">
          <label>
            Subscription
            <select name="subscription" id="pg-subscription">
              {props.subscriptions.map((name) => (
                <option value={name} selected={name === props.subscription}>{name}</option>
              ))}
            </select>
          </label>
          <EventChoice events={props.events} eventId={props.eventId} />
        </div>
        <label for="pg-template">Prompt template</label>
        <textarea
          name="template"
          id="pg-template"
          rows={14}
          maxlength={MAX_TEMPLATE_CHARS}
          spellcheck={false}
        >
          {props.template}
        </textarea>
        <p class="muted">
          <code>{"{issue.title}"}</code>{" "}
          is a path into the payload; empty renders the default prompt (docs/templates.md).
        </p>
        <button type="submit" class="primary" id="pg-render">Render</button>
      </div>
      <Rendering result={props.result} hasEvents={props.events.length > 0} />
    </form>
  );
}

/** The picker of the subscription's stored events, newest first. */
function EventChoice(props: { events: StoredEvent[]; eventId?: string }) {
  if (props.events.length === 0) return null;
  return (
    <label>
      Payload of event
      <select name="event" id="pg-event">
        {props.events.map((event) => (
          <option value={event.id} selected={event.id === props.eventId}>
            {new Date(event.receivedAtMs).toISOString().replace("T", " ").slice(0, 19)} ·{" "}
            {event.eventLabel} · {event.id}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The rendered prompt, its missing paths flagged, and the token estimate. */
function Rendering(props: { result?: PlaygroundResult; hasEvents: boolean }) {
  const { result } = props;
  return (
    <div class="pg-out" aria-live="polite">
      <h2>
        Rendered prompt{" "}
        <span class="muted" id="pg-tokens">
          {result ? `≈ ${result.tokens} tokens (${result.text.length} characters ÷ 4)` : ""}
        </span>
      </h2>
      {!props.hasEvents && (
        <p class="muted">
          This subscription has no stored event yet: send one (<code>agent webhook test</code>) to
          render against its payload.
        </p>
      )}
      <p class="error-text" id="pg-missing">
        {result && result.missing.length > 0 &&
          `Missing in the payload: ${result.missing.map((path) => `{${path}}`).join(", ")}`}
      </p>
      <pre id="pg-text">{result && highlightMissing(result.text, result.missing)}</pre>
    </div>
  );
}

/** The text with each placeholder left as written (its path missing) marked. */
function highlightMissing(text: string, missing: string[]) {
  if (missing.length === 0) return text;
  const placeholders = new Set(missing.map((path) => `{${path}}`));
  const pattern = new RegExp(`(${[...placeholders].map(escapeRegExp).join("|")})`);
  // Hono renders a `key` as an attribute, so the pieces are collected without `map`.
  const pieces: (string | ReturnType<typeof Missing>)[] = [];
  for (const [i, piece] of text.split(pattern).entries()) {
    pieces.push(i % 2 === 1 ? <Missing text={piece} /> : piece);
  }
  return pieces;
}

/** A placeholder left as written, its path missing. */
function Missing(props: { text: string }) {
  return <mark class="missing">{props.text}</mark>;
}

/** A text matched literally in a regular expression. */
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
