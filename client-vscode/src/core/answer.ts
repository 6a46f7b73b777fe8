/**
 * answer.v1 as Markdown for the panel: citations as links that open the cited lines, Sources,
 * refusals with the nearest passages. Answers go into notes through the server
 * (`insertAnswer` in ./protocol), which renders their `[^kb-n]` footnotes for the note.
 */
import * as path from "node:path";
import type { Answer, Citation } from "./protocol";

const MARKER = /\[#(\d{1,3})\]/g;

const REFUSALS: Record<string, string> = {
  no_chunks: "Nothing is indexed yet to answer from.",
  score_gate: "No passage in the notes is close enough to answer this.",
  llm_self_judge: "The notes do not hold enough evidence for an answer.",
  cancelled: "Stopped before the answer was finished.",
  llm_error: "The language model failed.",
};

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
