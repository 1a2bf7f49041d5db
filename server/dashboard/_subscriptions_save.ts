/**
 * What the subscriptions page's forms write (docs/dashboard.md#subscriptions): the same
 * subscription file as `agent webhook subscribe`, `remove`, `disable` and `enable`, through
 * their code (lib/subscriptions/subscribe_options.ts, subscribe_checks.ts, subscribe_merge.ts,
 * subscription_edits.ts). The form gives every option at once, named as the flags are; a field left
 * blank gives its option's default.
 *
 * @module
 */
import type { Config } from "../../lib/config/mod.ts";
import { ConfigError, ConflictError, NotFoundError } from "../../lib/errors.ts";
import { wrongFieldType } from "../../lib/subscriptions/file_store.ts";
import { updateSubscriptionsOf } from "../../lib/subscriptions/source.ts";
import type { Subscription } from "../../lib/subscriptions/mod.ts";
import { checkName, refuseStatic } from "../../lib/subscriptions/routes.ts";
import { checkAuthNone, checkSkills } from "../../lib/subscriptions/subscribe_checks.ts";
import { storeMerged } from "../../lib/subscriptions/subscribe_merge.ts";
import {
  removeSubscription as removeRecord,
  setSubscriptionDisabled,
  untilGatewaySeesChange,
} from "../../lib/subscriptions/subscription_edits.ts";
import {
  eventFilterWarnings,
  optionsToRecord,
  type SubscribeOptions,
} from "../../lib/subscriptions/subscribe_options.ts";

/** The configuration the forms need: the files, the static routes, the targets' environment. */
export type FormConfig = Pick<Config, "paths" | "webhook" | "env">;

/** A form's fields as posted, by their flag's name without `--` (`deliver-chat-id`). */
export type SubscriptionForm = Record<string, string>;

/**
 * The text fields of the form, by flag name; `filter` holds one expression per line, and
 * `deliver-only` is a checkbox.
 */
export const FORM_OPTIONS = [
  "description",
  "events",
  "filter",
  "prompt",
  "skills",
  "deliver",
  "deliver-chat-id",
  "deliver-thread",
  "format",
  "secret",
  "auth",
  "rate-limit",
  "model",
  "max-tokens",
  "temperature",
  "system-prompt",
  "transform",
  "transform-timeout",
  "session",
  "session-budget",
  "coalesce",
  "coalesce-key",
  "coalesce-max",
] as const;

/** The record fields the form gives in full: an edit replaces them, and keeps every other. */
const FORM_FIELDS: readonly (keyof Subscription)[] = [
  "description",
  "events",
  "filters",
  "prompt",
  "skills",
  "deliver",
  "deliver_only",
  "format",
  "auth",
  "rate_limit",
  "model",
  "max_tokens",
  "temperature",
  "system_prompt",
  "transform",
  "transform_timeout",
  "session",
  "session_budget",
  "coalesce",
  "coalesce_key",
  "coalesce_max",
];

/**
 * The options a form gives, as `subscribe`'s flags would: a blank field is an option not
 * given, except `events`, which is `all` (every event); `filter` is one expression per line.
 * @param form the posted fields
 * @returns the options, for `optionsToRecord`
 */
export function formOptions(form: SubscriptionForm): SubscribeOptions {
  const options: SubscribeOptions = {};
  for (const name of FORM_OPTIONS) {
    const value = form[name] ?? "";
    if (name === "filter") {
      const lines = value.split(/\r?\n/).filter((line) => line.trim() !== "");
      if (lines.length) options.filter = lines;
    } else if (name === "events") {
      options.events = value.trim() === "" ? "all" : value;
    } else if (value.trim() !== "") {
      options[name] = value;
    }
  }
  if (form["deliver-only"] === "on") options["deliver-only"] = true;
  return options;
}

/** What a save did. */
export interface Saved {
  /** The record as stored. */
  record: Subscription;
  /** Whether the name was new. */
  created: boolean;
  /** Warnings that did not block, as `subscribe` prints them (without `Warning: `). */
  warnings: string[];
  /**
   * Whether the page may show the whole secret, once: it was made for a new subscription, or
   * anew for one that had none (a secret typed in the form is not shown back).
   */
  showSecret: boolean;
}

