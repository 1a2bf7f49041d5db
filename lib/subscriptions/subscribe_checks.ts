/**
 * Checks `agent webhook subscribe` and the dashboard make before they store a subscription:
 * that its secret can work under its scheme, that `--auth none` is asked for on a gateway that
 * listens on loopback only, and that the skills it asks for are installed and usable.
 *
 * @module
 */
import type { Config } from "../config/mod.ts";
import { UsageError } from "../errors.ts";
import { isLoopbackHost } from "./routes.ts";
import { findSkill, listSkills } from "../agents/skills.ts";
import { HEADER_TOKEN, HEADER_TOKEN_SCHEMES } from "./file_store.ts";
import type { Subscription } from "./mod.ts";

/**
 * Checks that a subscription's secret can work under its scheme.
 * @param secret the secret the subscription will have
 * @param auth its pinned scheme, if any
 * @returns warnings: a Standard Webhooks secret not written `whsec_<base64>`, which the
 *   providers' libraries cannot sign with; with no pinned scheme, a secret a header cannot
 *   carry, which GitLab and Bearer senders could never send (signing senders can)
 * @throws UsageError for a gitlab or bearer secret that a header cannot carry (letters outside
 *   ASCII, control characters, blanks at either end): no sender could ever authenticate
 */
export function checkSecretForScheme(secret: string, auth: string | undefined): string[] {
  const carried = HEADER_TOKEN.test(secret);
  if (auth !== undefined && HEADER_TOKEN_SCHEMES.includes(auth) && !carried) {
    throw new UsageError(
      `--auth ${auth} senders send the secret as a header, which carries only ASCII letters, ` +
        "digits and punctuation (spaces inside): this secret could never match. Give another " +
        "--secret, or none for a generated one",
    );
  }
  if (auth === undefined && !carried) {
    return [
      "the secret has characters no header can carry (outside ASCII, control characters, or " +
      "blanks at its ends): GitLab and Bearer senders, which send it as a header, would always " +
      "get 401. If the sender signs with it (GitHub, Stripe...), pin that scheme with --auth; " +
      "else give an ASCII --secret",
    ];
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
 * Refuses `--auth none` unless the gateway listens on a loopback address: a subscription that
 * takes requests without a signature is for local tools and tests (docs/subscriptions.md#auth-none).
 * @param config the command's configuration: the address the gateway listens on
 * @throws UsageError naming the address and where it is set
 */
export function checkAuthNone(config: Pick<Config, "paths" | "webhook">): void {
  const { host } = config.webhook;
  if (isLoopbackHost(host)) return;
  throw new UsageError(
    `--auth none is accepted only while the gateway listens on a loopback address ` +
      `(127.0.0.1, ::1, localhost), and it listens on ${host} (WEBHOOK_HOST or ` +
      `platforms.webhook.extra.host in ${config.paths.config}): anyone who reaches that address ` +
      "could send events without a signature. Use a signature scheme (--auth github, ...), or " +
      "listen on 127.0.0.1",
  );
}

/**
 * Says when `subscribe` generated a secret for a stored record that had none (edited by hand,
 * or with `"secret": ""`): the gateway refused every request to it with 403, and its sender
 * now needs the new secret.
 * @param existing the record as stored before, if the name had one
 * @param changes the fields the flags give: a `--secret` given is no surprise
 * @returns one warning, or none
 */
export function generatedForEmptySecret(
  existing: Subscription | undefined,
  changes: Subscription,
): string[] {
  // `auth: none` asked for no secret: one made for a scheme given now is printed, no surprise.
  if (existing === undefined || existing.secret || changes.secret !== undefined) return [];
  if (existing.auth === "none") return [];
  return [
    `it had no secret (${existing.secret === "" ? "an empty one" : "none in the file"}), so ` +
    "the gateway refused every request with 403: a new one was generated (printed below); give " +
    "it to the sender",
  ];
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
