/**
 * answer.v1 as Markdown for the panel: citations as links that open the cited lines, Sources,
 * refusals in words with the nearest passages as the server's clean excerpts, and whether the index
 * was still being built. Answers go into notes through the server
 * (`insertAnswer` in ./protocol), which renders their `[^kb-n]` footnotes for the note.
 */
import * as path from "node:path";
import { WIKILINK, wikiText } from "./excerpt";
import type { Answer, Citation } from "./protocol";

const MARKER = /\[#(\d{1,3})\]/g;

/** Said for a refusal when the server gave no `refusal_text` (an older server): never the code itself. */
const REFUSALS: Record<string, string> = {
  no_chunks: "Nothing is indexed yet to answer from.",
  score_gate: "The closest passages in the notes do not answer this.",
  llm_self_judge: "The passages found do not state an answer.",
  cancelled: "Stopped before the answer was finished.",
  llm_error: "The language model failed.",
};

/** Keeps `L12–L30` on one line: a word joiner on each side of the dash. */
const DASH = "\u2060–\u2060";

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
  return text.replace(WIKILINK, (link) => wikiText(link)).replace(MARKER, "\\[$1\\]");
}

/**
 * What a citation is shown as: the footnote label Insert writes for it in the note the question
 * was asked from (answer.v1 `citations[].label`, the server's), without its `kb-` (`kb-3` → `3`).
 * An answer from a server older than `label`: its marker's number.
 */
export function shownLabel(c: Citation): string {
  return c.label ? c.label.replace(/^kb-/, "") : String(c.marker);
}

/**
 * The cited passages, marker → shown label (`shownLabel`), in the order Sources lists them: by
 * label. Only markers the answer text uses and that name a citation count.
 */
export function citationLabels(a: Pick<Answer, "answer" | "citations">): Map<number, string> {
  const byMarker = new Map(a.citations.map((c) => [c.marker, c]));
  const cited: [number, string][] = [];
  for (const m of a.answer.matchAll(MARKER)) {
    const c = byMarker.get(Number(m[1]));
    if (c && !cited.some(([marker]) => marker === c.marker)) {
      cited.push([c.marker, shownLabel(c)]);
    }
  }
  return new Map(cited.sort((x, y) => x[1].localeCompare(y[1], "en", { numeric: true })));
}

/** Why it was not answered, in words: the server's `refusal_text`, never the `refusal_reason` code. */
export function refusalWords(a: Answer): string {
  return a.refusal_text?.trim() || REFUSALS[a.refusal_reason ?? ""] || "The notes do not answer this.";
}

/** The finished answer for the panel: cited text, then Sources (or why it was refused and the nearest passages). */
export function panelMarkdown(a: Answer): string {
  const numbers = citationLabels(a);
  const byMarker = new Map(a.citations.map((c) => [c.marker, c]));
  const parts: string[] = [];
  if (a.index_building?.message) {
    parts.push(`> ⏳ ${escapeInline(a.index_building.message)}`);
  }
  if (a.filters) {
    parts.push(`> Only notes matching: \`${a.filters.replace(/`/g, "'")}\``);
  }
  if (!a.grounded && a.unsupported?.length) {
    // the model answered, but the notes do not hold it: its words under a plain warning
    parts.push(`> ⚠ ${escapeInline(refusalWords(a))}`);
  } else if (!a.grounded) {
    // `closest`: passages that may hold it, no claim made; `not_answered`: nothing in the notes
    const head = a.outcome === "closest" ? "Closest in your notes." : "Not answered.";
    parts.push(`> **${head}** ${escapeInline(refusalWords(a))}${a.error && !a.refusal_text ? ` ${escapeInline(a.error)}` : ""}`);
  }
  const body = a.answer.replace(WIKILINK, (link) => wikiText(link)).replace(MARKER, (_, m: string) => {
    const n = numbers.get(Number(m));
    const c = byMarker.get(Number(m));
    return n && c ? `[\\[${escapeInline(n)}\\]](<${citationHref(c)}> "${escapeTitle(label(c))}")` : "";
  }).replace(/[ \t]+$/gm, "").trim();
  if (body && showsBody(a)) {
    parts.push(body);
  }
  for (const conflict of a.conflicts ?? []) {
    const a1 = sourceName(conflict.a, conflict.a_source, numbers);
    const b1 = sourceName(conflict.b, conflict.b_source, numbers);
    parts.push(`> ⚠ The notes disagree (${a1} and ${b1}): ${escapeInline(conflict.detail)}`);
  }
  if (a.grounded && numbers.size) {
    // a bullet list with the labels written out (an ordered list could renumber them); a label
    // two markers share (one passage) is listed once
    const cited = [...numbers.entries()].filter(([, n], i, all) => all.findIndex(([, m]) => m === n) === i);
    parts.push("**Sources**\n\n" + cited.map(([marker, n]) => `- \\[${escapeInline(n)}\\] ${sourceLink(byMarker.get(marker)!)}`).join("\n"));
  }
  const candidates = a.candidates ?? [];
  if (!a.grounded && candidates.length) {
    parts.push(`**${a.outcome === "closest" ? "Closest passages" : "Nearest passages"}**\n\n` + candidates.map((c, i) => {
      const text = c.excerpt?.trim(); // the server's clean one-line excerpt (none from an older server)
      return `${i + 1}. ${sourceLink(c)}${text ? `\n\n   *${escapeInline(text)}*` : ""}`;
    }).join("\n"));
  }
  return parts.join("\n\n") + "\n";
}

/**
 * Whether a refusal's answer text says more than its refusal: the text a model wrote (kept when
 * it was cancelled, failed or cited nothing), not the words the server or the extractive
 * answerer refuse with, which `refusal_text` already says.
 */
function showsBody(a: Answer): boolean {
  if (a.grounded || !a.refusal_text) {
    return true;
  }
  if (a.outcome === "closest" || a.refusal_reason === "score_gate" || a.refusal_reason === "no_chunks") {
    return false;
  }
  return a.model?.backend !== "extractive";
}

/** One line under the answer: who answered, how long it took, how many notes it cites. */
export function answerMeta(a: Answer): string {
  const model = a.model?.id && a.model.id !== a.model.backend ? `${a.model.backend} · ${a.model.id}` : a.model?.backend ?? "?";
  const parts = [model, duration(a.usage?.latency_ms ?? 0)];
  if (a.grounded) {
    const n = new Set(citationLabels(a).values()).size;
    parts.push(`${n} source${n === 1 ? "" : "s"}`);
  }
  return parts.join(" · ");
}

function duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function sourceName(marker: number, source: string | undefined, numbers: Map<number, string>): string {
  const n = numbers.get(marker);
  if (n) {
    return `\\[${escapeInline(n)}\\]`;
  }
  return source ? `\`${source.replace(/`/g, "")}\`` : "a passage not cited";
}

function sourceLink(c: Citation): string {
  const [start, end] = lines(c);
  return `[${escapeInline(label(c))}](<${citationHref(c)}>) \`${c.path}\` L${start}${DASH}L${end}`;
}

function label(c: Citation): string {
  return c.heading_path.length ? c.heading_path.join(" › ") : path.posix.basename(c.path);
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
