/**
 * answer.v1 as Markdown for the panel: citations as links that open the cited lines, Sources,
 * refusals in words with the nearest passages as the server's clean excerpts, and whether the index
 * was still being built; the panel's own words in the answer's language (`WORDS`). Answers go into
 * notes through the server (`insertAnswer` in ./protocol), which renders their `[^kb-n]` footnotes
 * for the note.
 */
import * as path from "node:path";
import { WIKILINK, wikiText } from "./excerpt";
import type { Answer, Citation, RefusalReason } from "./protocol";

const MARKER = /\[#(\d{1,3})\](?!\([^()\s]*\))/g; // not a link's text: `[#11](…/issues/11)` (server/kebab/footnotes.py)

/** The language of an answer's words for people (answer.v1 `lang`). */
export type Lang = "en" | "ko";

/** The panel's own words around an answer, in one language. */
export interface Words {
  notAnswered: string; // the head of a refusal with nothing in the notes
  closest: string; // the head of a `closest` refusal: passages that may hold it, no claim
  sources: string;
  closestPassages: string;
  nearestPassages: string;
  only: string; // the notes an answer was limited to (answer.v1 `filters`) follow it
  disagree: (a: string, b: string) => string; // two notes that disagree: their labels or paths
  notCited: string; // one side of a disagreement that the answer does not cite
  refusals: Record<RefusalReason, string>; // why, when the server gave no `refusal_text` (an older server)
  noAnswer: string; // why, when there is not even a reason
  sourceCount: (n: number) => string; // how many notes an answer cites, in the line under it
  searching: string; // before the server says what it is doing
  failed: string; // the request failed (not a refusal)
  buttons: Buttons; // under each turn
  ask: string; // the question box's placeholder and label, and its button
  askFollowUp: string;
  askLabel: string;
  askFollowUpLabel: string;
  askButton: string;
}

/** The buttons under a turn, with their tooltips. */
export interface Buttons {
  insert: string;
  insertTitle: string;
  copy: string;
  copyTitle: string;
  stop: string;
}

/**
 * The panel's words around an answer, per language: an answer's own words (`answer`,
 * `refusal_text`, the `closest` sentence) are in the question's language, and the panel writes
 * its own in that language too. The same words as the CLI's (server/kebab/cli/render.py `WORDS`);
 * the Korean refusals are the server's (server/kebab/rag/outcome.py `_WHY_KO`).
 */
export const WORDS: Record<Lang, Words> = {
  en: {
    notAnswered: "Not answered.",
    closest: "Closest in your notes.",
    sources: "Sources",
    closestPassages: "Closest passages",
    nearestPassages: "Nearest passages",
    only: "Only notes matching",
    disagree: (a, b) => `The notes disagree (${a} and ${b})`,
    notCited: "a passage not cited",
    refusals: {
      no_chunks: "Nothing is indexed yet to answer from.",
      score_gate: "The closest passages in the notes do not answer this.",
      llm_self_judge: "The passages found do not state an answer.",
      cancelled: "Stopped before the answer was finished.",
      llm_error: "The language model failed.",
    },
    noAnswer: "The notes do not answer this.",
    sourceCount: (n) => `${n} source${n === 1 ? "" : "s"}`,
    searching: "Searching the notes…",
    failed: "Failed.",
    buttons: {
      insert: "Insert at cursor",
      insertTitle: "Insert the answer under the cursor's line in the last active note, with [^kb-n] footnotes",
      copy: "Copy",
      copyTitle: "Copy the answer as Markdown with footnotes",
      stop: "Stop",
    },
    ask: "Ask a question…",
    askFollowUp: "Ask a follow-up…",
    askLabel: "Ask a question",
    askFollowUpLabel: "Ask a follow-up question about the answer above",
    askButton: "Ask",
  },
  ko: {
    notAnswered: "답하지 못했습니다.",
    closest: "노트에서 가장 가까운 곳.",
    sources: "출처",
    closestPassages: "가장 가까운 구절",
    nearestPassages: "가까운 구절",
    only: "이 노트에서만",
    disagree: (a, b) => `노트끼리 어긋납니다 (${a}, ${b})`,
    notCited: "인용되지 않은 구절",
    refusals: {
      no_chunks: "이 워크스페이스에는 아직 색인된 노트가 없습니다.",
      score_gate: "노트에서 가장 가까운 구절도 이 질문에 답하지 않습니다.",
      llm_self_judge: "찾은 구절에 답이 나와 있지 않습니다.",
      cancelled: "답변이 끝나기 전에 취소되었습니다.",
      llm_error: "언어 모델에서 오류가 났습니다.",
    },
    noAnswer: "노트에 이 질문의 답이 없습니다.",
    sourceCount: (n) => `출처 ${n}개`,
    searching: "노트를 찾는 중…",
    failed: "실패했습니다.",
    buttons: {
      insert: "커서 위치에 넣기",
      insertTitle: "마지막으로 쓰던 노트의 커서 줄 아래에 답을 [^kb-n] 각주와 함께 넣습니다",
      copy: "복사",
      copyTitle: "답을 각주가 달린 마크다운으로 복사합니다",
      stop: "멈추기",
    },
    ask: "질문하기…",
    askFollowUp: "이어서 질문하기…",
    askLabel: "질문하기",
    askFollowUpLabel: "위의 답에 이어서 질문하기",
    askButton: "묻기",
  },
};

/**
 * An answer's language: its `lang`; for an answer stored before `lang`, its question's (the
 * server wrote its refusal in that language already).
 */
export function answerLang(a: Pick<Answer, "lang" | "question">): Lang {
  return a.lang === "ko" || a.lang === "en" ? a.lang : questionLang(a.question ?? "");
}

/** The panel's words for an answer, in its language. */
export function words(a: Pick<Answer, "lang" | "question">): Words {
  return WORDS[answerLang(a)];
}

const WORD = /[\p{L}][\p{L}\p{N}_.-]*/gu;
const HANGUL = /[\uac00-\ud7a3]/;

/**
 * The language a question will be answered in, before its answer (and its `lang`) arrives: the
 * server's rule (server/kebab/text.py `is_korean`), Korean when at least a fifth of its words
 * hold Hangul, read without the filter words at its start (`path:infra/ #ops 백업은?` is Korean),
 * as the server reads it. Once the answer is there, its `lang` decides.
 */
export function questionLang(question: string): Lang {
  const all = withoutFilters(question).slice(0, 2000).match(WORD) ?? [];
  return all.length && all.filter((w) => HANGUL.test(w)).length * 5 >= all.length ? "ko" : "en";
}

// A filter word at the start of a question (server/kebab/filters.py): `#ops`, `path:infra/`,
// `tag:x`, `status=draft`, `reviewed>=2024-01-01`.
const FILTER_WORD = /^(#[\p{L}_][\p{L}\p{N}_/-]*|(path|tag):\S+|[\p{L}\p{N}_.-]+(!=|>=|<=|=)(?!=)\S+)$/u;

/** The question without the filter words at its start (all of it when it is nothing else). */
function withoutFilters(question: string): string {
  const words = question.trim().split(/\s+/);
  let used = 0;
  while (used < words.length && FILTER_WORD.test(words[used])) {
    used++;
  }
  return used === words.length ? question : words.slice(used).join(" ");
}

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
  const said = words(a);
  return a.refusal_text?.trim() || (a.refusal_reason ? said.refusals[a.refusal_reason] : undefined) || said.noAnswer;
}

/** The finished answer for the panel: cited text, then Sources (or why it was refused and the nearest passages). */
export function panelMarkdown(a: Answer): string {
  const said = words(a);
  const numbers = citationLabels(a);
  const byMarker = new Map(a.citations.map((c) => [c.marker, c]));
  const parts: string[] = [];
  if (a.index_building?.message) {
    parts.push(`> ⏳ ${escapeInline(a.index_building.message)}`);
  }
  if (a.filters) {
    parts.push(`> ${said.only}: \`${a.filters.replace(/`/g, "'")}\``);
  }
  if (!a.grounded && a.unsupported?.length) {
    // the model answered, but the notes do not hold it: its words under a plain warning
    parts.push(`> ⚠ ${escapeInline(refusalWords(a))}`);
  } else if (!a.grounded) {
    // `closest`: passages that may hold it, no claim made; `not_answered`: nothing in the notes
    const head = a.outcome === "closest" ? said.closest : said.notAnswered;
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
    const a1 = sourceName(conflict.a, conflict.a_source, numbers, said);
    const b1 = sourceName(conflict.b, conflict.b_source, numbers, said);
    parts.push(`> ⚠ ${said.disagree(a1, b1)}: ${escapeInline(conflict.detail)}`);
  }
  if (a.grounded && numbers.size) {
    // a bullet list with the labels written out (an ordered list could renumber them); a label
    // two markers share (one passage) is listed once
    const cited = [...numbers.entries()].filter(([, n], i, all) => all.findIndex(([, m]) => m === n) === i);
    parts.push(`**${said.sources}**\n\n` + cited.map(([marker, n]) => `- \\[${escapeInline(n)}\\] ${sourceLink(byMarker.get(marker)!)}`).join("\n"));
  }
  const candidates = a.candidates ?? [];
  if (!a.grounded && candidates.length) {
    parts.push(`**${a.outcome === "closest" ? said.closestPassages : said.nearestPassages}**\n\n` + candidates.map((c, i) => {
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
    parts.push(words(a).sourceCount(n));
  }
  return parts.join(" · ");
}

function duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function sourceName(marker: number, source: string | undefined, numbers: Map<number, string>, said: Words): string {
  const n = numbers.get(marker);
  if (n) {
    return `\\[${escapeInline(n)}\\]`;
  }
  return source ? `\`${source.replace(/`/g, "")}\`` : said.notCited;
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
