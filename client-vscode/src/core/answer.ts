/**
 * answer.v1 as Markdown: for the panel (citations as links that open the cited lines, refusals
 * with the nearest passages) and for a note (`[^kb-n]` footnotes whose definitions link to the
 * cited notes relative to the note, as the server's `kebab.insertAnswer` writes them).
 */
import * as path from "node:path";
import type { Answer, Citation } from "./protocol";

const MARKER = /\[#(\d{1,3})\]/g;
const ANY_DEFINITION = /^\[\^([^\]\s]+)\]:/gm;
const REFERENCE = /\[\^([^\]\s]+)\](?!:)/g;
const DEFINITION_LINE = /^\[\^[^\]\s]+\]:/;

const REFUSALS: Record<string, string> = {
  no_chunks: "Nothing is indexed yet to answer from.",
  score_gate: "No passage in the notes is close enough to answer this.",
  llm_self_judge: "The notes do not hold enough evidence for an answer.",
  cancelled: "Stopped before the answer was finished.",
  llm_error: "The language model failed.",
};

// the panel -----------------------------------------------------------------------------------
/** Where a citation points: the cited note's uri with the lines as `#L12-L30`. */
export function citationHref(c: Citation): string {
  const [start, end] = lines(c);
  return `${c.uri}#L${start}-L${end}`;
}

