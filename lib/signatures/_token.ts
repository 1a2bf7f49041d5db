/**
 * Schemes that send the shared secret itself rather than a signature: GitLab and Bearer. The
 * token is compared with each secret in constant time (see `tokenMatches`); nothing is signed,
 * so the body is not covered and there is no replay window. Use them over HTTPS only.
 *
 * @module
 */

import { tokenMatches } from "./_hmac.ts";
import { headerValue } from "./_headers.ts";
import type { Scheme, SchemeContext, SchemeOutcome } from "./_types.ts";

async function matches(context: SchemeContext, token: string | null): Promise<SchemeOutcome> {
  if (token === null) return "invalid";
  return await tokenMatches(context.keys, context.secrets, token) ? "ok" : "invalid";
}

/**
 * GitLab: `X-Gitlab-Token: <secret token>`, the webhook's secret token sent as-is.
 * Source: https://docs.gitlab.com/user/project/integrations/webhooks/
 */
export const gitlab: Scheme = {
  name: "gitlab",
  headers: ["x-gitlab-token"],
  check: (context) => matches(context, headerValue(context.headers, "x-gitlab-token")),
  sign: ({ secret }) => secret === "" ? null : { "x-gitlab-token": secret },
};

/**
 * Bearer: `Authorization: Bearer <secret>`, for monitoring tools and devices that can set a
 * header but not sign. The `Bearer` keyword is case-insensitive; another authorization scheme
 * (`Basic ...`) is invalid, as the header still commits the request to this scheme. The token
 * is the rest of the header, so a secret with blanks in it (which RFC 6750's token syntax has
 * no room for, but `subscribe --secret` takes) still matches itself.
 * Source: RFC 6750 §2.1, https://www.rfc-editor.org/rfc/rfc6750#section-2.1
 */
export const bearer: Scheme = {
  name: "bearer",
  headers: ["authorization"],
  check(context) {
    const value = headerValue(context.headers, "authorization");
    const token = value === null ? null : /^Bearer +(\S.*)$/i.exec(value)?.[1] ?? null;
    return matches(context, token);
  },
  sign: ({ secret }) => secret === "" ? null : { authorization: `Bearer ${secret}` },
};
