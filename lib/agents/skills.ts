/**
 * Skills: instructions added to the agent's system prompt. Each skill is a folder
 * `skills/<name>/` holding a `SKILL.md` in the Agent Skills format
 * (https://agentskills.io/specification): YAML front matter with `name` and `description`,
 * then Markdown instructions.
 *
 * ```markdown
 * ---
 * name: triage
 * description: Label and prioritise new GitHub issues
 * ---
 * Read the issue, propose labels from the repository's conventions, ...
 * ```
 *
 * @module
 */
import { join } from "node:path";
import { parse } from "yaml";
import { ConfigError, errorMessage, NotFoundError } from "../errors.ts";

/** A skill as `subscribe --skills` and `list` show it. */
export interface SkillInfo {
  /** The front matter `name`, or the folder name when the front matter has none. */
  name: string;
  /** The front matter `description` (empty when absent). */
  description: string;
  /** Absolute path of the `SKILL.md` file. */
  path: string;
}

interface Skill extends SkillInfo {
  instructions: string;
}

/** The start of every system prompt; kept short, the skills carry the specifics. */
export const BASE_SYSTEM_PROMPT =
  "You are an agent answering a webhook event. The user message describes the event. " +
  "Your reply is delivered as a chat message: make it short, factual and useful to a " +
  "human, in plain Markdown, without preamble.";

/** The answer that means "nothing worth reporting" when `agent.silent_marker` is not set. */
export const DEFAULT_SILENT_MARKER = "[SILENT]";

/**
 * The sentence of the system prompt that allows a silent answer (docs/subscriptions.md#silent-answers).
 * @param marker the configured marker
 * @returns the sentence
 */
export function silenceInstruction(marker: string): string {
  return `If nothing in this event is worth reporting to a human, answer exactly ${marker} ` +
    "and nothing else: then no message is sent.";
}

/**
 * A skill folder whose `SKILL.md` cannot be used: it cannot be read (a folder named `SKILL.md`,
 * no permission) or its front matter is malformed. Only subscriptions and runs that ask for it
 * are affected.
 */
export interface BrokenSkill {
  /** The folder name under `skills/`: the only name known for a file that cannot be parsed. */
  folder: string;
  /** Why it cannot be used, on one line, naming the `SKILL.md`. */
  error: ConfigError;
}

/** The installed skills, sorted by name, and the broken skill folders ({@link listSkills}). */
export interface SkillListing {
  /** The usable skills, sorted by name. */
  skills: SkillInfo[];
  /** The folders whose `SKILL.md` cannot be read or parsed, in directory order. */
  broken: BrokenSkill[];
}

/**
 * Lists the installed skills, and the skill folders that cannot be used. A broken folder is
 * reported, not thrown: it matters only to whoever asks for that skill.
 * @param skillsDir the `skills` folder of the home folder
 * @returns `skills`: one entry per sub-folder that holds a usable `SKILL.md`, sorted by name;
 *   `broken`: one entry per sub-folder whose `SKILL.md` cannot be read or has malformed front
 *   matter; both [] when the folder is missing
 * @throws ConfigError naming the folder when the `skills` folder itself cannot be read
 */
export async function listSkills(skillsDir: string): Promise<SkillListing> {
  const { skills, broken } = await readSkills(skillsDir);
  return {
    skills: skills.map(({ name, description, path }) => ({ name, description, path })),
    broken,
  };
}

/**
 * The skill called `name`, as a run finds it: by the name in its front matter, else the folder
 * of that name, if its `SKILL.md` is broken.
 * @param listing the usable skills and the broken folders (see {@link listSkills})
 * @returns the skill, or undefined when none has that name
 * @throws ConfigError naming the file when the folder of that name holds a broken `SKILL.md`,
 *   and naming both files when two skills have that name
 */
export function findSkill<T extends SkillInfo>(
  listing: { skills: T[]; broken: BrokenSkill[] },
  name: string,
): T | undefined {
  const named = listing.skills.filter((candidate) => candidate.name === name);
  if (named.length > 1) {
    throw new ConfigError(
      `Two skills are named "${name}": ${
        named.map((skill) => skill.path).sort().join(" and ")
      }; rename one in its front matter`,
      { file: named[0].path },
    );
  }
  const skill = named[0];
  if (skill) return skill;
  const unusable = listing.broken.find((candidate) => candidate.folder === name);
  if (unusable) throw unusable.error;
  return undefined;
}

/**
 * Builds the skills section of a system prompt: each named skill's instructions, in order.
 * @param skillsDir the `skills` folder
 * @param names skill names, as the subscription lists them
 * @returns the section, or "" when `names` is empty
 * @throws NotFoundError naming the first unknown skill and listing the installed ones
 * @throws ConfigError naming the file when a named skill's `SKILL.md` cannot be read or has
 *   malformed front matter (another skill's broken file does not matter here), or when the
 *   `skills` folder itself cannot be read
 */
