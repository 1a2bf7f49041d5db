/**
 * Bad input against the real gateway on a real port: every case gets its 4xx from docs/http.md,
 * nothing is dispatched, the gateway keeps serving, and no secret reaches a response or the log.
 * Raw TCP is used where `fetch` cannot produce the bytes (lying Content-Length, chunked
 * framing, invalid header bytes, unnormalised paths).
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { join } from "node:path";
import type { LogRecord } from "@logtape/logtape";
import { sign } from "@octokit/webhooks-methods";
import { loadConfig } from "../../lib/config/mod.ts";
import { startLogging, stopLogging } from "../../lib/log.ts";
import { type GatewayOptions, type RunningGateway, startGateway } from "../../server/gateway.ts";
import { enabledConfig, startGatewayProcess, tempHome } from "../_helpers.ts";

const SECRET = "sub-secret-Qm4zT7vK2pX9wL1n";
const GLOBAL_SECRET = "global-secret-Hy6rB3cN8dF0";
const MAX_BODY = 65_536;
const CONFIG = enabledConfig(
  0,
  `      max_body_bytes: ${MAX_BODY}\n      secret: ${GLOBAL_SECRET}\n` +
    "      routes:\n        ci-alerts: {events: [pipeline]}\n",
);
/** Keeps the worker off the network should anything be dispatched. */
const OPTIONS: GatewayOptions = { fetch: () => Promise.reject(new Error("no network in tests")) };
const encoder = new TextEncoder();

type Bytes = Uint8Array<ArrayBuffer>;
type HeaderMap = Record<string, string | number | null>;

function concat(...parts: Uint8Array[]): Bytes {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((offset, p) => (out.set(p, offset), offset + p.length), 0);
  return out;
}

/** An HTTP/1.1 request as bytes; `Content-Length` is the body's unless given (null: none). */
function http(head: string, headers: HeaderMap, body: Uint8Array | string = ""): Bytes {
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  const all = {
    host: "127.0.0.1",
    connection: "close",
    "content-length": bytes.length,
    ...headers,
  };
  const lines = Object.entries(all).filter(([, v]) => v !== null).map(([k, v]) => `${k}: ${v}`);
  return concat(encoder.encode(`${head} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n`), bytes);
}

/** An unsigned POST to `/webhooks/gh`. */
const post = (headers: HeaderMap, body: Uint8Array | string = "") =>
  http("POST /webhooks/gh", headers, body);

/** An unsigned chunked POST to `/webhooks/gh`; `frames` is the raw chunked body. */
const chunked = (frames: string) =>
  post({ "content-length": null, "transfer-encoding": "chunked" }, frames);

/** Signs with the providers' own library; bytes that are not UTF-8 text are HMAC'd directly. */
async function signature(body: Uint8Array | string): Promise<string> {
  if (typeof body === "string" && body !== "") return await sign(SECRET, body);
  // octokit signs strings only (and refuses an empty one); node:crypto gives the same HMAC.
  return `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`;
}

/** A POST signed with the subscription's secret, so that only later steps can refuse it. */
async function signed(body: Uint8Array | string, headers: HeaderMap = {}, path = "/webhooks/gh") {
  return http(`POST ${path}`, {
    "content-type": "application/json",
    "x-github-event": "issues",
    "x-github-delivery": crypto.randomUUID(),
    "x-hub-signature-256": await signature(body),
    ...headers,
  }, body);
}

/** Puts raw bytes where the request's first `@` is: header bytes no string header can carry. */
function withBytes(request: Bytes, bytes: number[]): Bytes {
  const at = request.indexOf(0x40);
  return concat(request.subarray(0, at), new Uint8Array(bytes), request.subarray(at + 1));
}

interface RawResponse {
  status: number;
  headers: Headers;
  body: string;
  text: string;
}

