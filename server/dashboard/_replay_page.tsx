/**
 * The page of **Replay with changes** (docs/dashboard.md#replay-with-changes): the prompt
 * template and the model of one more run of an event, to edit and send. It works without
 * JavaScript: the form is a POST with the session's CSRF token, as the Replay button is.
 *
 * @module
 */
import type { StoredEvent } from "../../lib/state/mod.ts";
import { MAX_MODEL_CHARS, MAX_PROMPT_CHARS, type ReplayForm } from "./_replay_form.ts";
import { Layout } from "./_layout.tsx";

/** What the page shows. */
export interface ReplayPageProps {
  event: StoredEvent;
  /** The fields: prefilled, or as sent when they were refused. */
  form: ReplayForm;
  /** The model that answered last, as the endpoint named it; absent when none did. */
  lastModel?: string;
  /** Why the event goes to the target it had: its subscription cannot route it now. */
  keptBecause?: string;
  /** The session's CSRF token. */
  csrf: string;
  /** Why the form was refused, said above it. */
  error?: string;
}

/** The address of an event's Replay with changes page, and of its form's POST. */
export function replayWithChangesPath(eventId: string): string {
  return `/events/${encodeURIComponent(eventId)}/replay-with-changes`;
}

/** The page: what a replay with changes does, then the form. */
export function ReplayPage(props: ReplayPageProps) {
  const { event, form } = props;
  const back = `/events/${encodeURIComponent(event.id)}`;
  return (
    <Layout title={`Replay with changes: ${event.subscription}`} page="replay" csrf={props.csrf}>
      <p>
        <a href={back}>« {event.subscription} · {event.eventLabel}</a>
      </p>
      <h1>Replay with changes</h1>
      <p>
        The event runs once more, with this prompt and model, as a replay: a new series of attempts.
        The subscription is not changed. When the new run has answered, the event's page shows the
        new answer beside the previous one.
      </p>
      {props.keptBecause !== undefined && (
        <p class="notice bad">
          Its subscription cannot route it now ({props.keptBecause}): it goes to the target it had.
        </p>
      )}
      {props.error !== undefined && <div class="notice bad" id="form-error">{props.error}</div>}
      <form method="post" action={replayWithChangesPath(event.id)} class="replay-form">
        <input type="hidden" name="_csrf" value={props.csrf} />
        <label for="replay-prompt">Prompt template</label>
        <textarea
          id="replay-prompt"
          name="prompt"
          rows={12}
          maxlength={MAX_PROMPT_CHARS}
          spellcheck={false}
        >
          {/* The parser drops one newline after the tag: a prompt's own first one is kept. */}
          {`\n${form.prompt}`}
        </textarea>
        <label class="render-check">
          <input type="checkbox" name="render" value="template" checked={form.render} />{" "}
          Render as a template: <code>{"{issue.title}"}</code>{" "}
          is filled from the payload (docs/templates.md); empty, the default prompt. Off, the text
          is the prompt as written.
        </label>
        <label for="replay-model">Model</label>
        <input
          id="replay-model"
          name="model"
          value={form.model}
          maxlength={MAX_MODEL_CHARS}
          placeholder="the subscription's, else agent.model"
        />
        {props.lastModel !== undefined && <p class="muted">Last answered by {props.lastModel}.</p>}
        <div class="actions">
          <button type="submit" class="primary">Run with these changes</button>
          <a class="button" href={back}>Cancel</a>
        </div>
      </form>
    </Layout>
  );
}
