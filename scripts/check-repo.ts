/**
 * `npm run check:repo` — keeps the repository standing alone (docs/development.md § Checks):
 * 1. no file refers to the brief outside the repository (its old paths and file names);
 * 2. every relative link of a Markdown file resolves to a file of the repository, and its
 *    `#anchor` to a heading of that file (GitHub's slugs);
 * 3. every `src/…`, `scripts/…`, `test/…`, `e2e/…` or `docs/…` path a file names exists;
 * 4. every `docs/<page>.md § Heading` citation names a heading of that page;
 * 5. no source file opens with a header comment longer than 12 lines;
 * 6. wrangler.toml's staging binds its own databases, objects, counters (`stagingProblems`);
 * 7. a quoted demo school has its demo data's name; the README states package.json's Nodes.
 * Files: those git tracks and new ones it does not ignore. Exit status 1 on any problem.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { unstable_readConfig } from "wrangler";
import { demoSchoolNames } from "./dataset/build";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The longest header comment a source file may open with, in lines. */
const MAX_HEADER_LINES = 12;
/** The fewest characters of a heading's start that a citation may name it by. */
const MIN_CITED = 6;
/** Where source files live: their header comments are checked. */
const SOURCE_DIRS = ["src/", "scripts/", "test/", "e2e/", "portal/src/", "bench/"];
const SOURCE_EXTENSIONS = /\.(ts|tsx|js|mjs|cjs)$/;
/** Files never read: binaries and generated files. */
const SKIPPED = /\.(png|jpe?g|gif|ico|woff2?|wasm|sqlite)$|^package-lock\.json$|^migrations\/[^/]+\/meta\/|^bench\/results\.json$/;

/**
 * The names of the outside brief, written in pieces so that this file does not match itself:
 * the sibling folder it lived in and its two files.
 */
const OUTSIDE = new RegExp([["\\.\\.", "shared"].join("/"), ["API", "md"].join("\\."), ["DESIGN", "md"].join("\\.")].join("|"));

/** A path of the repository named in text: not preceded by a path character, no globs. */
const NAMED_PATH = /(?<![\w./@~$\\-])((?:src|scripts|test|e2e|docs|migrations)\/[\w./-]*\w)(?![\w*{$\\-]|[./]\w)/g;

/** A citation of a section: a Markdown page's name, ` § `, then its heading, quoted or not. */
const CITATION = /((?:docs\/)?[\w-]+\.md) § (?:"([^"]+)"|([^\n\]]+))/g;

interface Problem {
  file: string;
  line: number;
  message: string;
}

/** The repository's files: tracked ones and new ones git does not ignore. */
function repositoryFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], { cwd: ROOT, encoding: "utf8" });
  return [...new Set(out.split("\0").filter(Boolean))].sort();
}

/** Every directory that holds a file of the repository. */
function directoriesOf(files: string[]): Set<string> {
  const dirs = new Set<string>();
  for (const file of files) {
    for (let dir = path.posix.dirname(file); dir !== "."; dir = path.posix.dirname(dir)) dirs.add(dir);
  }
  return dirs;
}

/** The 1-based line of `offset` in `text`. */
function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