/** Parses one response from the bytes so far; null while incomplete. */
function parseResponse(bytes: Uint8Array, ended: boolean): RawResponse | null {
  const text = new TextDecoder().decode(bytes);
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
  const headers = new Headers(lines.map((line) => {
    const colon = line.indexOf(":");
    return [line.slice(0, colon), line.slice(colon + 1).trim()];
  }));
  const body = text.slice(end + 4);
  const length = headers.get("content-length");
  const complete = length === null ? ended : encoder.encode(body).length >= Number(length);
  if (!complete && !ended) return null;
  return { status: Number(statusLine.split(" ")[1]), headers, body, text };
}

/**
 * Sends raw bytes and reads one response. Resolves null when the server closes the connection
 * without answering; a 10 s guard turns a hang into null rather than a stuck test.
 */
async function exchange(
  port: number,
  request: Uint8Array,
  options: { closeWrite?: boolean } = {},
): Promise<RawResponse | null> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const guard = setTimeout(() => conn.close(), 10_000);
  let received: Uint8Array = new Uint8Array();
  try {
    // A server that answers early may reset the connection while the rest is being written.
    await conn.write(request).catch(() => {});
    if (options.closeWrite) await conn.closeWrite().catch(() => {});
    const buffer = new Uint8Array(65_536);
    while (true) {
      const n = await conn.read(buffer).catch(() => null);
      if (n !== null) received = concat(received, buffer.subarray(0, n));
      const response = parseResponse(received, n === null);
      if (response || n === null) return response;
    }
  } finally {
    clearTimeout(guard);
    try {
      conn.close();
    } catch { /* already closed by the guard */ }
  }
}

/** One bad request and what it must get. */
interface Case {
  name: string;
  request: () => Bytes | Promise<Bytes>;
  /** The status; "4xx or closed" where the HTTP layer may drop the connection instead. */
  status: number | "4xx or closed";
  match?: RegExp;
  /** False where Deno's HTTP layer answers before the app (no JSON body, no log line). */
  logged?: boolean;
  /** Ends the request stream after writing (the sender gives up mid-body). */
  closeWrite?: boolean;
}

const issue = JSON.stringify({ action: "opened", issue: { number: 1 } });
const multipart = '--b\r\nContent-Disposition: form-data; name="payload"\r\n\r\n{}\r\n--b--\r\n';
const contentType = (type: string) => ({ "content-type": type });