export async function loadSkills(skillsDir: string, names: readonly string[]): Promise<string> {
  if (names.length === 0) return "";
  const listing = await readSkills(skillsDir);
  const sections = names.map((name) => {
    const skill = findSkill(listing, name);
    if (!skill) {
      const list = listing.skills.map((candidate) => candidate.name).join(", ") || "none";
      throw new NotFoundError(`Unknown skill "${name}" (installed: ${list}; in ${skillsDir})`);
    }
    const heading = skill.description ? `## ${skill.name}: ${skill.description}` : `## ${name}`;
    return `${heading}\n\n${skill.instructions}`;
  });
  return `# Skills\n\n${sections.join("\n\n")}`;
}

/**
 * The full system prompt for an agent run: {@link BASE_SYSTEM_PROMPT}, then the skills.
 * @param skillsDir the `skills` folder
 * @param names skill names, in order
 * @returns the system prompt
 * @throws NotFoundError when a skill is not installed
 * @throws ConfigError when a named skill's `SKILL.md` cannot be read or has malformed front
 *   matter
 */
export async function systemPromptFor(
  skillsDir: string,
  names: readonly string[],
): Promise<string> {
  const section = await loadSkills(skillsDir, names);
  return section ? `${BASE_SYSTEM_PROMPT}\n\n${section}` : BASE_SYSTEM_PROMPT;
}

/**
 * The largest `SKILL.md` read, in bytes. The Agent Skills format asks for a few thousand words;
 * every agent run of a subscription with skills reads them all.
 */
export const MAX_SKILL_BYTES = 1024 * 1024;

/**
 * Reads every `SKILL.md`: the skills, sorted by name, and the folders whose file cannot be read
 * or parsed, with their errors. One broken folder never hides the others.
 * @throws ConfigError when the `skills` folder itself cannot be read (a missing one is empty)
 */
async function readSkills(
  skillsDir: string,
): Promise<{ skills: Skill[]; broken: BrokenSkill[] }> {
  const skills: Skill[] = [];
  const broken: BrokenSkill[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(skillsDir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { skills, broken };
    throw new ConfigError(`Cannot read the skills folder ${skillsDir}: ${reason(error)}`, {
      file: skillsDir,
      cause: error,
    });
  }
  for (const entry of entries) {
    if (!entry.isDirectory && !entry.isSymlink) continue;
    const path = join(skillsDir, entry.name, "SKILL.md");
    let text: string;
    try {
      // Every run reads every SKILL.md: a huge one (a log dropped there) stalls them all.
      const { size } = await Deno.stat(path);
      if (size > MAX_SKILL_BYTES) {
        const message = `${path} is too large: ${size} bytes, where a skill may have at most ` +
          `${MAX_SKILL_BYTES} (1 MiB)`;
        broken.push({ folder: entry.name, error: new ConfigError(message, { file: path }) });
        continue;
      }
      text = await Deno.readTextFile(path);
    } catch (error) {
      // A folder without a SKILL.md (or a symlink to a file) is not a skill.
      if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
        continue;
      }
      const message = `Cannot read ${path}: ${reason(error)}`;
      broken.push({
        folder: entry.name,
        error: new ConfigError(message, { file: path, cause: error }),
      });
      continue;
    }
    try {
      skills.push(parseSkill(text, { folder: entry.name, path }));
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      broken.push({ folder: entry.name, error });
    }
  }
  return { skills: skills.sort((a, b) => a.name.localeCompare(b.name)), broken };
}

/**
 * The first line of an error's message, without the path Deno appends to file errors
 * (`Is a directory (os error 21): readfile '/…/SKILL.md'`) or the code frame YAML errors add:
 * our messages name the file already and must fit on one line.
 */
function reason(error: unknown): string {
  const message = errorMessage(error);
  return message.split(/\r?\n/, 1)[0].replace(/(\(os error \d+\)): \w+ '.*'$/, "$1")
    .replace(/:$/, "");
}

/** Splits a `SKILL.md` into its front matter and its instructions. */
function parseSkill(text: string, where: { folder: string; path: string }): Skill {
  const match = /^\uFEFF?---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!match && /^\uFEFF?---[ \t]*\r?\n/.test(text)) {
    // Its YAML would otherwise become the instructions, and its name unknown.
    throw new ConfigError(`The front matter of ${where.path} has no closing --- line`, {
      file: where.path,
    });
  }
  const body = (match ? text.slice(match[0].length) : text).trim();
  let meta: unknown = {};
  if (match) {
    try {
      meta = parse(match[1] ?? "") ?? {};
    } catch (cause) {
      throw new ConfigError(`Malformed front matter in ${where.path}: ${reason(cause)}`, {
        file: where.path,
        cause,
      });
    }
  }
  if (typeof meta !== "object" || meta === null || Array.isArray(meta)) {
    throw new ConfigError(`Front matter of ${where.path} must be a YAML mapping`, {
      file: where.path,
    });
  }
  const fields = meta as Record<string, unknown>;
  return {
    name: typeof fields.name === "string" && fields.name.trim() ? fields.name.trim() : where.folder,
    description: typeof fields.description === "string" ? fields.description.trim() : "",
    path: where.path,
    instructions: body,
  };
}
