import assert from "node:assert/strict";
import { isLoopbackHost, unservedReason } from "../../../lib/subscriptions/routes.ts";

Deno.test("isLoopbackHost() takes 127.0.0.0/8, ::1 and localhost, and no wildcard or other name", () => {
  for (const host of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"]) {
    assert.equal(isLoopbackHost(host), true, host);
  }
  for (
    const host of [
      "0.0.0.0",
      "::",
      "[::]",
      "192.168.1.2",
      "128.0.0.1",
      "127.0.0.256",
      "example.com",
    ]
  ) {
    assert.equal(isLoopbackHost(host), false, host);
  }
});

Deno.test("unservedReason() names a disabled route, and auth none off loopback", () => {
  const route = { name: "local", origin: "dynamic" as const };
  assert.equal(unservedReason(route, "0.0.0.0"), undefined);
  assert.match(unservedReason({ ...route, disabled: true }, "127.0.0.1")!, /^disabled/);
  assert.equal(unservedReason({ ...route, auth: "none" }, "127.0.0.1"), undefined);
  assert.equal(
    unservedReason({ ...route, auth: "none" }, "0.0.0.0"),
    "auth none is served only on a loopback address, and the gateway listens on 0.0.0.0",
  );
  assert.match(unservedReason({ ...route, auth: "none" }, undefined)!, /an unknown address/);
});