const CASES: Case[] = [
  // size
  {
    name: "a declared Content-Length over the limit, body unsent",
    request: () => post({ "content-length": 1e9 }),
    status: 413,
  },
  {
    name: "a body over the limit with its Content-Length",
    request: () => signed("x".repeat(MAX_BODY + 1)),
    status: 413,
    match: /larger than 65536/,
  },
  {
    name: "a chunked body over the limit",
    request: () => chunked(`8000\r\n${"x".repeat(0x8000)}\r\n`.repeat(3) + "0\r\n\r\n"),
    status: 413,
  },
  {
    name: "a chunked body over the limit, still being sent",
    request: () => chunked(`4000\r\n${"x".repeat(0x4000)}\r\n`.repeat(5)),
    status: 413,
  },
  // a Content-Length that lies, or HTTP framing that is broken
  {
    name: "Content-Length shorter than the body, whole body signed",
    request: () => signed(issue, { "content-length": 5 }),
    status: 401,
    match: /invalid signature/,
  },
  {
    name: "Content-Length shorter than the body, prefix signed",
    request: async () =>
      post(
        { "content-length": 5, "x-hub-signature-256": await signature(issue.slice(0, 5)) },
        issue,
      ),
    status: 400,
    match: /not valid JSON/,
  },
  {
    name: "Content-Length longer than the body, sender gives up",
    // With a signature header, so the body is read (one without is refused before that).
    request: async () =>
      post({ "content-length": 500, "x-hub-signature-256": await signature(issue) }, issue),
    status: 400,
    match: /could not be read/,
    closeWrite: true,
  },
  {
    name: "chunked body cut short, sender gives up",
    request: () => chunked(`100\r\n${issue}`),
    status: 400,
    match: /could not be read/,
    closeWrite: true,
  },
  {
    name: "Content-Length not a number",
    request: () => post({ "content-length": "abc" }, "{}"),
    status: 400,
    logged: false,
  },
  {
    name: "two different Content-Lengths",
    request: () => post({ "content-length": "2\r\ncontent-length: 1" }, "{}"),
    status: 400,
    logged: false,
  },
  {
    name: "Content-Length next to chunked",
    request: () =>
      post({ "content-length": 3, "transfer-encoding": "chunked" }, "2\r\n{}\r\n0\r\n\r\n"),
    status: 400,
    logged: false,
  },
  {
    name: "a chunk size that is not hex",
    request: () => chunked("zz\r\n{}\r\n0\r\n\r\n"),
    status: "4xx or closed",
  },
  // parse (signed, so that the body itself is what fails)
  {
    name: "a signed body that is not UTF-8",
    request: () => signed(new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])),
    status: 400,
    match: /not valid UTF-8/,
  },
  {
    name: "a signed body that is not JSON",
    request: () => signed("hello, gateway"),
    status: 400,
    match: /not valid JSON/,
  },
  {
    name: "a signed body nested 10,000 levels deep",
    request: () => signed("[".repeat(10_000) + "]".repeat(10_000)),
    status: 400,
    match: /nested deeper/,
  },
  { name: "a signed empty body", request: () => signed(""), status: 400, match: /empty body/ },
  {
    name: "an unsigned empty body",
    request: () => post({}),
    status: 401,
    match: /missing signature/,
  },
  // unknown content types
  {
    name: "application/xml, unsigned",
    request: () => post(contentType("application/xml"), "<a/>"),
    status: 401,
  },
  {
    name: "application/xml, signed",
    request: () => signed("<issue><n>1</n></issue>", contentType("application/xml")),
    status: 400,
  },
  {
    name: "multipart/form-data, signed",
    request: () => signed(multipart, contentType("multipart/form-data; boundary=b")),
    status: 400,
  },
  {
    name: "JSON in UTF-16, signed",
    request: () =>
      signed(
        new Uint8Array([0xff, 0xfe, 0x7b, 0, 0x7d, 0]),
        contentType("application/json; charset=utf-16"),
      ),
    status: 400,
  },
  {
    name: "a form whose payload is not JSON, signed",
    request: () => signed("payload=%7Bnot", contentType("application/x-www-form-urlencoded")),
    status: 400,
  },
  {
    name: "a form whose payload percent-encodes invalid UTF-8, signed",
    request: () =>
      signed('payload={"a":"%FF%FE"}', contentType("application/x-www-form-urlencoded")),
    status: 400,
  },
  // huge and invalid headers
  {
    name: "a 60 KB signature header",
    request: () => post({ "x-hub-signature-256": `sha256=${"a".repeat(60_000)}` }, "{}"),
    status: 401,
  },
  {
    name: "a 100 KB header value",
    request: () => signed("{}", { "x-junk": "a".repeat(100_000) }),
    status: 400,
    logged: false,
  },
  {
    name: "a 1 MB header value",
    request: () => signed("{}", { "x-junk": "a".repeat(1_000_000) }),
    status: "4xx or closed",
  },
  {
    name: "a control byte in a header name",
    request: () => post({ "x-bad\u0001name": "y" }),
    status: 400,
    logged: false,
  },
  {
    name: "non-ASCII bytes in the signature header",
    request: () => withBytes(post({ "x-hub-signature-256": "sha256=@" }, "{}"), [0xff, 0xc3, 0x28]),
    status: 401,
  },
  // path tricks, each signed with the secret of gh so that only routing can refuse it
  ...[
    "..",
    "%2e%2e",
    "..%2fgh",
    "gh%2f..",
    "gh%2Fx",
    "GH",
    "Gh",
    "gh%00",
    "gh%20",
    "%ff",
    "g".repeat(65),
    "nope",
  ].map((name): Case => ({
    name: `/webhooks/${name}`,
    request: () => signed(issue, {}, `/webhooks/${name}`),
    status: 404,
    match: /unknown subscription/,
  })),
  {
    name: "a long unknown name of $` and $' (String.replace patterns)",
    request: () => signed(issue, {}, `/webhooks/${"$%60$'".repeat(30)}`),
    status: 404,
    match: /^\{"error":"unknown subscription: [^"]{81}"\}$/,
  },
  ...[
    "/webhooks/../webhooks/gh",
    "/webhooks/./gh",
    "/webhooks/gh/extra",
    "/webhooks//gh",
    "/webhooks/",
  ].map((path): Case => ({
    name: path,
    request: () => signed(issue, {}, path),
    status: 404,
    // Answered by app.notFound, which logs nothing: see the ignored step below.
    logged: false,
  })),
  // a Host header that would move where Deno's URL of the request has its path
  {
    name: "a Host that routes POST /health to a subscription",
    request: () => signed(issue, { host: "x/webhooks/gh?" }, "/health"),
    status: 400,
    match: /^\{"error":"invalid Host header \(14 characters\): expected host\[:port\]"\}$/,
  },

  {
    name: "a Host that routes a webhook URL to /health",
    request: () => http("GET /webhooks/nope", { host: "x/health#" }),
    status: 400,
    match: /invalid Host header/,
  },
  ...["x@y", "x\\y", "x y", "x:80/"].map((host): Case => ({
    name: `Host: ${host}`,
    request: () => signed(issue, { host }),
    status: 400,
    match: /invalid Host header/,
  })),
  // methods other than POST (HEAD answers without a body)
  ...["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PURGE"].map((method): Case => ({
    name: method,
    request: () => http(`${method} /webhooks/gh`, {}, "{}"),
    status: 405,
    match: /use POST/,
  })),
  { name: "HEAD", request: () => http("HEAD /webhooks/gh", {}), status: 405, logged: false },
  { name: "CONNECT", request: () => http("CONNECT /webhooks/gh", {}), status: 400, logged: false },
];

