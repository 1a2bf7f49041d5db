/**
 * How `agent webhook subscribe` and the dashboard merge the fields given into a subscription's
 * stored record: what is kept, what a new target drops, what is filled in, and what is checked.
 *
 * @module
 */
import type { Config } from "../config/mod.ts";
import { ConfigError, UsageError } from "../errors.ts";
import { checkRecord, type Subscription } from "./mod.ts";
import { type SubscriptionRecords, wrongFieldType } from "./file_store.ts";
import { validateTarget } from "../targets/mod.ts";
import { checkSecretForScheme, generatedForEmptySecret } from "./subscribe_checks.ts";
import { checkCoalesce } from "./coalesce_options.ts";
import { checkSession } from "./session_options.ts";
import { generateSecret } from "./mod.ts";

/**
 * The record `subscribe` stores: the existing one with the given fields replaced, the default
 * target, a secret (generated when there is none) and the times of creation and change.
 * @param existing the stored record, if the name has one
 * @param options `name`: the subscription's; `changes`: the fields the flags give; `nowIso`:
 *   the time of the change; `config`: the subscription file (for messages) and the environment
 *   the target is checked with
 * @returns the record to store, and warnings that do not block (a target's missing token, a
 *   secret its scheme's libraries cannot sign with)
 * @throws ConfigError for a hand-edited field of the wrong type that the flags do not replace
 * @throws UsageError for a target, chat id or secret that cannot work
 */
export function mergeSubscription(
  existing: Subscription | undefined,
  options: {
    name: string;
    changes: Subscription;
    nowIso: string;
    config: Pick<Config, "paths" | "env">;
  },
): { record: Subscription; warnings: string[] } {
  const { name, changes, nowIso, config } = options;
  const merged: Subscription = { ...existing, ...changes };
  // A field of the wrong type in a record edited by hand stays unless this command gives
  // it anew: the record would still be refused by the gateway, so it is not written.
  // Checked first, before anything reads the fields.
  if (typeof merged.created_at !== "string") delete merged.created_at; // set below
  if (existing !== undefined && wrongFieldType(existing) !== undefined) {
    refuseWrongTypes(merged, { name, file: config.paths.subscriptions });
  }
  mergeTarget(merged, { existing, changes, name });
  merged.deliver ??= "log";
  checkCoalesce(merged, name);
  checkSession(merged, name);
  // An empty secret counts as none (403): a new one replaces it. `auth: none` asks for none,
  // and keeps one it had for a scheme given again later.
  if (merged.auth !== "none") merged.secret ||= generateSecret(merged.auth);
  merged.created_at ??= nowIso;
  merged.updated_at = nowIso;
  const warnings = validateTarget({
    target: merged.deliver,
    chatId: merged.deliver_extra?.chat_id,
    thread: merged.deliver_extra?.thread,
    deliverOnly: merged.deliver_only ?? false,
    env: config.env,
  });
  if ((changes.secret !== undefined || changes.auth !== undefined) && merged.auth !== "none") {
    warnings.push(...checkSecretForScheme(merged.secret!, merged.auth));
  }
  return { record: merged, warnings };
}

/**
 * Merges the target's fields in `merged` (changed in place): a chat or thread given changes
 * that one only, and a new target drops the old one's chat and thread.
 * @throws UsageError for a chat id that names a thread while a thread is given too
 */
function mergeTarget(
  merged: Subscription,
  options: { existing: Subscription | undefined; changes: Subscription; name: string },
): void {
  const { existing, changes, name } = options;
  // One flag changes one option of the target: --deliver-thread keeps the chat id.
  if (changes.deliver_extra !== undefined) {
    merged.deliver_extra = { ...existing?.deliver_extra, ...changes.deliver_extra };
  }
  // Another target without a chat id of its own: the old target's chat means nothing
  // there (a Telegram chat is not a Slack channel), so the new one uses its home channel.
  // The log target has no chats: a chat id given while it was the target was for the next.
  const retargeted = changes.deliver !== undefined && changes.deliver !== existing?.deliver &&
    (existing?.deliver ?? "log") !== "log";
  // Its thread neither: a Telegram topic is no Slack thread.
  if (retargeted && merged.deliver_extra) {
    if (changes.deliver_extra?.chat_id === undefined) delete merged.deliver_extra.chat_id;
    if (changes.deliver_extra?.thread === undefined) delete merged.deliver_extra.thread;
  }
  // `--deliver-thread none` asked for no thread.
  if (merged.deliver_extra?.thread === "") delete merged.deliver_extra.thread;
  if (merged.deliver_extra && Object.keys(merged.deliver_extra).length === 0) {
    delete merged.deliver_extra;
  }
  if (merged.deliver_extra?.thread !== undefined && merged.deliver_extra.chat_id?.includes(":")) {
    throw new UsageError(
      `Cannot subscribe "${name}": the chat id ${merged.deliver_extra.chat_id} already names a ` +
        `thread after its colon, and --deliver-thread names another: give the thread once`,
    );
  }
}

/**
 * Stores the merged record of `name` in `records` (inside `updateSubscriptionsOf`), as
 * `subscribe` and the dashboard's form do: {@link mergeSubscription} of the stored record (or
 * of what `keep` keeps of it) with the fields given, and the warning of a secret generated
 * for a record that had none.
 * @param records the subscription file's records, changed in place
 * @param name the subscription's name
 * @param options as {@link mergeSubscription}'s, and `keep`: the fields of the stored record
 *   the changes start from (@default {all of them})
 * @returns the record stored, the stored record it replaced (undefined for a new name), the
 *   warnings, and whether a secret was generated for a record that had none
 * @throws ConfigError, UsageError as {@link mergeSubscription}
 */
export function storeMerged(
  records: SubscriptionRecords,
  name: string,
  options: {
    changes: Subscription;
    nowIso: string;
    config: Pick<Config, "paths" | "env">;
    keep?: (existing: Subscription) => Subscription;
  },
): { record: Subscription; existing?: Subscription; warnings: string[]; generated: boolean } {
  const { changes, keep = (existing) => existing } = options;
  const existing = Object.hasOwn(records, name) ? records[name] : undefined;
  const merged = mergeSubscription(existing && keep(existing), { ...options, name });
  const generated = generatedForEmptySecret(existing, changes);
  records[name] = merged.record;
  return {
    record: merged.record,
    ...(existing === undefined ? {} : { existing }),
    warnings: [...merged.warnings, ...generated],
    generated: generated.length > 0,
  };
}

/**
 * Refuses a merged record that still has a field of the wrong type, as the gateway would.
 * @param options `name`: the subscription's; `file`: the subscription file
 * @throws ConfigError naming the field, and how to fix it
 */
function refuseWrongTypes(merged: Subscription, options: { name: string; file: string }): void {
  const { name, file } = options;
  try {
    const where = `subscription "${name}" in ${file}`;
    checkRecord(merged as Record<string, unknown>, where, file);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new ConfigError(
      `${error.message}; fix it in the file, or give it anew with its flag where it has one`,
      { file },
    );
  }
}
