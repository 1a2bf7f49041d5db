/**
 * A secret rotation: the grace period the old secrets keep, the record after the rotation, and
 * its description for `agent webhook rotate-secret`. The gateway accepts the secret and every
 * `previous_secrets` entry until its `expires_at` (docs/subscriptions.md).
 *
 * @module
 */
import { UsageError } from "../lib/errors.ts";
import type { Subscription } from "../lib/subscriptions/mod.ts";

/** Grace period when `--grace` is not given: one day. */
export const DEFAULT_GRACE = "24h";
/** Longest grace period accepted, in milliseconds (365 days): an old secret must end. */
export const MAX_GRACE_MS = 365 * 24 * 60 * 60 * 1000;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

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

/**
 * The secrets of a rotated record, as `--json` prints them.
 * @returns `secret` and `previous_secrets` (empty when none)
 */
export function secretsOf(record: Subscription) {
  return { secret: record.secret, previous_secrets: record.previous_secrets ?? [] };
}

/**
 * What `rotate-secret` prints: the new secret, until when the old and earlier ones are
 * accepted, and what to do with the sender.
 * @param name the subscription's
 * @param url its webhook URL
 * @param record the record after the rotation
 * @param old the entry that keeps the old secret, if one was added
 * @param nowMs the clock, in milliseconds
 * @returns the lines, joined
 */
export function describeRotation(
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