interface Suite {
  gateway: RunningGateway;
  records: LogRecord[];
  responses: string[];
}

/** Sends one case, checks its answer, then that the gateway still serves and stored nothing. */
async function check(suite: Suite, bad: Case): Promise<void> {
  const before = suite.records.length;
  const response = await exchange(suite.gateway.port, await bad.request(), bad);
  if (response) suite.responses.push(response.text);
  if (bad.status === "4xx or closed") {
    assert.ok(response === null || (response.status >= 400 && response.status < 500));
  } else {
    assert.ok(response, "the gateway answered");
    assert.equal(response.status, bad.status, response.text);
    if (bad.match) assert.match(response.body, bad.match);
    if (bad.status === 405) assert.equal(response.headers.get("allow"), "POST");
    if (bad.logged ?? true) {
      assert.equal(typeof JSON.parse(response.body).error, "string", "a JSON error body");
      const lines = suite.records.slice(before);
      assert.ok(lines.some((r) => r.properties.status === bad.status), "a log line");
    }
  }
  await assertStillServing(suite);
}

async function assertStillServing(suite: Suite): Promise<void> {
  const health = await fetch(`${suite.gateway.url}/health`);
  assert.deepEqual(await health.json(), { status: "ok", platform: "webhook" });
  assert.deepEqual(await suite.gateway.store.listEvents({}), [], "nothing was dispatched");
}

async function startSuite(home: string, options: GatewayOptions = OPTIONS) {
  await Deno.writeTextFile(
    join(home, "webhook_subscriptions.json"),
    JSON.stringify({ gh: { secret: SECRET, rate_limit: 1_000_000 } }),
  );
  const config = await loadConfig({ AGENT_HOME: home, HOME: "/nonexistent" });
  return await startGateway(config, options);
}

