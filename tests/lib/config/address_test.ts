import assert from "node:assert/strict";
import { webhookUrl } from "../../../lib/config/mod.ts";

Deno.test("webhookUrl() uses public_url, else localhost for wildcard and loopback hosts", () => {
  assert.equal(
    webhookUrl({ host: "0.0.0.0", port: 8644 }, "gh"),
    "http://localhost:8644/webhooks/gh",
  );
  assert.equal(webhookUrl({ host: "127.0.0.1", port: 1 }, "gh"), "http://localhost:1/webhooks/gh");
  assert.equal(webhookUrl({ host: "10.0.0.5", port: 80 }, "gh"), "http://10.0.0.5:80/webhooks/gh");
  for (const host of ["2001:db8::1", "[2001:db8::1]"]) {
    assert.equal(
      webhookUrl({ host, port: 80 }, "gh"),
      "http://[2001:db8::1]:80/webhooks/gh",
      "an IPv6 address in one pair of brackets, however it is configured",
    );
  }
  assert.equal(
    webhookUrl({ host: "0.0.0.0", port: 1, publicUrl: "https://hooks.example.com" }, "gh"),
    "https://hooks.example.com/webhooks/gh",
  );
});
