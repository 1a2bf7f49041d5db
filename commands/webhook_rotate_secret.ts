/**
 * `agent webhook rotate-secret <name>`: gives a dynamic subscription a new secret and keeps the
 * old one valid for a grace period, so the sender can be switched over without losing events.
 * The gateway accepts the secret and every `previous_secrets` entry until its `expires_at`.
 *
 * @module
 */
import { webhookUrl } from "../lib/config/mod.ts";
import { ConfigError, NotFoundError, UsageError } from "../lib/errors.ts";
import { generateSecret, type Subscription } from "../lib/subscriptions/mod.ts";
import { updateSubscriptions, wrongFieldType } from "../lib/subscriptions/file_store.ts";
import { checkName, refuseStatic } from "../lib/subscriptions/routes.ts";
import type { Command } from "./_command.ts";
import { checkSecretForScheme } from "./_subscribe_checks.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags } from "./_flags.ts";
import { advertisedWebhook, untilGatewaySeesChange } from "./_running_gateway.ts";

/** Grace period when `--grace` is not given: one day. */
export const DEFAULT_GRACE = "24h";
/** Longest grace period accepted, in milliseconds (365 days): an old secret must end. */
export const MAX_GRACE_MS = 365 * 24 * 60 * 60 * 1000;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

const usage =
  `Usage: agent webhook rotate-secret <name> [--grace DURATION] [--secret SECRET] [--json]

Issues a new secret for the subscription <name>. The old secret stays valid for the grace
period so the sender can be updated; secrets of earlier rotations still valid end with it at
the latest, and those that have expired are dropped.

Options:
  --grace DURATION   how long the old secrets are still accepted: 30m, 24h, 7d, 90s, or 0 to
                     stop them all now (after a leak)
                     (default ${DEFAULT_GRACE}, at most 365d)
  --secret SECRET    the new secret (default: 32 random bytes, base64url)
  --json             print the result as JSON`;

const options = {
  grace: { type: "string" },
  secret: { type: "string" },
  json: { type: "boolean" },
} as const;

/** `agent webhook rotate-secret`. */
export const webhookRotateSecret: Command = {
  path: ["webhook", "rotate-secret"],
  summary: "Issue a new secret for a subscription, keeping the old one for a grace period",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, options, usage);
    if (positionals.length !== 1) throw new UsageError(`Expected one <name>.\n\n${usage}`);
    const name = positionals[0];
    checkName(name, "rotate the secret of");
    const graceMs = parseGrace(values.grace ?? DEFAULT_GRACE);
    if (values.secret !== undefined && values.secret.length < 8) {
      throw new UsageError("--secret must be at least 8 characters");
    }

    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    refuseStatic(config, name, "rotate the secret of");
    const nowMs = ctx.now();
    const { record, retired, warnings } = await updateSubscriptions(
      config.paths.subscriptions,
      (records) => {
        if (!Object.hasOwn(records, name)) {
          throw new NotFoundError(`No subscription named "${name}" (see: agent webhook list)`);
        }
        const wrongType = wrongFieldType(records[name]);
        if (wrongType !== undefined) {
          throw new ConfigError(`${wrongType}; fix that field in the file first`, {
            file: config.paths.subscriptions,
          });
        }
        const newSecret = values.secret ?? generateSecret(records[name].auth);
        if (records[name].secret === newSecret) {
          throw new UsageError(`--secret is the current secret of "${name}": nothing to rotate`);
        }
        // As subscribe checks it: once the grace ends, no sender could authenticate otherwise.
        const warnings = checkSecretForScheme(newSecret, records[name].auth);
        const result = rotate(records[name], newSecret, { nowMs, graceMs });
        records[name] = result.record;
        return { ...result, warnings };
      },
    );
    for (const warning of warnings) ctx.stderr(`Warning: ${warning}`);
    // With --grace 0 the old secret is refused from the moment this command returns.
    await untilGatewaySeesChange(config);

    const url = webhookUrl(await advertisedWebhook(config), name);
    ctx.stdout(
      values.json
        ? JSON.stringify({ name, webhook_url: url, ...secretsOf(record) }, null, 2)
        : describeRotation(name, url, record, retired, nowMs),
    );
    return 0;
  },
};