Deno.test("bad input gets its 4xx, dispatches nothing, and leaks no secret", async (t) => {
  await using home = await tempHome({ config: CONFIG });
  const logFile = join(home.home, "logs", "gateway.log");
  const records: LogRecord[] = [];
  await startLogging({ file: logFile, extraSinks: [(record) => void records.push(record)] });
  const gateway = await startSuite(home.home);
  const suite: Suite = { gateway, records, responses: [] };
  try {
    for (const bad of CASES) {
      const expected = typeof bad.status === "number" ? bad.status : "4xx";
      await t.step(`${bad.name} → ${expected}`, () => check(suite, bad));
    }
    await t.step("a stalled body does not stop the gateway serving others", async () => {
      const stalled = await Deno.connect({ hostname: "127.0.0.1", port: gateway.port });
      try {
        await stalled.write(post({ "content-length": 500 }, issue));
        await check(suite, {
          name: "",
          request: () => signed(issue, {}, "/webhooks/x"),
          status: 404,
        });
      } finally {
        stalled.close();
      }
    });
    await t.step({
      name: "a path outside the webhook routes is logged too",
      fn: async () => {
        const before = records.length;
        const response = await exchange(gateway.port, await signed(issue, {}, "/webhooks/gh/x"));
        assert.equal(response?.status, 404);
        assert.ok(records.slice(before).some((r) => r.properties.status === 404), "a log line");
      },
    });
    await t.step(
      "a name that is not one is quoted in its log line, and a Host that is not one is told by its length only",
      async () => {
        const fake = "zz 2026-11-22T10:00:00.000Z INFO ingest accepted gh issues.opened";
        const byName = await exchange(
          gateway.port,
          await signed(issue, {}, `/webhooks/${encodeURIComponent(fake)}`),
        );
        assert.equal(byName?.status, 404);
        const byHost = await exchange(gateway.port, await signed(issue, { host: `evil ${fake}` }));
        assert.equal(byHost?.status, 400);
        const props = records.map((record) => record.properties);
        assert.ok(
          props.some((p) =>
            p.subscription === JSON.stringify(fake) &&
            p.reason === `unknown subscription: ${JSON.stringify(fake)}`
          ),
          JSON.stringify(props.slice(-3)),
        );
        const hostLine = records.at(-1)!;
        assert.deepEqual(hostLine.properties, {
          host_chars: `evil ${fake}`.length,
          method: "POST",
          status: 400,
        });
        assert.doesNotMatch(JSON.stringify(hostLine.message), /evil|accepted/);
      },
    );
    await t.step("control: a well-formed signed request is accepted", async () => {
      const response = await exchange(gateway.port, await signed(issue));
      assert.equal(response?.status, 202, response?.text);
      suite.responses.push(response.text);
      assert.equal((await gateway.store.listEvents({})).length, 1);
    });
    await t.step("control: the Host headers of real senders and proxies are served", async () => {
      const hosts = ["localhost:8644", "[::1]:8644", "hooks.example.com", "xn--bcher-kva.example"];
      for (const host of hosts) {
        const response = await exchange(gateway.port, await signed(issue, { host }));
        assert.equal(response?.status, 202, `${host}: ${response?.text}`);
      }
      const http10 = await exchange(
        gateway.port,
        new TextEncoder().encode(
          new TextDecoder().decode(await signed(issue, { host: null })).replace(
            "HTTP/1.1",
            "HTTP/1.0",
          ),
        ),
      );
      assert.equal(http10?.status, 202, http10?.text);
      assert.equal((await gateway.store.listEvents({})).length, 1 + hosts.length + 1);
    });
  } finally {
    await gateway.stop({ deadlineMs: 0 });
    await stopLogging();
  }
  const logText = await Deno.readTextFile(logFile);
  assert.match(logText, /rejected gh/, "the log file holds the rejections");
  const records_ = records.map((r) => JSON.stringify([r.message, r.properties]));
  for (const text of [...suite.responses, logText, ...records_]) {
    assert.ok(!text.includes(SECRET) && !text.includes(GLOBAL_SECRET), `a secret leaked: ${text}`);
  }
});

