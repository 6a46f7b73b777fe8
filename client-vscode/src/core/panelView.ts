/**
 * The answer panel's content, without the editor: one session's turns (question → streamed text →
 * answer.v1) rendered to HTML with markdown-it, and the page that shows them in the editor's theme.
 * The webview script only swaps HTML in and posts the user's clicks back.
 */
import MarkdownIt from "markdown-it";
import { answerLang, answerMeta, Buttons, Lang, panelMarkdown, questionLang, streamingMarkdown, WORDS } from "./answer";
import type { Answer } from "./protocol";

export type TurnState = "waiting" | "streaming" | "answered" | "refused" | "failed";

export interface Turn {
  id: number;
  question: string;
  state: TurnState;
  status?: string; // what the server says it is doing (begin/end messages)
  streamed: string; // answer text so far
  answer?: Answer;
  error?: string; // the request failed (not a refusal)
  followUp?: boolean; // asked in the thread of the answer above it (the follow-up box)
}

export interface TurnView {
  id: number;
  question: string;
  state: TurnState;
  html: string;
  meta: string;
  lang: Lang; // the answer's language (answer.v1 `lang`; the question's until it arrives)
  buttons: Buttons; // in `lang`
  canInsert: boolean; // a grounded answer the server stored (it inserts by answer.v1 `id`)
  canCopy: boolean;
  followUp: boolean;
}

const md = new MarkdownIt({ html: false, linkify: false, breaks: false });
// Citation links are file: uris with #L12-L30; the webview hands them to the extension to open.
const validateLink = md.validateLink.bind(md);
md.validateLink = (url: string) => /^file:\/\//i.test(url) || validateLink(url);

/** Markdown (from panelMarkdown or streamingMarkdown) → HTML; raw HTML in notes stays text. */
export function renderMarkdown(markdown: string): string {
  return md.render(markdown);
}

/** A turn's language: its answer's (answer.v1 `lang`), the question's until it arrives. */
function turnLang(t: Turn): Lang {
  return t.answer ? answerLang(t.answer) : questionLang(t.question);
}

/** What the webview shows for one turn. */
export function turnView(t: Turn): TurnView {
  const lang = turnLang(t);
  const said = WORDS[lang];
  let markdown: string;
  if (t.answer) {
    markdown = panelMarkdown(t.answer);
  } else if (t.error) {
    markdown = (t.streamed ? streamingMarkdown(t.streamed) + "\n\n" : "") + `> **${said.failed}** ${t.error}`;
  } else if (t.streamed) {
    markdown = streamingMarkdown(t.streamed);
  } else {
    markdown = `*${t.status || said.searching}*`;
  }
  const meta = t.answer ? answerMeta(t.answer) : t.status ?? "";
  return {
    id: t.id, question: t.question, state: t.state, html: renderMarkdown(markdown), meta, lang, buttons: said.buttons,
    canInsert: !!t.answer?.grounded && typeof t.answer.answer_id === "number",
    canCopy: !!t.answer && !!t.answer.answer.trim(),
    followUp: !!t.followUp,
  };
}

/** What the extension posts to the webview. */
export type ToWebview =
  | { type: "turn"; turn: TurnView; reveal: boolean }
  | { type: "reset"; turns: TurnView[] }
  | { type: "thread"; followUp: boolean; placeholder: string; label: string; button: string; lang: Lang };

/**
 * The messages that show `turn`. `reveal` when the turn has just started (asked, or an answer made
 * in the note): the webview scrolls to it, since it lands at the bottom while the person may be
 * reading an earlier turn. Later updates leave the scrolling to them.
 */
export function turnMessages(turns: readonly Turn[], turn: Turn, reveal = false): ToWebview[] {
  return [{ type: "turn", turn: turnView(turn), reveal }, threadMessage(turns)];
}

/** The messages that fill a new (or reloaded) webview; it shows the newest turn. */
export function resetMessages(turns: readonly Turn[]): ToWebview[] {
  return [{ type: "reset", turns: turns.map(turnView) }, threadMessage(turns)];
}