/**
 * Parses a grace period.
 * @param text `0`, or a whole number followed by `s`, `m`, `h` or `d` (`30m`, `24h`, `7d`)
 * @returns the period in milliseconds
 * @throws UsageError for any other text, or a period longer than {@link MAX_GRACE_MS}
 */
export function parseGrace(text: string): number {
  const trimmed = text.trim();
  if (trimmed === "0") return 0;
  const match = /^(\d{1,9})([smhd])$/.exec(trimmed);
  if (!match) {
    const got = JSON.stringify(text);
    throw new UsageError(`--grace must be 0 or a number with a unit (30m, 24h, 7d), got ${got}`);
  }
  const ms = Number(match[1]) * UNIT_MS[match[2]];
  if (ms > MAX_GRACE_MS) throw new UsageError(`--grace must be at most 365d, got ${text}`);
  return ms;
}

/** A secret kept after a rotation, as stored in `previous_secrets`. */
export type PreviousSecret = { secret: string; expires_at: string };

/**
 * The record after a rotation: `newSecret` becomes the secret, the old secret is kept in
 * `previous_secrets` until `nowMs + graceMs` (not kept at all for a zero grace), earlier
 * entries that would outlive it end then too, and entries that have expired, cannot be read,
 * or repeat the new secret are dropped.
 * @param record the stored subscription (not modified)
 * @param newSecret the secret to issue
 * @param options `nowMs`: the clock in milliseconds; `graceMs`: how long the old secret lives
 * @returns the new record (with `updated_at` set to now) and the entry that keeps the old
 *   secret, if one was added
 */
export function rotate(
  record: Subscription,
  newSecret: string,
  options: { nowMs: number; graceMs: number },
): { record: Subscription; retired?: PreviousSecret } {
  const { nowMs, graceMs } = options;
  // No earlier secret outlives the one retired now: `--grace 0` after a leak leaves the new
  // secret alone, and `--grace 1h` after a `--grace 7d` ends both old secrets within the hour.
  const until = nowMs + graceMs;
  const previous = (record.previous_secrets ?? [])
    .map((entry) =>
      Date.parse(entry.expires_at) > until
        ? { ...entry, expires_at: new Date(until).toISOString() }
        : entry
    )
    // The gateway ignores an entry whose expires_at is unreadable (NaN); drop it too.
    .filter((entry) => Date.parse(entry.expires_at) > nowMs && entry.secret !== newSecret);
  let retired: PreviousSecret | undefined;
  if (record.secret && graceMs > 0) {
    retired = { secret: record.secret, expires_at: new Date(nowMs + graceMs).toISOString() };
    previous.push(retired);
  }
  return {
    record: {
      ...record,
      secret: newSecret,
      previous_secrets: previous.length ? previous : undefined,
      updated_at: new Date(nowMs).toISOString(),
    },
    retired,
  };
}

function secretsOf(record: Subscription) {
  return { secret: record.secret, previous_secrets: record.previous_secrets ?? [] };
}

function describeRotation(
  name: string,
  url: string,
  record: Subscription,
  old: PreviousSecret | undefined,
  nowMs: number,
): string {
  const lines = [
    `Rotated the secret of subscription "${name}"`,
    `  URL:         ${url}`,
    `  New secret:  ${record.secret}`,
  ];
  if (old) lines.push(`  Old secret:  ${old.secret} (accepted until ${old.expires_at})`);
  else lines.push("  Old secret:  no longer accepted");
  for (const entry of record.previous_secrets ?? []) {
    if (entry !== old && Date.parse(entry.expires_at) > nowMs) {
      lines.push(`  Earlier:     ${entry.secret} (accepted until ${entry.expires_at})`);
    }
  }
  lines.push(
    "",
    old
      ? `Give the sender the new secret before ${old.expires_at}; the old one is refused after.`
      : "Give the sender the new secret now: requests signed with any other are refused.",
  );
  return lines.join("\n");
}
