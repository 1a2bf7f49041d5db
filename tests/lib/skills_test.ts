import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigError, NotFoundError } from "../../lib/errors.ts";
import { BASE_SYSTEM_PROMPT, listSkills, loadSkills, systemPromptFor } from "../../lib/skills.ts";

async function withSkills(
  files: Record<string, string>,
  body: (skillsDir: string) => Promise<void>,
): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "agent-skills-" });
  const skillsDir = join(home, "skills");
  try {
    for (const [path, text] of Object.entries(files)) {
      await Deno.mkdir(join(skillsDir, path, ".."), { recursive: true });
      await Deno.writeTextFile(join(skillsDir, path), text);
    }
    await body(skillsDir);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

const TRIAGE = "---\nname: triage\ndescription: Label new issues\n---\n\nPropose labels.\n";
const REVIEW =
  "---\r\nname: review\r\ndescription: 'Review: pull requests'\r\n---\r\nCheck tests.\r\n";

Deno.test("listSkills() reads name and description from each SKILL.md, sorted by name", async () => {
  await withSkills({
    "triage/SKILL.md": TRIAGE,
    "review/SKILL.md": REVIEW,
    "notes/README.md": "not a skill",
    "loose.md": "not a skill either",
  }, async (skillsDir) => {
    assert.deepEqual(await listSkills(skillsDir), [
      {
        name: "review",
        description: "Review: pull requests",
        path: join(skillsDir, "review/SKILL.md"),
      },
      { name: "triage", description: "Label new issues", path: join(skillsDir, "triage/SKILL.md") },
    ]);
  });
});

Deno.test("listSkills() returns [] when the skills folder does not exist", async () => {
  assert.deepEqual(await listSkills("/nonexistent/agent-home/skills"), []);
});

Deno.test("listSkills() names a skill after its folder when the front matter has no name", async () => {
  await withSkills({ "summary/SKILL.md": "Summarise the payload." }, async (skillsDir) => {
    const [skill] = await listSkills(skillsDir);
    assert.equal(skill.name, "summary");
    assert.equal(skill.description, "");
  });
});

Deno.test("listSkills() throws ConfigError naming the file when the front matter is malformed", async () => {
  await withSkills({ "bad/SKILL.md": "---\nname: [unclosed\n---\nx" }, async (skillsDir) => {
    await assert.rejects(listSkills(skillsDir), (error: Error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /bad\/SKILL\.md/);
      return true;
    });
  });
});

Deno.test("loadSkills() adds each skill's instructions in the order given", async () => {
  await withSkills({ "triage/SKILL.md": TRIAGE, "review/SKILL.md": REVIEW }, async (skillsDir) => {
    const section = await loadSkills(skillsDir, ["triage", "review"]);
    assert.equal(
      section,
      "# Skills\n\n## triage: Label new issues\n\nPropose labels.\n\n" +
        "## review: Review: pull requests\n\nCheck tests.",
    );
    assert.equal(await loadSkills(skillsDir, []), "");
  });
});

Deno.test("loadSkills() throws NotFoundError naming the unknown skill and the installed ones", async () => {
  await withSkills({ "triage/SKILL.md": TRIAGE, "review/SKILL.md": REVIEW }, async (skillsDir) => {
    await assert.rejects(loadSkills(skillsDir, ["triage", "deploy"]), (error: Error) => {
      assert.ok(error instanceof NotFoundError);
      assert.match(error.message, /Unknown skill "deploy" \(installed: review, triage/);
      return true;
    });
  });
});

Deno.test("loadSkills() ignores another skill's broken SKILL.md, and names a broken one it needs", async () => {
  await withSkills({
    "triage/SKILL.md": TRIAGE,
    "broken/SKILL.md": "---\nname: [unclosed\n---\nText.\n",
  }, async (skillsDir) => {
    assert.match(await loadSkills(skillsDir, ["triage"]), /Propose labels\./);
    await assert.rejects(
      () => loadSkills(skillsDir, ["triage", "broken"]),
      (error) =>
        error instanceof ConfigError && /Malformed front matter in .*broken/.test(error.message),
    );
    await assert.rejects(() => listSkills(skillsDir), ConfigError, "listing still reports it");
  });
});

Deno.test("systemPromptFor() starts with the base prompt and appends the skills", async () => {
  await withSkills({ "triage/SKILL.md": TRIAGE }, async (skillsDir) => {
    assert.equal(await systemPromptFor(skillsDir, []), BASE_SYSTEM_PROMPT);
    const prompt = await systemPromptFor(skillsDir, ["triage"]);
    assert.ok(prompt.startsWith(BASE_SYSTEM_PROMPT + "\n\n# Skills\n\n## triage"));
    assert.ok(prompt.endsWith("Propose labels."));
    assert.match(BASE_SYSTEM_PROMPT, /^You are an agent answering a webhook event/);
  });
});
