/**
 * A dashboard client for the load benchmarks: what a browser on the events page does while it
 * is open (docs/dashboard.md). It logs in as `agent dashboard`'s link does, with a login code
 * made from `state/dashboard.token`, loads `/events`, then holds open the stream the page names
 * in `data-stream` (`/events/stream`, server-sent events) and reads every message until stopped.
 *
 * @module
 */
import { join } from "node:path";
import { ensureToken, makeLoginCode } from "../server/dashboard/token.ts";

/** What a client read from the events page's stream while it followed it. */
export interface FollowResult {
  /** `change` messages read: one per event's summary the gateway sent. */
  changes: number;
  /** Bytes read from the stream. */
  bytes: number;
}

/** A client following the events page live; `stop()` closes the stream. */
export interface DashboardClient {
  /** Closes the stream and says what was read. */
  stop(): Promise<FollowResult>;
}

/**
 * Where the dashboard of a gateway started in `home` listens, as it wrote it in
 * `state/dashboard.url` (the gateway is started with `DASHBOARD_PORT=0`: any free port).
 * @param home the gateway's `AGENT_HOME`
 * @returns its URL, `http://127.0.0.1:<port>`
 * @throws Error when the gateway wrote none (its dashboard is off or failed to start)
 */
export async function dashboardUrl(home: string): Promise<string> {
  const text = await Deno.readTextFile(join(home, "state", "dashboard.url")).catch(() => "");
  if (!/^http:\/\/\S+$/.test(text.trim())) {
    throw new Error(`the gateway in ${home} serves no dashboard (no state/dashboard.url)`);
  }
  return text.trim();
}

/**
 * Logs in to the dashboard at `url` and follows the events page's live stream.
 * @param url the dashboard's URL, from {@link dashboardUrl}
 * @param home the gateway's `AGENT_HOME`, whose `state/dashboard.token` makes the login code
 * @returns the client, reading the stream until `stop()`
 * @throws Error when the login, the page or the stream is refused
 */
export async function followEventsPage(url: string, home: string): Promise<DashboardClient> {
  const token = await ensureToken(join(home, "state", "dashboard.token"));
  const login = await fetch(`${url}/login?code=${await makeLoginCode(token, Date.now())}`, {
    redirect: "manual",
  });
  await login.body?.cancel();
  const cookie = login.headers.get("set-cookie")?.split(";")[0];
  if (login.status !== 303 || !cookie) throw new Error(`login refused: ${login.status}`);
  const page = await fetch(`${url}/events`, { headers: { cookie } });
  const html = await page.text();
  const stream = html.match(/data-stream="([^"]+)"/)?.[1]?.replaceAll("&amp;", "&");
  if (!page.ok || !stream) throw new Error(`the events page names no stream (${page.status})`);
  const response = await fetch(`${url}${stream}`, {
    headers: { cookie, accept: "text/event-stream" },
  });
  if (!response.ok || !response.body) throw new Error(`stream refused: ${response.status}`);
  const result: FollowResult = { changes: 0, bytes: 0 };
  // Cancelling the reader ends the read in progress; aborting the fetch did not, once the
  // stream had carried messages.
  const reader = response.body.getReader();
  const reading = readMessages(reader, result);
  return {
    async stop() {
      await reader.cancel();
      await reading;
      return result;
    },
  };
}

/** Reads a stream of server-sent events to its end, counting its bytes and `change` messages. */
async function readMessages(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  result: FollowResult,
) {
  const decoder = new TextDecoder();
  let pending = "";
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    result.bytes += read.value.byteLength;
    const messages = (pending + decoder.decode(read.value, { stream: true })).split("\n\n");
    pending = messages.pop() ?? "";
    for (const message of messages) {
      if (!message.startsWith("event: change\n")) continue;
      // As the page's script does with each change, before it updates a row.
      JSON.parse(message.slice(message.indexOf("data: ") + 6));
      result.changes += 1;
    }
  }
}
