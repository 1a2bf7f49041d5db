/**
 * The subscription form of the dashboard (docs/dashboard.md#subscriptions): the options of
 * `agent webhook subscribe`, each labelled with its flag, which the page posts to create or edit
 * a subscription. It works without JavaScript; what was typed is kept when the gateway refuses
 * it, and a secret is never filled in.
 *
 * @module
 */
import type { Child } from "hono/jsx";
import {
  AUTH_NAMES,
  DEFAULT_COALESCE_MAX_SECONDS,
  type Route,
} from "../../lib/subscriptions/mod.ts";
import { DEFAULT_SESSION_BUDGET_TOKENS } from "../../lib/subscriptions/session.ts";
import { DEFAULT_TRANSFORM_TIMEOUT_SECONDS } from "../../lib/transforms/mod.ts";
import { MESSAGE_FORMATS, TARGET_NAMES } from "../../lib/targets/mod.ts";
import type { SubscriptionForm } from "./_subscriptions_save.ts";

/**
 * A route's options as the form's fields: what an edit starts from. The secret is left out:
 * the field stays blank, which keeps it.
 * @param route the subscription
 * @returns the fields, by flag name
 */
export function routeForm(route: Route): SubscriptionForm {
  const text = (value: string | number | undefined) => value === undefined ? "" : String(value);
  return {
    description: text(route.description),
    events: route.events?.join(", ") ?? "",
    filter: route.filters?.join("\n") ?? "",
    prompt: text(route.prompt),
    skills: route.skills?.join(", ") ?? "",
    deliver: route.deliver ?? "log",
    "deliver-chat-id": text(route.deliver_extra?.chat_id),
    "deliver-thread": text(route.deliver_extra?.thread),
    ...(route.deliver_only ? { "deliver-only": "on" } : {}),
    format: text(route.format),
    auth: text(route.auth),
    "rate-limit": text(route.rate_limit),
    model: text(route.model),
    "max-tokens": text(route.max_tokens),
    temperature: text(route.temperature),
    "system-prompt": text(route.system_prompt),
    transform: text(route.transform),
    "transform-timeout": text(route.transform_timeout),
    session: text(route.session),
    "session-budget": text(route.session_budget),
    coalesce: text(route.coalesce),
    "coalesce-key": text(route.coalesce_key),
    "coalesce-max": text(route.coalesce_max),
  };
}

/** What the form shows. */
export interface FormProps {
  csrf: string;
  /** The subscription edited; none for the New form, which asks for a name. */
  name?: string;
  /** The fields' values. */
  form: SubscriptionForm;
  /** How the stored secret is shown (`…x9Qa`), for the secret field's hint when editing. */
  secretHint?: string;
}

/** The form: create (with a name) or edit (posting to the subscription's own address). */
export function SubscriptionFormFields(props: FormProps) {
  const { form, name } = props;
  const action = name === undefined ? "/subscriptions" : `/subscriptions/${name}`;
  return (
    <form method="post" action={action} class="sub-form" id="subscription-form">
      <input type="hidden" name="_csrf" value={props.csrf} />
      {name === undefined && (
        <Field label="Name" flag="<name>" hint="lower-case letters, digits, - and _">
          <input
            name="name"
            id="f-name"
            required
            value={form.name ?? ""}
            pattern="[a-z0-9][a-z0-9_\-]{0,63}"
          />
        </Field>
      )}
      <Field label="Description" flag="--description">
        <input name="description" value={form.description} />
      </Field>
      <Field label="Events" flag="--events" hint="comma-separated; blank: every event">
        <input name="events" id="f-events" value={form.events} placeholder="all" />
      </Field>
      <Field label="Filters" flag="--filter" hint="CEL expressions, one per line; all must hold">
        <textarea name="filter" rows={2} spellcheck={false}>{form.filter}</textarea>
      </Field>
      <Field label="Prompt template" flag="--prompt" hint="blank: the whole payload is sent">
        <textarea name="prompt" id="f-prompt" rows={5} spellcheck={false}>{form.prompt}</textarea>
      </Field>
      <Field label="Skills" flag="--skills" hint="comma-separated skill names">
        <input name="skills" value={form.skills} />
      </Field>
      <DeliveryFields form={form} />
      <SecurityFields form={form} secretHint={props.secretHint} />
      <AgentFields form={form} />
      <RoutingFields form={form} />
      <p>
        <button type="submit" class="primary" id="f-save">
          {name === undefined ? "Create subscription" : "Save changes"}
        </button>
      </p>
    </form>
  );
}