Deno.test("a Host header with an Authorization line merged into it is refused, and no log line or answer holds the token", async () => {
  await using home = await tempHome({ config: CONFIG });
  const logFile = join(home.home, "logs", "gateway.log");
  const records: LogRecord[] = [];
  await startLogging({ file: logFile, extraSinks: [(record) => void records.push(record)] });
  const gateway = await startSuite(home.home);
  const token = "glpat-Zx9Qw3Er7Ty1Ui5Op";
  const host = `127.0.0.1 Authorization: Bearer ${token}`;
  try {
    // What a broken client or proxy sends when it loses the line break between two headers.
    const response = await exchange(gateway.port, await signed(issue, { host }));
    assert.equal(response?.status, 400, response?.text);
    assert.deepEqual(JSON.parse(response.body), {
      error: `invalid Host header (${host.length} characters): expected host[:port]`,
    });
    await assertStillServing({ gateway, records, responses: [] });
  } finally {
    await gateway.stop({ deadlineMs: 0 });
    await stopLogging();
  }
  const logText = await Deno.readTextFile(logFile);
  assert.match(logText, new RegExp(`invalid Host header of ${host.length} characters on POST`));
  for (const text of [logText, ...records.map((r) => JSON.stringify([r.message, r.properties]))]) {
    assert.doesNotMatch(text, /glpat-|Bearer|Authorization/, text);
  }
});

Deno.test({
  name: "a body that stops arriving is answered 408 after the body timeout",
  async fn() {
    await using home = await tempHome({ config: CONFIG });
    const options: GatewayOptions = { ...OPTIONS, bodyTimeoutMs: 200 };
    const gateway = await startSuite(home.home, options);
    try {
      // Signed (the signature is of the whole body, which never comes), so the body is read.
      const signedHead = post({
        "content-length": 500,
        "x-hub-signature-256": await signature(issue.padEnd(500)),
      }, issue);
      const response = await exchange(gateway.port, signedHead);
      assert.equal(response?.status, 408, response?.text);
      assert.deepEqual(await gateway.store.listEvents({}), []);
    } finally {
      await gateway.stop({ deadlineMs: 0 });
    }
  },
});

Deno.test("the body timeout follows a steady clock: the system clock set an hour forward does not cut a body off", async () => {
  await using home = await tempHome({ config: CONFIG });
  const gateway = await startSuite(home.home, { ...OPTIONS, bodyTimeoutMs: 2_000 });
  const wallClock = Date.now;
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: gateway.port });
  try {
    const request = await signed(issue);
    const cut = request.length - 20;
    await conn.write(request.subarray(0, cut));
    await new Promise((resolve) => setTimeout(resolve, 100));
    Date.now = () => wallClock() + 3_600_000;
    // Two sweeps of the deadlines (one per 200 ms) see the clock an hour on.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await conn.write(request.subarray(cut));
    const buffer = new Uint8Array(65_536);
    let received: Uint8Array = new Uint8Array();
    let response: RawResponse | null = null;
    while (response === null) {
      const n = await conn.read(buffer);
      if (n !== null) received = concat(received, buffer.subarray(0, n));
      response = parseResponse(received, n === null);
      if (n === null) break;
    }
    assert.equal(response?.status, 202, response?.text);
  } finally {
    Date.now = wallClock;
    conn.close();
    await gateway.stop({ deadlineMs: 0 });
  }
});

Deno.test("a request without any signature header is refused before its body arrives", async () => {
  await using home = await tempHome({ config: CONFIG });
  const gateway = await startSuite(home.home);
  try {
    // Headers only: the declared body never comes. Without the early refusal this waits out
    // the 30 s body timeout (and `exchange` gives up after 10 s).
    const started = Date.now();
    const response = await exchange(gateway.port, post({ "content-length": 60_000 }));
    assert.equal(response?.status, 401, response?.text);
    assert.deepEqual(JSON.parse(response.body), { error: "missing signature" });
    assert.ok(Date.now() - started < 5_000);
    // Over the size limit, the size step still answers first.
    const large = await exchange(gateway.port, post({ "content-length": MAX_BODY + 1 }));
    assert.equal(large?.status, 413, large?.text);
  } finally {
    await gateway.stop({ deadlineMs: 0 });
  }
});