/**
 * Creates or edits a subscription from a form, as `agent webhook subscribe` would with the same
 * options; an edit replaces every field the form gives ({@link FORM_FIELDS}, the chat and the
 * thread) and keeps the others (the secret unless one is typed, the creation time, whether it
 * is disabled, fields the form does not know).
 * @param name the subscription's name
 * @param options `form`: the posted fields; `creating`: the New form (a name taken is refused);
 *   `config`; `nowIso`: the time of the change
 * @returns the record stored and the warnings
 * @throws UsageError for a bad name, a static route's name, an option the CLI would refuse
 * @throws ConflictError when creating a name that exists
 * @throws NotFoundError when editing a name that does not
 * @throws ConfigError for a record edited by hand into a state no form can fix, or a file that
 *   cannot be read or written
 */
export async function saveSubscription(
  name: string,
  options: { form: SubscriptionForm; creating: boolean; config: FormConfig; nowIso: string },
): Promise<Saved> {
  const { form, creating, config, nowIso } = options;
  checkName(name, "subscribe");
  refuseStatic(config, name, "subscribe");
  const changes = optionsToRecord(formOptions(form));
  if (changes.auth === "none") checkAuthNone(config);
  const warnings: string[] = [];
  if (changes.skills?.length) {
    await checkSkills(changes.skills, {
      skillsDir: config.paths.skills,
      warn: (line) => warnings.push(line.replace(/^Warning: /, "")),
    });
  }
  const saved = await updateSubscriptionsOf(config, (records) => {
    const existing = Object.hasOwn(records, name) ? records[name] : undefined;
    if (creating && existing) {
      throw new ConflictError(`A subscription named "${name}" exists already: edit it instead`);
    }
    if (!creating && !existing) {
      throw new NotFoundError(`No subscription named "${name}" (it may have been removed)`);
    }
    const problem = existing && wrongFieldType(existing);
    if (problem) throw new ConfigError(`${problem}; fix it in the file`);
    return storeMerged(records, name, { changes, nowIso, config, keep: keptFields });
  });
  warnings.push(...saved.warnings, ...eventFilterWarnings(changes.events));
  if (saved.record.disabled) {
    warnings.push(
      `"${name}" is disabled: the gateway answers its requests as an unknown name's (404) until ` +
        "it is enabled",
    );
  }
  await untilGatewaySeesChange(config);
  // A secret typed in the form is the user's own: only one the gateway made is shown.
  const showSecret = changes.secret === undefined && (creating || saved.generated);
  return { record: saved.record, created: creating, warnings, showSecret };
}

/** A stored record without the fields the form gives, which an edit gives anew. */
function keptFields(existing: Subscription): Subscription {
  const kept: Subscription = { ...existing };
  for (const field of FORM_FIELDS) delete kept[field];
  const { chat_id: _chat, thread: _thread, ...extra } = existing.deliver_extra ?? {};
  if (Object.keys(extra).length) kept.deliver_extra = extra;
  else delete kept.deliver_extra;
  return kept;
}

/**
 * Removes a subscription, as `agent webhook remove` does, and waits until the gateway uses it.
 * @param name the subscription's name
 * @param config the configuration
 * @throws UsageError for a bad name or a static route's
 * @throws NotFoundError when there is none of that name
 */
export async function removeSubscription(name: string, config: FormConfig): Promise<void> {
  await removeRecord(name, config);
  await untilGatewaySeesChange(config);
}

/**
 * Sets or clears a subscription's `disabled`, as `agent webhook disable` and `enable` do, and
 * waits until the gateway uses it.
 * @param name the subscription's name
 * @param options `disabled`: what to set; `config`; `nowIso`: the time of the change
 * @returns whether it changed (false: it already was so)
 * @throws UsageError for a bad name or a static route's
 * @throws NotFoundError when there is none of that name
 */
export async function setDisabled(
  name: string,
  options: { disabled: boolean; config: FormConfig; nowIso: string },
): Promise<boolean> {
  const changed = await setSubscriptionDisabled(name, options);
  if (changed) await untilGatewaySeesChange(options.config);
  return changed;
}
