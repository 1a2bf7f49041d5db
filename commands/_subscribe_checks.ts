/**
 * Checks `agent webhook subscribe` makes before it stores a subscription: that its secret can
 * work under its scheme, and that the skills it asks for are installed and usable.
 *
 * @module
 */
import { UsageError } from "../lib/errors.ts";
import { findSkill, listSkills } from "../lib/agents/skills.ts";

/**
 * The schemes whose senders send the secret itself as a header value (`X-Gitlab-Token`,
 * `Authorization: Bearer`), rather than signing with it.
 */
const HEADER_TOKEN_SCHEMES: readonly string[] = ["gitlab", "bearer"];

/** Visible ASCII, with spaces inside only: what a header value can carry unchanged. */
const HEADER_TOKEN = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * Checks that a subscription's secret can work under its scheme.
 * @param secret the secret the subscription will have
 * @param auth its pinned scheme, if any
 * @returns warnings: a Standard Webhooks secret not written `whsec_<base64>`, which the
 *   providers' libraries cannot sign with
 * @throws UsageError for a gitlab or bearer secret that a header cannot carry (letters outside
 *   ASCII, control characters, blanks at either end): no sender could ever authenticate
 */
export function checkSecretForScheme(secret: string, auth: string | undefined): string[] {
  if (auth !== undefined && HEADER_TOKEN_SCHEMES.includes(auth) && !HEADER_TOKEN.test(secret)) {
    throw new UsageError(
      `--auth ${auth} senders send the secret as a header, which carries only ASCII letters, ` +
        "digits and punctuation (spaces inside): this secret could never match. Give another " +
        "--secret, or none for a generated one",
    );
  }
  if (auth === "standard" && !secret.startsWith("whsec_")) {
    return [
      "the secret does not start with whsec_: Standard Webhooks libraries expect " +
      "whsec_<base64> and cannot sign with it. `agent webhook rotate-secret` makes one",
    ];
  }
  return [];
}

/**
 * Checks the skills a subscription asks for as its runs will load them: a broken skill folder
 * matters only when it is asked for; the others are named in one warning line each.
 * @param names the `--skills` names
 * @param options `skillsDir`: the `skills` folder; `warn`: prints a line on stderr
 * @returns once every asked-for skill is found and usable
 * @throws ConfigError naming the `SKILL.md` and the reason when an asked-for skill is broken
 * @throws UsageError naming the unknown skills and listing the installed (and broken) ones
 */
export async function checkSkills(
  names: string[],
  options: { skillsDir: string; warn: (line: string) => void },
): Promise<void> {
  const { skillsDir, warn } = options;
  const listing = await listSkills(skillsDir);
  const { skills, broken } = listing;
  const installed = skills.map((skill) => skill.name);
  // As a run finds them: an asked-for skill whose SKILL.md is broken is refused with its error.
  const missing = names.filter((name) => findSkill(listing, name) === undefined);
  for (const { folder, error } of broken) {
    warn(`Warning: skill "${folder}" cannot be used: ${error.message}`);
  }
  if (missing.length === 0) return;
  const choices = installed.length ? installed.join(", ") : `none (add them under ${skillsDir})`;
  const unusable = broken.length
    ? `; broken: ${broken.map((skill) => skill.folder).join(", ")} (see the warnings above)`
    : "";
  throw new UsageError(
    `Unknown skill ${missing.join(", ")}. Installed skills: ${choices}${unusable}`,
  );
}
