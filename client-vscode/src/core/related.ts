/**
 * Kebab: Related passages — the passages in other notes closest in meaning to the section under
 * the cursor (`kebab/related`), shaped for a quick pick: the heading path as the label, the note
 * and its lines as the description, a clean excerpt as the detail, and where to open each.
 *
 * No `vscode` import: the extension shows these items, the tests drive them against the server.
 */
import * as path from "node:path";
import { excerpt } from "./excerpt";
import type { Hit, Position, Rpc } from "./protocol";
import { RelatedRequest } from "./protocol";

/** How many passages the command asks for: enough to filter by typing, few enough to read. */
export const RELATED_K = 10;

/** Keeps `L12–L30` on one line: a word joiner on each side of the dash. */
const DASH = "\u2060–\u2060";

/** One related passage as a quick pick item, and where it opens. */
export interface PassageItem {
  label: string; // "Postgres on nas01 › Dumps"
  description: string; // "ops/postgres.md · L26–L34"
  detail: string; // the passage as plain text, on one line
  uri: string;
  path: string;
  start: number; // 0-based first line of the passage
  end: number; // 0-based last line, inclusive
  score: number;
}

/** The related passages of the section at `position` in the note `uri`, best first, as items. */
export async function related(rpc: Pick<Rpc, "sendRequest">, uri: string, position: Position,
  options: { k?: number; sameNote?: boolean } = {}): Promise<PassageItem[]> {
  const { hits } = await rpc.sendRequest(RelatedRequest, {
    uri, position: { line: position.line, character: position.character }, k: options.k ?? RELATED_K,
    same_note: options.sameNote ?? false,
  });
  return hits.map(passageItem);
}

/** A search or related hit as an item: heading path, note and lines, a clean excerpt. */
export function passageItem(hit: Hit): PassageItem {
  const start = hit.start_line ?? hit.range.start.line + 1; // 1-based
  const end = Math.max(start, hit.end_line ?? hit.range.end.line);
  const lines = start === end ? `L${start}` : `L${start}${DASH}L${end}`;
  return {
    label: noIcons(passageTitle(hit)),
    description: noIcons(`${hit.path} · ${lines}${hit.linked ? " · linked" : ""}`),
    detail: noIcons(excerpt(hit.text, 200)),
    uri: hit.uri,
    path: hit.path,
    start: start - 1,
    end: end - 1,
    score: hit.score,
  };
}

/** The passage's heading path joined with ` › `; a note without headings: its title or file name. */
export function passageTitle(hit: Pick<Hit, "heading_path" | "title" | "path">): string {
  const headings = hit.heading_path.map((h) => h.trim()).filter(Boolean);
  return headings.length ? headings.join(" › ") : hit.title?.trim() || path.posix.basename(hit.path);
}

/**
 * The heading path of the section holding `line` (0-based) in a note's Markdown: ATX headings
 * above it, outside front matter and fenced code. Names the section in the picker's title.
 */
export function sectionAt(text: string, line: number): string[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const stack: { level: number; title: string }[] = [];
  let fence: string | undefined;
  let i = 0;
  if (/^---\s*$/.test(lines[0] ?? "")) { // YAML front matter
    const close = lines.findIndex((l, j) => j > 0 && /^(?:---|\.\.\.)\s*$/.test(l));
    i = close > 0 ? close + 1 : 0;
  }
  for (; i <= Math.min(line, lines.length - 1); i++) {
    const l = lines[i];
    const f = /^ {0,3}(`{3,}|~{3,})/.exec(l);
    if (f) {
      if (!fence) {
        fence = f[1];
      } else if (f[1][0] === fence[0] && f[1].length >= fence.length && /^ {0,3}[`~]+\s*$/.test(l)) {
        fence = undefined;
      }
      continue;
    }
    const h = fence ? null : /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(l);
    if (h && h[2]) {
      const level = h[1].length;
      while (stack.length && stack[stack.length - 1].level >= level) {
        stack.pop();
      }
      stack.push({ level, title: h[2].trim() });
    }
  }
  return stack.map((s) => s.title);
}

/** What the picker says when the server found nothing, in words. */
export function noRelated(section: string[], sameNote: boolean): { label: string; detail: string } {
  const what = section.length ? `“${section[section.length - 1]}”` : "this part of the note";
  return sameNote
    ? { label: "No related passages", detail: `Nothing else in the notes is close in meaning to ${what}.` }
    : {
      label: "No related passages in other notes",
      detail: `No other note is close in meaning to ${what}. The button above also looks in this note's other sections.`,
    };
}

/**
 * `$(name)` in note text is not an icon: escaped, as VS Code escapes symbol names, so a quick
 * pick shows it as written.
 */
export function noIcons(text: string): string {
  return text.replace(/(?<!\\)\$\(([A-Za-z0-9-]+(?:~[A-Za-z0-9-]*)?)\)/g, "\\$($1)");
}
