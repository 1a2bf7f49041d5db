import { createHmac } from "node:crypto";
import { createApp } from "./server/app.ts";
import { createSignatureVerifier } from "./server/signatures/mod.ts";
import { createMemoryRateLimiter } from "./lib/rate_limit.ts";
import { openStateStore } from "./lib/state/mod.ts";
import { startLogging } from "./lib/log.ts";
const withLog = Deno.args.includes("log");
const fakeStore = Deno.args.includes("fake");
const dir = await Deno.makeTempDir();
if (withLog) await startLogging({ file: dir + "/g.log" });
const real = openStateStore(dir + "/g.db");
let n = 0;
const store = fakeStore
  ? { ...real, accept: () => Promise.resolve({ status: "accepted" as const, eventId: "e" + n++ }) }
  : real;
const body = JSON.stringify({
  action: "opened",
  issue: { title: "t", body: "x".repeat(1900) },
  repository: { full_name: "o/r" },
});
const sig = "sha256=" + createHmac("sha256", "s3cret-s3cret").update(body).digest("hex");
const route = {
  name: "agent",
  origin: "dynamic" as const,
  secret: "s3cret-s3cret",
  prompt: "Summarise {issue.title}",
  rate_limit: 1e9,
};
const app = createApp({
  findRoute: () => route,
  maxBodyBytes: 1e6,
  rateLimitPerMinute: 60,
  verifier: createSignatureVerifier(),
  rateLimiter: createMemoryRateLimiter(),
  store: store as never,
  onAccepted: () => {},
  deliverDirect: () => {
    throw new Error();
  },
  now: Date.now,
  newId: () => crypto.randomUUID(),
});
let d = 0;
const req = () =>
  new Request("http://x/webhooks/agent", {
    method: "POST",
    body,
    headers: {
      "content-type": "application/json",
      "x-github-event": "issues",
      "x-github-delivery": "d" + d++,
      "x-hub-signature-256": sig,
    },
  });
for (let i = 0; i < 2000; i++) await app.fetch(req());
const N = 20000;
const t = performance.now();
for (let r = 0; r < N / 32; r++) {
  await Promise.all(Array.from({ length: 32 }, async () => {
    const res = await app.fetch(req());
    if (res.status !== 202) throw new Error(String(res.status));
    await res.arrayBuffer();
  }));
}
console.log(Deno.args.join(","), "µs/request", ((performance.now() - t) * 1000 / N).toFixed(1));
Deno.exit(0);