/** `file:///…/x.md#L12-L30` → the uri and 1-based lines; undefined for any other link. */
export function parseCitationHref(href: string): { uri: string; start: number; end: number } | undefined {
  const m = /^(file:\/\/[^#]+)#L(\d+)(?:-L(\d+))?$/.exec(href);
  if (!m) {
    return undefined;
  }
  const start = Number(m[2]);
  return { uri: m[1], start, end: m[3] ? Number(m[3]) : start };
}

/** Answer text still streaming: `[#n]` markers shown as `[n]` (their passages are not known yet). */
export function streamingMarkdown(text: string): string {
  return text.replace(MARKER, "\\[$1\\]");
}

/** The finished answer for the panel: cited text, then Sources (or why it was refused and the nearest passages). */
export function panelMarkdown(a: Answer): string {
  const byMarker = new Map(a.citations.map((c) => [c.marker, c]));
  const parts: string[] = [];
  if (!a.grounded) {
    const reason = REFUSALS[a.refusal_reason ?? ""] ?? "Not answered.";
    parts.push(`> **Not answered.** ${reason}${a.error ? ` ${escapeInline(a.error)}` : ""}`);
  }
  const body = a.answer.replace(MARKER, (_, n: string) => {
    const c = byMarker.get(Number(n));
    return c ? `[\\[${n}\\]](<${citationHref(c)}> "${escapeTitle(label(c))}")` : `\\[${n}\\]`;
  }).trim();
  if (body) {
    parts.push(body);
  }
  for (const conflict of a.conflicts ?? []) {
    parts.push(`> ⚠ Sources [${conflict.a}] and [${conflict.b}] disagree: ${escapeInline(conflict.detail)}`);
  }
  if (a.grounded && a.citations.length) {
    // a bullet list: the markers need not run 1, 2, 3 (an ordered list would renumber them)
    parts.push("**Sources**\n\n" + a.citations.map((c) => `- \\[${c.marker}\\] ${sourceLink(c)}`).join("\n"));
  }
  const candidates = a.candidates ?? [];
  if (!a.grounded && candidates.length) {
    parts.push("**Nearest passages**\n\n" + candidates.map((c, i) =>
      `${i + 1}. ${sourceLink(c)}\n\n   ${quote(c.text)}`).join("\n"));
  }
  return parts.join("\n\n") + "\n";
}

/** One line under the answer: model, time, passages used. */
export function answerMeta(a: Answer): string {
  const ms = Math.round(a.usage?.latency_ms ?? 0);
  const model = a.model?.id && a.model.id !== a.model.backend ? `${a.model.backend} · ${a.model.id}` : a.model?.backend;
  const used = a.retrieval ? ` · ${a.retrieval.chunks_used} of ${a.retrieval.chunks_returned} passages` : "";
  return `${model ?? "?"} · ${ms} ms${used}`;
}

function sourceLink(c: Citation): string {
  const [start, end] = lines(c);
  return `[${escapeInline(label(c))}](<${citationHref(c)}>) \`${c.path}\` L${start}–L${end}`;
}

function label(c: Citation): string {
  return c.heading_path.length ? c.heading_path.join(" › ") : path.posix.basename(c.path);
}

function quote(text: string, max = 240): string {
  const flat = text.replace(/\s+/g, " ").trim();
  const cut = flat.length > max ? `${flat.slice(0, max).trimEnd()}…` : flat;
  return `*${escapeInline(cut)}*`;
}

function escapeInline(text: string): string {
  return text.replace(/([\\`*_[\]<>#|~])/g, "\\$1");
}

function escapeTitle(text: string): string {
  return text.replace(/["\\]/g, "\\$&");
}

function lines(c: Citation): [number, number] {
  const start = c.start_line || c.range.start.line + 1;
  const end = c.end_line || Math.max(start, c.range.end.character === 0 ? c.range.end.line : c.range.end.line + 1);
  return [start, end];
}

// the note ------------------------------------------------------------------------------------
export type LabelStyle = "kb" | "numeric";

/** The footnote style the server used for answer.v1 `markdown` (`footnote_labels`). */
export function labelStyle(a: Answer): LabelStyle {
  return /\[\^kb-\d+\]/.test(a.markdown) || !/\[\^\d+\]/.test(a.markdown) ? "kb" : "numeric";
}

/** The first free footnote number in a note: after its highest `kb-` (or numeric) label. */
export function nextLabel(noteText: string, style: LabelStyle = "kb"): number {
  const labels = [...noteText.matchAll(ANY_DEFINITION), ...noteText.matchAll(REFERENCE)].map((m) => m[1]);
  const numbers = style === "numeric"
    ? labels.filter((l) => /^\d+$/.test(l)).map(Number)
    : labels.filter((l) => /^kb-\d+$/.test(l)).map((l) => Number(l.slice(3)));
  return Math.max(0, ...numbers) + 1;
}

/** GitHub's heading anchor, as the server computes it. */
export function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[`*_~]/g, "").replace(/[^\p{L}\p{N}_\- ]/gu, "").replace(/ /g, "-");
}

/**
 * (body with `[^label]` references, definition lines) for an answer that will live in the note at
 * `notePath` (workspace-relative; links are relative to it). Mirrors the server's footnotes.render.
 */
export function footnotes(answer: Answer, notePath: string | null, firstLabel = 1,
  style: LabelStyle = "kb"): { body: string; definitions: string[] } {
  const byMarker = new Map(answer.citations.map((c) => [c.marker, c]));
  const labels = new Map<number, string>();
  for (const m of answer.answer.matchAll(MARKER)) {
    const n = Number(m[1]);
    if (byMarker.has(n) && !labels.has(n)) {
      const number = firstLabel + labels.size;
      labels.set(n, style === "kb" ? `kb-${number}` : String(number));
    }
  }
  let body = answer.answer.replace(MARKER, (_, n: string) => {
    const l = labels.get(Number(n));
    return l ? `[^${l}]` : "";
  });
  body = body.replace(/[ \t]+(?=\[\^)/g, "");
  const definitions = [...labels].map(([n, l]) => definitionLine(l, byMarker.get(n)!, notePath));
  return { body, definitions };
}

/** `[^kb-3]: [Ownership › Rules](../rust/ownership.md#rules "kb:1a2b3c4d5e6f") L12–L30` */
export function definitionLine(label: string, c: Citation, notePath: string | null): string {
  const base = notePath ? path.posix.dirname(notePath) : "";
  let link = base && base !== "." ? path.posix.relative(`/${base}`, `/${c.path}`) : c.path;
  link = link.replace(/ /g, "%20").replace(/\(/g, "%28").replace(/\)/g, "%29");
  const anchor = c.heading_path.length ? `#${slug(c.heading_path[c.heading_path.length - 1])}` : "";
  const title = (c.heading_path.join(" › ") || path.posix.basename(c.path)).replace(/\[/g, "(").replace(/]/g, ")");
  const [start, end] = lines(c);
  return `[^${label}]: [${title}](${link}${anchor} "kb:${c.content_hash.slice(0, 12)}") L${start}–L${end}`;
}

/** The answer as standalone Markdown (what answer.v1 `markdown` holds for `notePath` null, label 1). */
export function standaloneMarkdown(answer: Answer, notePath: string | null = null, firstLabel = 1,
  style: LabelStyle = "kb"): string {
  const { body, definitions } = footnotes(answer, notePath, firstLabel, style);
  return body.trimEnd() + (definitions.length ? `\n\n${definitions.join("\n")}` : "") + "\n";
}

export interface TextInsert {
  line: number; // 0-based
  character: number; // UTF-16 code units, as VS Code counts
  text: string;
}

/**
 * Inserting an answer at a cursor in a note: the body at the cursor (set apart by blank lines),
 * the footnote definitions at the end of the note, numbered after the note's own `kb-` labels.
 * A refused answer goes in as its plain text, without footnotes.
 */
export function insertion(answer: Answer, noteText: string, cursor: { line: number; character: number },
  notePath: string | null): TextInsert[] {
  const noteLines = noteText.split(/\r?\n/);
  const eol = noteText.includes("\r\n") ? "\r\n" : "\n";
  const line = Math.min(Math.max(cursor.line, 0), noteLines.length - 1);
  const current = noteLines[line];
  const character = Math.min(Math.max(cursor.character, 0), current.length);
  const grounded = answer.grounded && answer.citations.length > 0;
  const style = labelStyle(answer);
  const { body, definitions } = grounded
    ? footnotes(answer, notePath, nextLabel(noteText, style), style)
    : { body: answer.answer.replace(MARKER, ""), definitions: [] };
  const last = noteLines.length - 1;
  // set apart from the text around it by blank lines, so it is a paragraph of its own
  const before = current.slice(0, character).trim() ? "\n\n" : line > 0 && noteLines[line - 1].trim() ? "\n" : "";
  const after = current.slice(character).trim() ? "\n\n" : line < last && noteLines[line + 1].trim() ? "\n" : "";
  const bodyText = before + body.trim() + after;
  if (!definitions.length) {
    return [{ line, character, text: bodyText.replace(/\n/g, eol) }];
  }
  const lastContent = [...noteLines].reverse().find((s) => s.trim()) ?? "";
  const gap = DEFINITION_LINE.test(lastContent) ? "" : "\n";
  const defsText = noteLines[last] === ""
    ? gap + definitions.join("\n") + "\n"
    : "\n" + gap + definitions.join("\n");
  if (line === last && character === current.length) {
    // the cursor is where the definitions go: one insert (two at one position land in either order)
    const text = bodyText + "\n\n" + definitions.join("\n") + (current === "" ? "\n" : "");
    return [{ line, character, text: text.replace(/\n/g, eol) }];
  }
  return [{ line, character, text: bodyText.replace(/\n/g, eol) },
    { line: last, character: noteLines[last].length, text: defsText.replace(/\n/g, eol) }];
}

/**
 * The note's path relative to the workspace folder that answered (found from a citation's uri and
 * path), or null when the note lies outside it: footnote links are then workspace-relative.
 */
export function notePathFor(answer: Answer, noteFsPath: string, fsPathOf: (uri: string) => string): string | null {
  const c = answer.citations[0] ?? answer.candidates?.[0];
  if (!c) {
    return null;
  }
  const cited = fsPathOf(c.uri);
  const parts = c.path.split("/").length;
  let root = cited;
  for (let i = 0; i < parts; i++) {
    root = path.dirname(root);
  }
  const rel = path.relative(root, noteFsPath);
  return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel.split(path.sep).join("/") : null;
}
