/**
 * The dashboard token (docs/dashboard.md): a random secret kept in `state/dashboard.token`
 * (mode 0600, in the state folder, mode 0700), out of the files people edit and paste. Whoever
 * can read that file can open the dashboard: `agent dashboard` reads it to make a login link,
 * and Prometheus may send it as a bearer token to `/metrics`.
 *
 * The link does not carry the token. It carries a login code made from it: an expiry time and a
 * random nonce under an HMAC of the token. The code is short-lived ({@link LOGIN_CODE_TTL_MS})
 * and the dashboard takes each nonce once, so the link left in a browser's history or a
 * terminal's scrollback opens nothing later, while the token, which lasts, never appears in a
 * URL. The CLI makes the code on its own, with no channel to the gateway: reading the 0600 file
 * is the proof of being its owner. Rotating the token ends every session, since sessions are
 * signed with it too.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { ConfigError } from "../../lib/errors.ts";
import { withFileLock, writeFileAtomic } from "../../lib/config/fs.ts";
import { macOf, randomText } from "./_hmac.ts";

/** How long a login code works after `agent dashboard` made it, in ms: 10 minutes. */
export const LOGIN_CODE_TTL_MS = 10 * 60_000;

/** What a token looks like: 43 base64url characters (32 random bytes). */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{32,200}$/;

/**
 * Where the dashboard token is kept: `state/dashboard.token`, beside the state database.
 * @param stateDb the path of `state/gateway.db` (`HomePaths.stateDb`)
 * @returns the token file's path
 */
export function dashboardTokenPath(stateDb: string): string {
  return join(dirname(stateDb), "dashboard.token");
}

/**
 * Reads the token.
 * @param path the token file (see {@link dashboardTokenPath})
 * @returns the token; null when the file does not exist
 * @throws ConfigError naming the file when it cannot be read, or holds no token (edited by hand:
 *   `agent dashboard --rotate` writes a new one)
 */
export async function readToken(path: string): Promise<string | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw new ConfigError(`Cannot read ${path}: ${(error as Error).message}`, { file: path });
  }
  const token = text.trim();
  if (!TOKEN_PATTERN.test(token)) {
    throw new ConfigError(
      `${path} does not hold a dashboard token (32 or more of A-Z a-z 0-9 _ -); ` +
        "write a new one with: agent dashboard --rotate",
      { file: path },
    );
  }
  return token;
}

/**
 * The token, created first when the file does not exist. The CLI and the gateway may both
 * create it at once: a lock on the file makes them agree on one.
 * @param path the token file (see {@link dashboardTokenPath})
 * @returns the token
 * @throws ConfigError naming the file when it cannot be read or written, or holds no token
 */
export async function ensureToken(path: string): Promise<string> {
  const token = await readToken(path);
  if (token !== null) return token;
  return await withFileLock(path, async () => {
    const written = await readToken(path);
    if (written !== null) return written;
    const fresh = randomText(32);
    await writeFileAtomic(path, `${fresh}\n`);
    return fresh;
  });
}

/**
 * Replaces the token with a new random one: every session and login link made with the old
 * one stops working at the dashboard's next request.
 * @param path the token file (see {@link dashboardTokenPath})
 * @returns the new token
 * @throws ConfigError naming the file when it cannot be written
 */
export async function rotateToken(path: string): Promise<string> {
  return await withFileLock(path, async () => {
    const fresh = randomText(32);
    await writeFileAtomic(path, `${fresh}\n`);
    return fresh;
  });
}

/**
 * A login code: `<expiry, seconds since the epoch, base 36>.<nonce>.<HMAC>`, URL-safe.
 * @param token the dashboard token
 * @param nowMs now, in ms since the epoch: the code works until {@link LOGIN_CODE_TTL_MS} later
 * @returns the code, for `/login?code=`
 * @example
 * ```ts
 * const code = await makeLoginCode(await ensureToken(path), Date.now());
 * `${dashboardUrl}/login?code=${code}`; // works once, for 10 minutes
 * ```
 */
export async function makeLoginCode(token: string, nowMs: number): Promise<string> {
  const expiry = Math.floor((nowMs + LOGIN_CODE_TTL_MS) / 1000).toString(36);
  const nonce = randomText(16);
  return `${expiry}.${nonce}.${await macOf(token, "login", [expiry, nonce])}`;
}
