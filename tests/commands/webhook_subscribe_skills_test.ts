import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { ConfigError, UsageError } from "../../lib/errors.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { enabledConfig, fakeContext, runCli, tempHome } from "../_helpers.ts";

const TRIAGE = "---\nname: triage\ndescription: Label and prioritise issues\n---\nLabel it.\n";
/** An unquoted colon in a value: YAML refuses it, a typo people make. */
const BROKEN_YAML = "---\nname: broken\ndescription: Use when: the build fails\n---\nX\n";
const YAML_REASON = "Nested mappings are not allowed in compact mappings at line 2, column 14";

/** A home with the platform enabled, `triage` installed, and the given extra skill files. */
async function homeWithSkills(files: Record<string, string>) {
  // With the agent's key: subscribe would warn of its absence besides the skills.
  const h = await tempHome({ config: enabledConfig(), env: "OPENAI_API_KEY=sk-test-key\n" });
  const skillsDir = join(h.home, "skills");
  for (const [path, text] of Object.entries({ "triage/SKILL.md": TRIAGE, ...files })) {
    await Deno.mkdir(join(skillsDir, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(skillsDir, path), text);
  }
  return Object.assign(h, { skillsDir, env: { AGENT_HOME: h.home } });
}

async function savedSkills(home: string, name: string): Promise<string[] | undefined> {
  return (await readSubscriptions(join(home, "webhook_subscriptions.json")))[name]?.skills;
}

Deno.test("subscribe --skills triage succeeds while another skill's front matter is malformed, with a one-line warning", async () => {
  await using h = await homeWithSkills({ "broken/SKILL.md": BROKEN_YAML });
  const ctx = fakeContext(h.env);
  assert.equal(await runCommand(["webhook", "subscribe", "gh", "--skills", "triage"], ctx), 0);
  assert.deepEqual(await savedSkills(h.home, "gh"), ["triage"]);
  assert.match(ctx.output(), /Created subscription "gh"/);
  assert.deepEqual(ctx.err, [
    `Warning: skill "broken" cannot be used: Malformed front matter in ` +
    `${join(h.skillsDir, "broken/SKILL.md")}: ${YAML_REASON}`,
  ]);
});

Deno.test("subscribe --skills triage succeeds while another skill folder's SKILL.md is a folder", async () => {
  await using h = await homeWithSkills({});
  await Deno.mkdir(join(h.skillsDir, "odd", "SKILL.md"), { recursive: true });
  const ctx = fakeContext(h.env);
  assert.equal(await runCommand(["webhook", "subscribe", "gh", "--skills", "triage"], ctx), 0);
  assert.deepEqual(await savedSkills(h.home, "gh"), ["triage"]);
  assert.equal(ctx.err.length, 1);
  assert.match(ctx.err[0], /^Warning: skill "odd" cannot be used: Cannot read .*odd\/SKILL\.md: /);
});

Deno.test("subscribe --skills broken is refused with the file and the YAML error, and saves nothing", async () => {
  await using h = await homeWithSkills({ "broken/SKILL.md": BROKEN_YAML });
  await assert.rejects(
    () =>
      runCommand(["webhook", "subscribe", "gh", "--skills", "triage,broken"], fakeContext(h.env)),
    (error) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(
        error.message,
        `Malformed front matter in ${join(h.skillsDir, "broken/SKILL.md")}: ${YAML_REASON}`,
      );
      return true;
    },
  );
  assert.equal(await savedSkills(h.home, "gh"), undefined);
});

Deno.test("subscribe refuses an unknown skill, listing the installed ones and the broken ones", async () => {
  await using h = await homeWithSkills({ "broken/SKILL.md": BROKEN_YAML });
  await assert.rejects(
    () => runCommand(["webhook", "subscribe", "gh", "--skills", "deploy"], fakeContext(h.env)),
    UsageError,
    "Unknown skill deploy. Installed skills: triage; broken: broken (see the warnings above)",
  );
});

Deno.test("agent webhook subscribe --skills broken exits 1 with one error line naming the file", async () => {
  await using h = await homeWithSkills({ "broken/SKILL.md": BROKEN_YAML });
  const refused = await runCli(["webhook", "subscribe", "gh", "--skills", "broken"], h.env);
  assert.equal(refused.code, 1);
  assert.equal(
    refused.stderr,
    `Error: Malformed front matter in ${join(h.skillsDir, "broken/SKILL.md")}: ${YAML_REASON}\n`,
  );
  const accepted = await runCli(["webhook", "subscribe", "gh", "--skills", "triage"], h.env);
  assert.equal(accepted.code, 0, accepted.stderr);
});

Deno.test("list warns of a subscription whose skill was removed or broken after subscribing", async () => {
  await using h = await homeWithSkills({ "review/SKILL.md": "---\nname: review\n---\nCheck.\n" });
  await runCommand(["webhook", "subscribe", "gh", "--skills", "triage,review"], fakeContext(h.env));
  await runCommand(["webhook", "subscribe", "plain"], fakeContext(h.env));
  const quiet = fakeContext(h.env);
  assert.equal(await runCommand(["webhook", "list"], quiet), 0);
  assert.deepEqual(quiet.err, []);

  await Deno.remove(join(h.skillsDir, "triage"), { recursive: true });
  await Deno.writeTextFile(join(h.skillsDir, "review/SKILL.md"), BROKEN_YAML);
  const ctx = fakeContext(h.env);
  assert.equal(await runCommand(["webhook", "list"], ctx), 0);
  assert.deepEqual(ctx.err, [
    `Warning: "gh" asks for the skill "triage", which is not installed in ${h.skillsDir}: its ` +
    "agent runs fail",
    `Warning: "gh" asks for the skill "review": Malformed front matter in ` +
    `${join(h.skillsDir, "review/SKILL.md")}: ${YAML_REASON}; its agent runs fail`,
  ]);
});

Deno.test("subscribe --skills names a skill once however often it is given", async () => {
  await using h = await homeWithSkills({});
  await runCommand(
    ["webhook", "subscribe", "gh", "--skills", "triage, triage,triage"],
    fakeContext(h.env),
  );
  assert.deepEqual(await savedSkills(h.home, "gh"), ["triage"]);
});

Deno.test("subscribe refuses unknown skills with the list of installed ones", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const skill = join(h.home, "skills", "triage");
  await Deno.mkdir(skill, { recursive: true });
  await Deno.writeTextFile(
    join(skill, "SKILL.md"),
    "---\nname: triage\ndescription: Label and prioritise issues\n---\nLabel the issue.\n",
  );
  const env = { AGENT_HOME: h.home };
  await assert.rejects(
    () => runCommand(["webhook", "subscribe", "gh", "--skills", "triage,deploy"], fakeContext(env)),
    /Unknown skill deploy\. Installed skills: triage/,
  );
  assert.equal(
    await runCommand(["webhook", "subscribe", "gh", "--skills", "triage"], fakeContext(env)),
    0,
  );
  const record = (await readSubscriptions(join(h.home, "webhook_subscriptions.json"))).gh;
  assert.deepEqual(record.skills, ["triage"]);
});