/**
 * Whether the question box continues a thread, and its words: in the language of the latest
 * turn (a Korean asker reads "이어서 질문하기…" under a Korean answer), English before any.
 */
function threadMessage(turns: readonly Turn[]): ToWebview {
  const followUp = followUpConversation(turns) !== undefined;
  const last = turns.at(-1);
  const lang = last ? turnLang(last) : "en";
  const said = WORDS[lang];
  return {
    type: "thread", followUp, lang, button: said.askButton,
    placeholder: followUp ? said.askFollowUp : said.ask,
    label: followUp ? said.askFollowUpLabel : said.askLabel,
  };
}

/** The turn's state once its answer arrived. */
export function finishedState(a: Answer): TurnState {
  return a.grounded ? "answered" : "refused";
}

/**
 * The thread a question from the follow-up box continues: the server's `conversation` of the
 * latest answer in the panel, or undefined (a new thread) when there is none. Kebab: Ask and
 * Answer question on this line never send one: a new question starts a new thread.
 */
export function followUpConversation(turns: readonly Turn[]): string | undefined {
  for (let i = turns.length - 1; i >= 0; i--) {
    const conversation = turns[i].answer?.conversation;
    if (conversation) {
      return conversation;
    }
  }
  return undefined;
}

/** The panel page. `cspSource` and `nonce` come from the webview. */
export function page(cspSource: string, nonce: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${cspSource} https: data:; style-src ${cspSource} 'unsafe-inline'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>kebab</title>
<style>${STYLE}</style>
</head>
<body>
<main id="turns" aria-live="polite"></main>
<p id="empty" class="meta">Ask a question with <b>Kebab: Ask</b>; answers from your notes appear here, with their sources.</p>
<form id="follow">
  <input id="question" type="text" placeholder="Ask a question…" aria-label="Ask a question">
  <button id="ask" type="submit">Ask</button>
</form>
<script nonce="${nonce}">${SCRIPT}</script>
</body>
</html>`;
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-editor-foreground);
  background: var(--vscode-editor-background); padding: 0 16px 64px; line-height: 1.5; }
a { color: var(--vscode-textLink-foreground); text-decoration: none; }
a:hover { color: var(--vscode-textLink-activeForeground); text-decoration: underline; }
code { font-family: var(--vscode-editor-font-family); font-size: 0.95em; background: var(--vscode-textCodeBlock-background); padding: 1px 3px; border-radius: 3px; }
pre { background: var(--vscode-textCodeBlock-background); padding: 8px; overflow-x: auto; }
pre code { background: none; padding: 0; }
blockquote { margin: 0 0 8px; padding: 4px 12px; border-left: 4px solid var(--vscode-textBlockQuote-border); background: var(--vscode-textBlockQuote-background); }
.turn { border-bottom: 1px solid var(--vscode-panel-border, rgba(128,128,128,.35)); padding: 12px 0; }
.question { font-weight: 600; font-size: 1.1em; margin: 0 0 6px; }
.question::before { content: "Q "; color: var(--vscode-descriptionForeground); }
.turn.follow-up .question::before { content: "↳ "; }
.turn.refused .answer > blockquote:first-child { border-left-color: var(--vscode-editorWarning-foreground); }
.turn.failed .answer > blockquote:last-child { border-left-color: var(--vscode-errorForeground); }
.turn.streaming .answer > :last-child::after { content: "▍"; animation: blink 1s steps(2) infinite; }
@keyframes blink { 50% { opacity: 0; } }
.meta { color: var(--vscode-descriptionForeground); font-size: 0.9em; }
.actions { display: flex; gap: 6px; align-items: center; margin-top: 6px; }
.actions .meta { margin-left: auto; }
button { font-family: inherit; color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: 4px 10px; cursor: pointer; border-radius: 2px; }
button:hover { background: var(--vscode-button-hoverBackground); }
button.secondary { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
button:disabled { opacity: .5; cursor: default; }
#follow { position: fixed; left: 0; right: 0; bottom: 0; display: flex; gap: 6px; padding: 8px 16px; background: var(--vscode-editor-background);
  border-top: 1px solid var(--vscode-panel-border, rgba(128,128,128,.35)); }
#question { flex: 1; color: var(--vscode-input-foreground); background: var(--vscode-input-background); border: 1px solid var(--vscode-input-border, transparent); padding: 4px 6px; font-family: inherit; }
`;

// Runs in the webview: keeps one element per turn, forwards clicks to the extension.
const SCRIPT = `
const vscode = acquireVsCodeApi();
const turns = document.getElementById("turns");
const empty = document.getElementById("empty");
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
let revealing = 0; // a turn that started, to scroll to once the page has a layout (a hidden panel has none)
function reveal() {
  const box = revealing && document.getElementById("turn-" + revealing);
  if (!box || !box.getClientRects().length) return;
  box.scrollIntoView({ block: "start" });
  revealing = 0;
}
window.addEventListener("resize", reveal);
function upsert(v) {
  let box = document.getElementById("turn-" + v.id);
  const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
  if (!box) {
    box = el("section", "turn");
    box.id = "turn-" + v.id;
    box.append(el("p", "question"), el("div", "answer"));
    const actions = el("div", "actions");
    const insert = el("button", "insert");
    insert.onclick = () => vscode.postMessage({ type: "insert", id: v.id });
    const copy = el("button", "copy secondary");
    copy.onclick = () => vscode.postMessage({ type: "copy", id: v.id });
    const stop = el("button", "stop secondary");
    stop.onclick = () => vscode.postMessage({ type: "stop", id: v.id });
    actions.append(insert, copy, stop, el("span", "meta"));
    box.append(actions);
    turns.append(box);
  }
  box.className = "turn " + v.state + (v.followUp ? " follow-up" : "");
  box.querySelector(".question").textContent = v.question;
  box.querySelector(".answer").innerHTML = v.html;
  box.querySelector(".meta").textContent = v.meta;
  for (const part of [".question", ".answer", ".meta", ".actions"]) box.querySelector(part).lang = v.lang; // Korean read and shaped as Korean
  box.querySelector(".insert").textContent = v.buttons.insert;
  box.querySelector(".insert").title = v.buttons.insertTitle;
  box.querySelector(".copy").textContent = v.buttons.copy;
  box.querySelector(".copy").title = v.buttons.copyTitle;
  box.querySelector(".stop").textContent = v.buttons.stop;
  const busy = v.state === "waiting" || v.state === "streaming";
  box.querySelector(".insert").disabled = !v.canInsert;
  box.querySelector(".insert").hidden = v.state === "refused"; // nothing to insert: the server refuses it
  box.querySelector(".copy").disabled = !v.canCopy;
  box.querySelector(".stop").hidden = !busy;
  empty.hidden = true;
  if (atBottom) window.scrollTo(0, document.body.scrollHeight);
}
window.addEventListener("message", (event) => {
  const m = event.data;
  if (m.type === "turn") upsert(m.turn);
  if (m.type === "reset") { turns.textContent = ""; m.turns.forEach(upsert); empty.hidden = m.turns.length > 0; }
  if ((m.type === "turn" && m.reveal) || (m.type === "reset" && m.turns.length)) {
    revealing = m.type === "turn" ? m.turn.id : m.turns[m.turns.length - 1].id;
    reveal();
  }
  if (m.type === "thread") {
    const input = document.getElementById("question");
    input.placeholder = m.placeholder;
    input.setAttribute("aria-label", m.label);
    input.lang = m.lang;
    document.getElementById("ask").textContent = m.button;
  }
});
document.addEventListener("click", (event) => {
  const a = event.target.closest && event.target.closest("a[href]");
  if (!a) return;
  const href = a.getAttribute("href");
  if (href.startsWith("file:")) { event.preventDefault(); vscode.postMessage({ type: "open", href }); }
});
document.getElementById("follow").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("question");
  const question = input.value.trim();
  if (question) { vscode.postMessage({ type: "ask", question }); input.value = ""; }
});
vscode.postMessage({ type: "ready" });
`;