/** Markdown with fenced code blocks blanked (lines kept, so offsets still give lines). */
function withoutFences(markdown: string): string {
  let inFence = false;
  return markdown
    .split("\n")
    .map((line) => {
      const fence = /^\s*(```|~~~)/.test(line);
      if (fence) inFence = !inFence;
      return fence || inFence ? "" : line;
    })
    .join("\n");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, "")
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The headings of a Markdown text, backticks removed. */
function headings(markdown: string): string[] {
  return [...withoutFences(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)].map((m) => m[1]!.replace(/`/g, ""));
}

/** The anchors GitHub gives the headings of a Markdown text (repeated slugs numbered). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const heading of headings(markdown)) {
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

class Checker {
  readonly problems: Problem[] = [];
  private readonly files: Set<string>;
  private readonly dirs: Set<string>;
  private readonly texts = new Map<string, string>();

  constructor(files: string[]) {
    this.files = new Set(files);
    this.dirs = directoriesOf(files);
  }

  text(file: string): string {
    let text = this.texts.get(file);
    if (text === undefined) {
      text = readFileSync(path.join(ROOT, file), "utf8");
      this.texts.set(file, text);
    }
    return text;
  }

  private report(file: string, text: string, offset: number, message: string): void {
    this.problems.push({ file, line: lineAt(text, offset), message });
  }

  private exists(file: string): boolean {
    return this.files.has(file) || this.dirs.has(file);
  }

  /** 1. Nothing outside the repository is referred to. */
  outsideReferences(file: string): void {
    const text = this.text(file);
    for (const m of text.matchAll(new RegExp(OUTSIDE.source, "g"))) {
      this.report(file, text, m.index, `"${m[0]}" refers outside the repository: cite docs/reference.md, docs/operations.md or docs/architecture.md`);
    }
  }

  /** 2. Relative links of a Markdown file resolve, anchors included. */
  links(file: string): void {
    const raw = this.text(file);
    const text = withoutFences(raw).replace(/`[^`\n]*`/g, (code) => " ".repeat(code.length));
    const targets = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g), ...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)];
    for (const m of targets) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined];
      const resolved = pathPart === "" ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(pathPart))).replace(/\/$/, "");
      if (resolved.startsWith("..") || !this.exists(resolved)) {
        this.report(file, raw, m.index, `link "${target}" resolves to ${resolved}, which is not a file of the repository`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith(".md") && !anchors(this.text(resolved)).has(decodeURIComponent(anchor))) {
        this.report(file, raw, m.index, `link "${target}": ${resolved} has no heading with the anchor #${anchor}`);
      }
    }
  }

  /** 3. Paths of the repository named in text exist (relative to the root or to the file's folders). */
  namedPaths(file: string): void {
    const text = this.text(file);
    for (const m of text.matchAll(NAMED_PATH)) {
      const named = m[1]!;
      const bases = [""];
      for (let dir = path.posix.dirname(file); dir !== "."; dir = path.posix.dirname(dir)) bases.push(`${dir}/`);
      if (!bases.some((base) => this.exists(path.posix.normalize(base + named)))) {
        this.report(file, text, m.index, `names ${named}, which does not exist`);
      }
    }
  }

  /** 4. A citation names a heading of its page. */
  citations(file: string): void {
    const text = this.text(file);
    for (const m of text.matchAll(CITATION)) {
      const page = this.page(m[1]!);
      if (page === undefined) continue;
      const titles = headings(this.text(page));
      // A quoted heading may wrap onto the next comment line. An unquoted one runs on after the
      // heading, or names the heading's first words up to a closing mark (or the line's end).
      const quoted = m[2]?.replace(/\s*\n\s*(?:\*|\/\/|#)?\s*/g, " ").replace(/`/g, "");
      const rest = m[3]?.replace(/`/g, "").trim() ?? "";
      const lead = rest.split(/[)"\],;]/)[0]!.trim();
      const found =
        quoted !== undefined
          ? titles.some((t) => t.startsWith(quoted))
          : titles.some((t) => rest.startsWith(t) || (lead.length >= MIN_CITED && t.startsWith(lead)));
      if (!found) this.report(file, text, m.index, `"${m[0].slice(0, 80)}" names no heading of ${page}`);
    }
  }

  /** 6. A quoted demo school (its id, then its name, as JSON) has the name the demo data gives it. */
  demoNames(file: string, names: Record<string, string>): void {
    const text = this.text(file);
    for (const m of text.matchAll(/"id"\s*:\s*"(sch_[\w-]+)"\s*,\s*"name"\s*:\s*"([^"]*)"/g)) {
      const name = names[m[1]!];
      if (name !== undefined && name !== m[2]) this.report(file, text, m.index, `${m[1]} is "${name}" in the demo data (npm start), not "${m[2]}"`);
    }
  }

  /** 6. The README states the Node versions of package.json: `devEngines.runtime` and `engines.node` (`>=X` as `X`). */
  nodeVersions(): void {
    const pkg = JSON.parse(this.text("package.json")) as { engines: { node: string }; devEngines: { runtime: { version: string } } };
    const text = this.text("README.md");
    for (const [field, range, written] of [
      ["devEngines.runtime.version", pkg.devEngines.runtime.version, (v: string) => `Node ${v}`],
      ["engines.node", pkg.engines.node, (v: string) => `Node ≥ ${v}`],
    ] as const) {
      const version = range.replace(/^>=\s*/, "");
      if (!text.includes(written(version)))
        this.report("README.md", text, 0, `package.json's ${field} is "${range}": the README names no "${written(version)}"`);
    }
  }

  /** The Markdown page a citation names, as written or in the docs folder. */
  private page(name: string): string | undefined {
    for (const candidate of [name, `docs/${name}`]) if (this.files.has(candidate)) return candidate;
    return undefined;
  }

  /** 5. The comment a source file opens with is at most MAX_HEADER_LINES long. */
  header(file: string): void {
    const lines = this.text(file).split("\n");
    let i = lines[0]?.startsWith("#!") ? 1 : 0;
    while (i < lines.length && lines[i]!.trim() === "") i++;
    const first = lines[i]?.trim() ?? "";
    let length = 0;
    if (first.startsWith("/*")) {
      let end = i;
      while (end < lines.length && !lines[end]!.includes("*/")) end++;
      length = end - i + 1;
    } else if (first.startsWith("//")) {
      let end = i;
      while (end < lines.length && lines[end]!.trim().startsWith("//")) end++;
      length = end - i;
    }
    if (length > MAX_HEADER_LINES) {
      this.problems.push({
        file,
        line: i + 1,
        message: `header comment of ${length} lines (at most ${MAX_HEADER_LINES}): move the argument to docs/ and point there`,
      });
    }
  }
}

/** What rule 6 compares of one environment. */
interface EnvBindings {
  name: string;
  d1: { binding: string; id?: string; name?: string }[];
  objects: { binding: string; script?: string }[];
  limits: { binding: string; id: string }[];
  vars: string[];
}

/** The bindings of wrangler.toml in `env` (top level when undefined) that staging must repeat apart. */
function bindingsOf(env: string | undefined): EnvBindings {
  const c = unstable_readConfig({ config: path.join(ROOT, "wrangler.toml"), env }, { hideWarnings: true });
  return {
    name: c.name,
    d1: c.d1_databases.map((d: { binding: string; database_id?: string; database_name?: string }) => ({
      binding: d.binding,
      id: d.database_id,
      name: d.database_name,
    })),
    objects: c.durable_objects.bindings.map((b: { name: string; script_name?: string }) => ({ binding: b.name, script: b.script_name })),
    limits: c.ratelimits.map((r: { name: string; namespace_id: string | number }) => ({ binding: r.name, id: String(r.namespace_id) })),
    vars: Object.keys(c.vars).sort(),
  };
}

/**
 * Rule 6 (docs/operations.md § Environments): the staging environment (`[env.staging]`) declares every D1, Durable
 * Object and rate-limit binding and var of production, and none of its databases, objects
 * (another Worker's `script_name`) or namespaces is production's.
 */
function stagingProblems(prod = bindingsOf(undefined), staging = bindingsOf("staging")): string[] {
  const problems: string[] = [];
  if (staging.name === prod.name) return ["no [env.staging]: staging would deploy over production"];
  const names = (list: { binding: string }[]) =>
    list
      .map((b) => b.binding)
      .sort()
      .join(", ");
  for (const kind of ["d1", "objects", "limits"] as const) {
    if (names(staging[kind]) !== names(prod[kind]))
      problems.push(`[env.staging] ${kind} bindings (${names(staging[kind])}) differ from production's (${names(prod[kind])})`);
  }
  if (staging.vars.join() !== prod.vars.join())
    problems.push(`[env.staging] vars (${staging.vars.join(", ")}) differ from production's (${prod.vars.join(", ")})`);
  for (const d of staging.d1) {
    if (prod.d1.some((p) => p.id === d.id || p.name === d.name))
      problems.push(`[env.staging] D1 binding ${d.binding} names a production database (${d.name}, ${d.id})`);
  }
  for (const o of staging.objects)
    if (o.script !== undefined) problems.push(`[env.staging] Durable Object binding ${o.binding} names the Worker ${o.script}: staging would use its objects`);
  for (const r of staging.limits) {
    if (prod.limits.some((p) => p.id === r.id)) problems.push(`[env.staging] rate limit ${r.binding} counts on production's namespace_id ${r.id}`);
  }
  return problems;
}

function main(): number {
  const files = repositoryFiles();
  const checker = new Checker(files);
  const names = demoSchoolNames();
  checker.nodeVersions();
  for (const file of files) {
    if (SKIPPED.test(file)) continue;
    const text = checker.text(file);
    if (text.includes("\0")) continue;
    checker.outsideReferences(file);
    checker.namedPaths(file);
    checker.citations(file);
    if (file.endsWith(".md")) {
      checker.links(file);
      checker.demoNames(file, names);
    }
    if (SOURCE_DIRS.some((dir) => file.startsWith(dir)) && SOURCE_EXTENSIONS.test(file)) checker.header(file);
  }
  for (const message of stagingProblems()) checker.problems.push({ file: "wrangler.toml", line: 1, message });
  for (const p of checker.problems) console.error(`${p.file}:${p.line}: ${p.message}`);
  if (checker.problems.length > 0) {
    console.error(`check:repo: ${checker.problems.length} problem(s) in ${new Set(checker.problems.map((p) => p.file)).size} file(s)`);
    return 1;
  }
  console.log(`check:repo: ${files.length} files; no outside reference, every link, path, citation, header and demo school name in order; staging bound apart`);
  return 0;
}

process.exitCode = main();
