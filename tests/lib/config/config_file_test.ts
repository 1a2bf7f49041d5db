import assert from "node:assert/strict";
import { join } from "node:path";
import { createDefaultConfig, editConfigFile } from "../../../lib/config/config_file.ts";
import { loadConfig } from "../../../lib/config/mod.ts";
import { tempHome } from "../../_helpers.ts";

Deno.test("createDefaultConfig() writes an enabled config once and never overwrites", async () => {
  await using h = await tempHome();
  const file = join(h.home, "config.yaml");
  assert.equal(await createDefaultConfig(file), true);
  assert.equal((await loadConfig({ AGENT_HOME: h.home })).webhook.enabled, true);
  await Deno.writeTextFile(file, "# mine\n");
  assert.equal(await createDefaultConfig(file), false);
  assert.equal(await Deno.readTextFile(file), "# mine\n");
});

Deno.test("editConfigFile() refuses broken YAML and leaves the file as it was", async () => {
  await using h = await tempHome({ config: "platforms: [unclosed\n" });
  const file = join(h.home, "config.yaml");
  await assert.rejects(
    () => editConfigFile(file, [{ path: ["platforms", "webhook", "enabled"], value: true }]),
    /not valid YAML[\s\S]*it was not changed/,
  );
  assert.equal(await Deno.readTextFile(file), "platforms: [unclosed\n");
});

Deno.test("editConfigFile() keeps comments and other keys while setting nested values", async () => {
  await using h = await tempHome({ config: "# top\nagent:\n  model: m # keep\n" });
  const file = join(h.home, "config.yaml");
  await editConfigFile(file, [{ path: ["platforms", "webhook", "extra", "port"], value: 9000 }]);
  const text = await Deno.readTextFile(file);
  assert.match(text, /# top/);
  assert.match(text, /model: m # keep/);
  assert.equal((await loadConfig({ AGENT_HOME: h.home })).webhook.port, 9000);
});

Deno.test("editConfigFile() fills keys written with no value (extra:, webhook: ~), keeping their comments", async () => {
  for (
    const config of [
      "# mine\nplatforms:\n  webhook:\n    enabled: true\n    extra:\n      # port: 9000\n",
      "platforms:\n  webhook: ~\n",
      "platforms:\n",
    ]
  ) {
    await using h = await tempHome({ config });
    const file = join(h.home, "config.yaml");
    await editConfigFile(file, [
      { path: ["platforms", "webhook", "enabled"], value: true },
      { path: ["platforms", "webhook", "extra", "port"], value: 8655 },
    ]);
    const text = await Deno.readTextFile(file);
    for (const comment of config.match(/# .*/g) ?? []) assert.ok(text.includes(comment), text);
    const loaded = await loadConfig({ AGENT_HOME: h.home });
    assert.equal(loaded.webhook.port, 8655, text);
    assert.equal(loaded.webhook.enabled, true, text);
  }
});

Deno.test("editConfigFile() refuses to replace a value that is not a mapping, and leaves the file as it was", async () => {
  const config = "platforms:\n  webhook:\n    extra: 5\n";
  await using h = await tempHome({ config });
  const file = join(h.home, "config.yaml");
  await assert.rejects(
    () => editConfigFile(file, [{ path: ["platforms", "webhook", "extra", "port"], value: 1 }]),
    /platforms\.webhook\.extra in .* must be a mapping of keys, not 5; it was not changed/,
  );
  assert.equal(await Deno.readTextFile(file), config);
  const aliased =
    "defaults: &d {host: 127.0.0.1}\nplatforms: {webhook: {enabled: true, extra: *d}}\n";
  await Deno.writeTextFile(file, aliased);
  await assert.rejects(
    () => editConfigFile(file, [{ path: ["platforms", "webhook", "extra", "port"], value: 1 }]),
    /platforms\.webhook\.extra in .* is an alias \(\*d\): write its keys out there/,
  );
  assert.equal(await Deno.readTextFile(file), aliased);
});

Deno.test("editConfigFile() leaves flow mappings as they were written, padded or not", async () => {
  for (
    const route of [
      "        ci-alerts: {events: [pipeline], deliver: slack, deliver_extra: {chat_id: C1}}\n",
      "        ci-alerts: { events: [ pipeline ], deliver: slack, deliver_extra: { chat_id: C1 } }\n",
      // deno fmt's style: mappings padded, sequences not; and a comment with a padded bracket.
      "        ci-alerts: { events: [pipeline, push], deliver: slack } # e.g. [ x ]\n" +
      "        other: {events: [push]}\n",
    ]
  ) {
    await using h = await tempHome({
      config: "platforms:\n  webhook:\n    extra:\n      routes:\n" + route,
    });
    const file = join(h.home, "config.yaml");
    await editConfigFile(file, [{ path: ["platforms", "webhook", "extra", "port"], value: 9000 }]);
    assert.ok((await Deno.readTextFile(file)).includes(route), route);
  }
});

Deno.test("editConfigFile() run ten times at once keeps every edit (setup runs in parallel)", async () => {
  await using h = await tempHome();
  const file = join(h.home, "config.yaml");
  await createDefaultConfig(file);
  await Promise.all(
    Array.from(
      { length: 10 },
      (_, i) => editConfigFile(file, [{ path: ["agent", `key_${i}`], value: i }]),
    ),
  );
  const text = await Deno.readTextFile(file);
  for (let i = 0; i < 10; i++) assert.match(text, new RegExp(`key_${i}: ${i}`));
  assert.match(text, /# agent gateway configuration/, "comments are kept");
});