Deno.test("bodies that never finish hold at most the body budget, and only until their 408", async () => {
  await using home = await tempHome({ config: CONFIG });
  const budget = 3 * MAX_BODY;
  const gateway = await startSuite(home.home, {
    ...OPTIONS,
    bodyBudgetBytes: budget,
    bodyTimeoutMs: 2_000,
  });
  const stalled: Deno.TcpConn[] = [];
  /** A signed request that sends `sent` bytes of its MAX_BODY body, on a connection kept open. */
  const stall = async (sent: number) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: gateway.port });
    stalled.push(conn);
    const request = await signed("x".repeat(MAX_BODY));
    await conn.write(request.subarray(0, request.length - MAX_BODY + sent));
  };
  try {
    // Three declared bodies, however little of them came, fill the budget: the next gets 503.
    await stall(0);
    await stall(100);
    await stall(MAX_BODY - 100);
    await eventuallyBusy(gateway.port);
    // A chunked body reserves its chunks as they come, and is refused once they do not fit.
    const half = "y".repeat(MAX_BODY / 2);
    const chunkedBody = `${half.length.toString(16)}\r\n${half}\r\n0\r\n\r\n`;
    const refused = await exchange(
      gateway.port,
      await signed(chunkedBody, { "content-length": null, "transfer-encoding": "chunked" }),
    );
    assert.equal(refused?.status, 503, refused?.text);
    assert.equal(refused.headers.get("retry-after"), "5");
    assert.deepEqual(await gateway.store.listEvents({}), []);
    // At their 408 the stalled bodies give their reservations back, though their senders stay.
    let accepted: RawResponse | null = null;
    for (let i = 0; i < 100 && accepted?.status !== 202; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const large = JSON.stringify({ pad: "w".repeat(MAX_BODY - 20) });
      accepted = await exchange(gateway.port, await signed(large));
    }
    assert.equal(accepted?.status, 202, accepted?.text);
  } finally {
    for (const conn of stalled.splice(0)) conn.close();
    await gateway.stop({ deadlineMs: 0 });
  }
});

Deno.test("a body trickled a byte at a time costs about its bytes, not a server buffer per byte", async () => {
  await using home = await tempHome({ config: CONFIG });
  await Deno.writeTextFile(
    join(home.home, "webhook_subscriptions.json"),
    JSON.stringify({ gh: { secret: SECRET } }),
  );
  // The real gateway in a process of its own, so that its memory is its own.
  await using gateway = await startGatewayProcess({ AGENT_HOME: home.home });
  const port = Number(new URL(gateway.url).port);
  const rssMb = async () =>
    Number(
      (await Deno.readTextFile(`/proc/${gateway.child.pid}/status`)).match(/VmRSS:\s+(\d+)/)![1],
    ) /
    1024;
  const senders: Deno.TcpConn[] = [];
  try {
    for (let i = 0; i < 30; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.setNoDelay(true); // each write its own segment
      senders.push(conn);
      const request = await signed("x".repeat(MAX_BODY));
      await conn.write(request.subarray(0, request.length - MAX_BODY));
    }
    const before = await rssMb();
    // 30 senders × 200 writes of one byte: 6,000 bytes. Each chunk the server hands over is a
    // view of a 64 KiB buffer: keeping the chunks kept those, and the gateway grew by 300 MB.
    for (let round = 0; round < 200; round++) {
      await Promise.all(senders.map((conn) => conn.write(encoder.encode("x"))));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const grownMb = (await rssMb()) - before;
    // Now: the chunks are copied out and their buffers left to the garbage collector (60 to
    // 70 MB of them at a time here).
    assert.ok(grownMb < 150, `grew by ${grownMb.toFixed(0)} MB`);
  } finally {
    for (const conn of senders) conn.close();
  }
});

/** Waits until a signed request with a declared body of MAX_BODY is refused 503 at once. */
async function eventuallyBusy(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const response = await exchange(port, await signed("z".repeat(MAX_BODY)));
    if (response?.status === 503) {
      assert.equal(response.headers.get("retry-after"), "5");
      assert.match(JSON.parse(response.body).error, /too many request bodies/);
      return;
    }
    assert.notEqual(response?.status, 202, "a body over the budget was accepted");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail("no 503 with the budget taken by stalled bodies");
}
