/**
 * Transforms (docs/subscriptions.md#transforms): splitting the command as a shell splits words
 * and refusing what needs a shell, in config.yaml's routes too; running real programs (`sh`
 * scripts) on a payload: the JSON they print, a skip, and each way they fail.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  promptFrom,
  runTransform,
  TransformError,
  transformJson,
  transformProblem,
} from "../../../lib/transforms/mod.ts";
import { transformArgv } from "../../../lib/transforms/_argv.ts";
import { loadConfig } from "../../../lib/config/mod.ts";
import { processExited, tempHome } from "../../_helpers.ts";

/** Writes an `sh` script into a temporary folder; returns its path and the folder's. */
async function script(body: string): Promise<{ path: string; dir: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "transform-" });
  const path = join(dir, "t.sh");
  await Deno.writeTextFile(path, `#!/bin/sh\n${body}\n`);
  return { path, dir, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

Deno.test("transformArgv() splits quotes and backslashes as a shell does", () => {
  assert.deepEqual(transformArgv(`jq -c '{title: .issue.title}'`), [
    "jq",
    "-c",
    "{title: .issue.title}",
  ]);
  assert.deepEqual(transformArgv(`prog "a b" c\\ d 'x|y' "*"`), ["prog", "a b", "c d", "x|y", "*"]);
});

Deno.test("transformProblem() refuses what only a shell does, saying what", () => {
  const cases: [string, RegExp][] = [
    ["jq . | head", /operator \| needs a shell/],
    ["jq . > out.json", /operator > needs a shell/],
    ["a && b", /operator && needs a shell/],
    ["a\nb", /line break/],
    ["cat *.json", /"\*\.json" is a glob/],
    ["echo $HOME", /\$HOME is a variable/],
    ["echo $(id)", /command substitution/],
    ["echo `id`", /backtick/],
    ["prog # note", /comment/],
    ["", /names no program/],
  ];
  for (const [command, message] of cases) {
    assert.match(transformProblem(command) ?? "(none)", message, command);
  }
  assert.equal(transformProblem(`jq -c '.a | .b'`), undefined);
});

Deno.test("runTransform() gives the JSON a program prints from the payload on stdin", async () => {
  await using s = await script(`read -r line; printf '{"got": %s}\\n' "$line"`);
  const result = await runTransform(
    { command: ["sh", s.path], timeoutSeconds: 5 },
    '{"id":12345678901234567891}',
  );
  assert.equal(result.skip, false);
  if (result.skip) return;
  assert.equal(result.json, '{"got": {"id":12345678901234567891}}');
  const context = { event: "issues", subscription: "gh", deliveryId: "d" };
  // Rendered from what it printed, its long number as printed.
  assert.equal(promptFrom("Id {got.id}", result, context), "Id 12345678901234567891");
});

Deno.test('runTransform() reports {"skip": true} as a skip', async () => {
  await using s = await script(`cat >/dev/null; echo '{"skip": true, "why": "quiet"}'`);
  const result = await runTransform({ command: ["sh", s.path], timeoutSeconds: 5 }, "{}");
  assert.deepEqual(result, { skip: true });
});

Deno.test("runTransform() fails with the exit code and the end of stderr", async () => {
  await using s = await script(`echo "first line" >&2; echo "jq: error: bad filter" >&2; exit 3`);
  await assert.rejects(
    runTransform({ command: ["sh", s.path], timeoutSeconds: 5 }, "{}"),
    (error: Error) => {
      assert.ok(error instanceof TransformError);
      assert.match(error.message, /exited with 3: first line\njq: error: bad filter$/);
      return true;
    },
  );
});

Deno.test("runTransform() refuses output that is not JSON, and no output", async () => {
  await using notJson = await script(`echo 'title: crash'`);
  await assert.rejects(
    runTransform({ command: ["sh", notJson.path], timeoutSeconds: 5 }, "{}"),
    /printed what is not JSON .*"title: crash"/,
  );
  await using silent = await script(`echo "nothing to say" >&2`);
  await assert.rejects(
    runTransform({ command: ["sh", silent.path], timeoutSeconds: 5 }, "{}"),
    /printed nothing: nothing to say/,
  );
  await assert.rejects(
    runTransform({ command: ["no-such-transform-program"], timeoutSeconds: 5 }, "{}"),
    TransformError,
  );
});

Deno.test("runTransform() kills a program past its time limit, with what it started", async () => {
  await using s = await script(`echo $$ > "$(dirname "$0")/pid"; exec sleep 30`);
  const started = performance.now();
  await assert.rejects(
    runTransform({ command: ["sh", s.path], timeoutSeconds: 0.3 }, "{}"),
    /did not finish within 0\.3 s and was killed/,
  );
  assert.ok(performance.now() - started < 5_000);
  const pid = Number(await Deno.readTextFile(join(s.dir, "pid")));
  assert.ok(await processExited(pid), `process ${pid} still runs`);
});

Deno.test("runTransform() stops a program that prints more than 1 MiB", async () => {
  await using s = await script(`yes '"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"'`);
  await assert.rejects(
    runTransform({ command: ["sh", s.path], timeoutSeconds: 5 }, "{}"),
    /printed more than 1048576 bytes/,
  );
});

Deno.test("config.yaml's routes take transform and transform_timeout, checked as subscribe checks them", async () => {
  await using h = await tempHome();
  const write = (route: string) =>
    Deno.writeTextFile(
      join(h.home, "config.yaml"),
      `platforms:\n  webhook:\n    extra:\n      routes:\n        r: ${route}\n`,
    );
  await write(`{transform: "jq -c '{t: .title}'", transform_timeout: 2.5}`);
  const route = (await loadConfig({ AGENT_HOME: h.home })).webhook.routes.get("r");
  assert.equal(route?.transform, "jq -c '{t: .title}'");
  assert.equal(route?.transform_timeout, 2.5);
  const bad: [string, RegExp][] = [
    [`{transform: "jq . | head"}`, /routes\.r\.transform in .*config\.yaml: the operator \| needs/],
    [`{transform: 3}`, /transform must be a string/],
    [`{transform: jq, transform_timeout: 0}`, /transform_timeout must be a number of seconds/],
  ];
  for (const [text, message] of bad) {
    await write(text);
    await assert.rejects(() => loadConfig({ AGENT_HOME: h.home }), message, text);
  }
});

Deno.test("runTransform() withholds the gateway's secrets, the database URL among them", async () => {
  await using s = await script(
    `cat >/dev/null; printf '{"seen": "%s|%s|%s|%s|%s"}\\n' "\${DATABASE_URL:--}" ` +
      `"\${PGPASSWORD:--}" "\${PGPASSFILE:--}" "\${WEBHOOK_SECRET:--}" "\${PGHOST:--}"`,
  );
  const result = await runTransform({ command: ["sh", s.path], timeoutSeconds: 5 }, "{}", {
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      DATABASE_URL: "postgres://agent:pw@db:5432/agent",
      PGPASSWORD: "pw",
      PGPASSFILE: "/home/agent/.pgpass",
      WEBHOOK_SECRET: "s",
      PGHOST: "db",
    },
  });
  assert.equal(result.skip, false);
  if (result.skip) return;
  assert.equal(result.json, '{"seen": "-|-|-|-|db"}');
});

Deno.test("transformJson() gives the transform's state: printed, skipped or pending", () => {
  const route = {
    deliver: "log",
    skills: [],
    transform: { command: ["jq", "-c", "."], timeoutSeconds: 5 },
  };
  const state = (transformed?: string) => transformJson({ route, transformed })?.state;
  assert.deepEqual([state('{"a":1}'), state('{"skip":true}'), state(undefined)], [
    "printed",
    "skipped",
    "pending",
  ]);
  assert.deepEqual(transformJson({ route, transformed: undefined }), {
    command: ["jq", "-c", "."],
    timeout_seconds: 5,
    state: "pending",
  });
  assert.equal(transformJson({ route: { deliver: "log", skills: [] } }), null);
});