/** Where and how its messages go. */
function DeliveryFields(props: { form: SubscriptionForm }) {
  const { form } = props;
  return (
    <fieldset>
      <legend>Delivery</legend>
      <Field label="Target" flag="--deliver">
        <select name="deliver" id="f-deliver">
          {TARGET_NAMES.map((target) => (
            <option value={target} selected={target === form.deliver}>{target}</option>
          ))}
        </select>
      </Field>
      <Field label="Chat" flag="--deliver-chat-id" hint="blank: the target's home channel">
        <input name="deliver-chat-id" id="f-chat" value={form["deliver-chat-id"]} />
      </Field>
      <Field label="Thread" flag="--deliver-thread" hint="a topic id, a Slack ts, a template">
        <input name="deliver-thread" value={form["deliver-thread"]} />
      </Field>
      <label class="check">
        <input type="checkbox" name="deliver-only" checked={form["deliver-only"] === "on"} />{" "}
        Direct delivery: send the rendered prompt itself, no agent run{" "}
        <code class="flag">--deliver-only</code>
      </label>
      <Field label="Format" flag="--format">
        <Choice name="format" value={form.format} choices={MESSAGE_FORMATS} blank="default" />
      </Field>
    </fieldset>
  );
}

/** Who may send, and how often. */
function SecurityFields(props: { form: SubscriptionForm; secretHint?: string }) {
  const { form, secretHint } = props;
  const hint = secretHint === undefined
    ? "blank: 32 random bytes, shown once"
    : `blank: keep the current one (${secretHint})`;
  return (
    <fieldset>
      <legend>Senders</legend>
      <Field label="Secret" flag="--secret" hint={hint}>
        <input name="secret" type="password" autocomplete="new-password" value="" />
      </Field>
      <Field label="Signature scheme" flag="--auth" hint="blank: any scheme the gateway knows">
        <Choice name="auth" value={form.auth} choices={AUTH_NAMES} blank="any" />
      </Field>
      <Field label="Rate limit" flag="--rate-limit" hint="requests per minute; blank: default">
        <input name="rate-limit" id="f-rate" inputmode="numeric" value={form["rate-limit"]} />
      </Field>
    </fieldset>
  );
}

/** The agent run's own options. */
function AgentFields(props: { form: SubscriptionForm }) {
  const { form } = props;
  return (
    <fieldset>
      <legend>Agent run</legend>
      <Field label="Model" flag="--model" hint="blank: agent.model">
        <input name="model" value={form.model} />
      </Field>
      <Field label="Max tokens" flag="--max-tokens">
        <input name="max-tokens" inputmode="numeric" value={form["max-tokens"]} />
      </Field>
      <Field label="Temperature" flag="--temperature" hint="0 to 2">
        <input name="temperature" inputmode="decimal" value={form.temperature} />
      </Field>
      <Field label="System prompt" flag="--system-prompt" hint="added after the skills">
        <textarea name="system-prompt" rows={2}>{form["system-prompt"]}</textarea>
      </Field>
    </fieldset>
  );
}

/**
 * What happens between the payload and the run: a transform, a conversation, coalescing
 * (docs/subscriptions.md#transforms, #conversations, #coalescing).
 */
function RoutingFields(props: { form: SubscriptionForm }) {
  const { form } = props;
  return (
    <fieldset>
      <legend>Transform, conversation, coalescing</legend>
      <Field label="Transform" flag="--transform" hint="a program and its arguments, no shell">
        <input name="transform" id="f-transform" value={form.transform} spellcheck={false} />
      </Field>
      <Field
        label="Transform time limit"
        flag="--transform-timeout"
        hint={`seconds; blank: ${DEFAULT_TRANSFORM_TIMEOUT_SECONDS}`}
      >
        <input name="transform-timeout" inputmode="decimal" value={form["transform-timeout"]} />
      </Field>
      <Field label="Conversation key" flag="--session" hint="a template; blank: no conversation">
        <input name="session" id="f-session" value={form.session} spellcheck={false} />
      </Field>
      <Field
        label="Conversation budget"
        flag="--session-budget"
        hint={`tokens of earlier turns; blank: ${DEFAULT_SESSION_BUDGET_TOKENS}`}
      >
        <input name="session-budget" inputmode="numeric" value={form["session-budget"]} />
      </Field>
      <Field label="Coalescing window" flag="--coalesce" hint="seconds; blank: none">
        <input name="coalesce" id="f-coalesce" inputmode="decimal" value={form.coalesce} />
      </Field>
      <Field label="Coalescing key" flag="--coalesce-key" hint="a template; blank: the session's">
        <input name="coalesce-key" value={form["coalesce-key"]} spellcheck={false} />
      </Field>
      <Field
        label="Coalescing maximum"
        flag="--coalesce-max"
        hint={`seconds; blank: ${DEFAULT_COALESCE_MAX_SECONDS}`}
      >
        <input name="coalesce-max" inputmode="decimal" value={form["coalesce-max"]} />
      </Field>
    </fieldset>
  );
}

/** A labelled field, with its flag and a hint. */
function Field(props: { label: string; flag: string; hint?: string; children?: Child }) {
  return (
    <label class="field">
      <span>
        {props.label} <code class="flag">{props.flag}</code>
      </span>
      {props.children}
      {props.hint && <small class="muted">{props.hint}</small>}
    </label>
  );
}

/** A select of `choices`, with a blank first choice labelled `blank`. */
function Choice(
  props: { name: string; value: string; choices: readonly string[]; blank: string },
) {
  return (
    <select name={props.name}>
      <option value="" selected={props.value === ""}>{props.blank}</option>
      {props.choices.map((choice) => (
        <option value={choice} selected={choice === props.value}>{choice}</option>
      ))}
    </select>
  );
}
