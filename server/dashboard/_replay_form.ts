/**
 * The form of **Replay with changes** (docs/dashboard.md#replay-with-changes): what it holds,
 * what it is prefilled with, and the changes it asks for, checked.
 *
 * @module
 */
import type { StoredEvent } from "../../lib/state/mod.ts";
import type { ReplayChanges } from "../../lib/subscriptions/replay.ts";
import type { Route } from "../../lib/subscriptions/mod.ts";

/** The longest prompt or template the form takes, in characters. */
export const MAX_PROMPT_CHARS = 64_000;
/** The longest model name the form takes, in characters. */
export const MAX_MODEL_CHARS = 200;

/** The form's fields, as the page shows them and the browser sends them back. */
export interface ReplayForm {
  /** The prompt template, or the prompt itself when `render` is off. */
  prompt: string;
  /**
   * Whether `prompt` is rendered as a template (docs/templates.md): against the payload, or
   * what the subscription's transform prints.
   */
  render: boolean;
  /** The model asked for; empty keeps the subscription's, or `agent.model`. */
  model: string;
}

/**
 * The form as it first shows: the subscription's template, or, when it has none (or cannot
 * route the event now), the event's own prompt as written; the model the subscription asks for.
 * @param event the event to replay
 * @param route its subscription as it is now; undefined when it cannot route the event
 */
export function prefilledForm(event: StoredEvent, route: Route | undefined): ReplayForm {
  const template = route?.prompt;
  return {
    prompt: template ? template : event.prompt,
    render: Boolean(template),
    model: (route ? route.model?.trim() : event.route.agent?.model) ?? "",
  };
}

/**
 * Reads the form a browser sent: its fields as written (line ends as `\n`: browsers send a
 * textarea's as CRLF), and the changes they ask for, or what is wrong with them.
 * @param body the parsed form body (`c.req.parseBody()`)
 * @returns the fields, and `changes` or `error` (a sentence the page shows)
 */
export function readReplayForm(
  body: Record<string, unknown>,
): { form: ReplayForm } & ({ changes: ReplayChanges } | { error: string }) {
  const text = (name: string) =>
    typeof body[name] === "string" ? (body[name] as string).replaceAll("\r\n", "\n") : "";
  const form = { prompt: text("prompt"), render: body.render === "template", model: text("model") };
  const error = formProblem(form);
  if (error !== undefined) return { form, error };
  const model = form.model.trim();
  return {
    form,
    changes: {
      prompt: form.render ? { template: form.prompt } : { text: form.prompt },
      ...(model === "" ? {} : { model }),
    },
  };
}

/** What is wrong with the form's fields, said for the page; undefined when nothing is. */
function formProblem(form: ReplayForm): string | undefined {
  if (form.prompt.length > MAX_PROMPT_CHARS) {
    return `The prompt has ${form.prompt.length} characters; at most ${MAX_PROMPT_CHARS} ` +
      "are taken.";
  }
  if (!form.render && form.prompt.trim() === "") {
    return "The prompt is empty: write one, or tick “Render as a template” to send the " +
      "default prompt (the payload as JSON).";
  }
  const model = form.model.trim();
  // deno-lint-ignore no-control-regex
  if (model.length > MAX_MODEL_CHARS || /[\x00-\x1f\x7f]/.test(model)) {
    return `The model must be a model name (gpt-4o-mini): at most ${MAX_MODEL_CHARS} ` +
      "characters, on one line.";
  }
  return undefined;
}
