import assert from "node:assert/strict";
import { join } from "node:path";
import { homeGatewayId } from "../../../../lib/state/postgres/gateway_id.ts";

Deno.test("homeGatewayId() keeps one id per home across starts, and gives each home its own", async () => {
  const [a, b] = [await Deno.makeTempDir(), await Deno.makeTempDir()];
  try {
    const first = await homeGatewayId(join(a, "state", "gateway.db"));
    assert.match(first, /^gw-[0-9a-f-]{36}$/);
    assert.equal(await homeGatewayId(join(a, "state", "gateway.db")), first, "started again");
    assert.notEqual(await homeGatewayId(join(b, "state", "gateway.db")), first);
    assert.equal((await Deno.stat(join(a, "state", "gateway_id"))).mode! & 0o777, 0o600);
  } finally {
    await Deno.remove(a, { recursive: true });
    await Deno.remove(b, { recursive: true });
  }
});
