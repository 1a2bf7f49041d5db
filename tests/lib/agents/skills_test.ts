import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigError, NotFoundError } from "../../../lib/errors.ts";
import {
  BASE_SYSTEM_PROMPT,
  listSkills,
  loadSkills,
  MAX_SKILL_BYTES,
  systemPromptFor,
} from "../../../lib/agents/skills.ts";

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
    assert.deepEqual(await listSkills(skillsDir), {
      skills: [
        {
          name: "review",
          description: "Review: pull requests",
          path: join(skillsDir, "review/SKILL.md"),
        },
        {
          name: "triage",
          description: "Label new issues",
          path: join(skillsDir, "triage/SKILL.md"),
        },
      ],
      broken: [],
    });
  });
});

Deno.test("listSkills() finds nothing when the skills folder does not exist", async () => {
  assert.deepEqual(await listSkills("/nonexistent/agent-home/skills"), { skills: [], broken: [] });
});

Deno.test("listSkills() names a skill after its folder when the front matter has no name", async () => {
  await withSkills({ "summary/SKILL.md": "Summarise the payload." }, async (skillsDir) => {
    const [skill] = (await listSkills(skillsDir)).skills;
    assert.equal(skill.name, "summary");
    assert.equal(skill.description, "");
  });
});

Deno.test("listSkills() reports a malformed SKILL.md as broken, on one line naming the file, and still lists the others", async () => {
  await withSkills({
    "triage/SKILL.md": TRIAGE,
    "broken/SKILL.md": "---\nname: broken\ndescription: Use when: the build fails\n---\nX\n",
  }, async (skillsDir) => {
    const { skills, broken } = await listSkills(skillsDir);
    assert.deepEqual(skills.map((skill) => skill.name), ["triage"]);
    assert.equal(broken.length, 1);
    assert.equal(broken[0].folder, "broken");
    assert.ok(broken[0].error instanceof ConfigError);
    assert.equal(broken[0].error.file, join(skillsDir, "broken/SKILL.md"));
    assert.equal(
      broken[0].error.message,
      `Malformed front matter in ${join(skillsDir, "broken/SKILL.md")}: ` +
        "Nested mappings are not allowed in compact mappings at line 2, column 14",
    );
  });
});

Deno.test("listSkills() reports a SKILL.md that cannot be read (a folder) as broken instead of throwing", async () => {
  await withSkills({ "triage/SKILL.md": TRIAGE }, async (skillsDir) => {
    const path = join(skillsDir, "odd", "SKILL.md");
    await Deno.mkdir(path, { recursive: true });
    const { skills, broken } = await listSkills(skillsDir);
    assert.deepEqual(skills.map((skill) => skill.name), ["triage"]);
    assert.equal(broken.length, 1);
    assert.equal(broken[0].folder, "odd");
    assert.ok(broken[0].error instanceof ConfigError);
    assert.equal(broken[0].error.file, path);
    assert.match(
      broken[0].error.message,
      /^Cannot read .*odd\/SKILL\.md: Is a directory \(os error \d+\)$/,
    );
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
    const { broken } = await listSkills(skillsDir);
    assert.deepEqual(broken.map((skill) => skill.folder), ["broken"], "listing still reports it");
  });
});

Deno.test("loadSkills() ignores another skill's unreadable SKILL.md, and names an unreadable one it needs", async () => {
  await withSkills({ "triage/SKILL.md": TRIAGE }, async (skillsDir) => {
    await Deno.mkdir(join(skillsDir, "odd", "SKILL.md"), { recursive: true });
    assert.match(await loadSkills(skillsDir, ["triage"]), /Propose labels\./);
    await assert.rejects(
      () => loadSkills(skillsDir, ["odd"]),
      (error) =>
        error instanceof ConfigError &&
        /^Cannot read .*odd\/SKILL\.md: Is a directory/.test(error.message),
    );
  });
});

Deno.test("loadSkills() does not read a SKILL.md over 1 MiB: it is broken for whoever asks for it, and costs the others nothing", async () => {
  await withSkills({
    "triage/SKILL.md": TRIAGE,
    "huge/SKILL.md": `---\nname: huge\n---\n${"x".repeat(MAX_SKILL_BYTES)}`,
  }, async (skillsDir) => {
    const prompt = await loadSkills(skillsDir, ["triage"]);
    assert.match(prompt, /Propose labels\./);
    assert.ok(prompt.length < 1000, "the huge file is not in the prompt");
    await assert.rejects(
      () => loadSkills(skillsDir, ["huge"]),
      (error) =>
        error instanceof ConfigError &&
        /huge\/SKILL\.md is too large: 10485\d\d bytes, where a skill may have at most 1048576/
          .test(error.message),
    );
  });
});

Deno.test("loadSkills() refuses a name two skills share, naming both files, instead of taking one by directory order", async () => {
  await withSkills({
    "a/SKILL.md": "---\nname: dup\n---\nFirst.\n",
    "b/SKILL.md": "---\nname: dup\n---\nSecond.\n",
    "triage/SKILL.md": TRIAGE,
  }, async (skillsDir) => {
    assert.match(await loadSkills(skillsDir, ["triage"]), /Propose labels\./);
    await assert.rejects(
      () => loadSkills(skillsDir, ["dup"]),
      (error) =>
        error instanceof ConfigError &&
        /Two skills are named "dup": .*a\/SKILL\.md and .*b\/SKILL\.md/.test(error.message),
    );
  });
});

Deno.test("listSkills() reports front matter with no closing --- as broken, and reads an empty one and one with blanks after its ---", async () => {
  await withSkills({
    "open/SKILL.md": "---\nname: open\nInstructions follow.\n",
    "empty/SKILL.md": "---\n---\nJust text.\n",
    "blanks/SKILL.md": "--- \nname: blanks\n---\t\nTrailing blanks.\n",
    "crlf/SKILL.md": "---  \r\nname: crlf\r\n---\r\nCRLF.\r\n",
  }, async (skillsDir) => {
    const { skills, broken } = await listSkills(skillsDir);
    assert.deepEqual(skills.map((skill) => skill.name), ["blanks", "crlf", "empty"]);
    assert.match(await loadSkills(skillsDir, ["blanks"]), /## blanks\n\nTrailing blanks\.$/);
    assert.match(await loadSkills(skillsDir, ["empty"]), /## empty\n\nJust text\.$/);
    assert.deepEqual(broken.map((skill) => skill.folder), ["open"]);
    assert.match(
      broken[0].error.message,
      /front matter of .*open\/SKILL\.md has no closing --- line/,
    );
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
