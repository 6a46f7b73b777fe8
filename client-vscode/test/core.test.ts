/** The protocol modules' pure parts: settings, finding the server, the panel's rendering, status. */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { answerMeta, citationHref, citationLabels, panelMarkdown, parseCitationHref, questionLang, streamingMarkdown, WORDS } from "../src/core/answer";
import { excerpt } from "../src/core/excerpt";
import { HeldMessages, Message } from "../src/core/heldMessages";
import { followUpConversation, page, renderMarkdown, turnView } from "../src/core/panelView";
import type { Answer, Citation, Hit, Status } from "../src/core/protocol";
import { noIcons, noRelated, passageItem, sectionAt } from "../src/core/related";
import { expandPath, findServer } from "../src/core/serverCommand";
import { serverOptions } from "../src/core/settings";
import { statusBar, statusText } from "../src/core/statusView";

function citation(marker: number, p: string, heading: string[], start: number, end: number, label?: string): Citation {
  return {
    marker, path: p, uri: `file:///notes/${p}`, heading_path: heading,
    range: { start: { line: start - 1, character: 0 }, end: { line: end, character: 0 } },
    chunk_id: `c${marker}`, content_hash: "0123456789abcdef0123", score: 0.5, text: "Backups run at 02:30.",
    start_line: start, end_line: end, label,
  };
}

function answer(over: Partial<Answer> = {}): Answer {
  return {
    schema: "answer.v1", question: "When?", answer: "At 02:30 [#1], kept 7 days [#2] [#1].",
    markdown: "", citations: [citation(1, "ops/backup.md", ["Backups", "Schedule"], 12, 26, "kb-1"),
      citation(2, "ops/my notes (old).md", [], 3, 4, "kb-2")],
    grounded: true, refusal_reason: null, model: { backend: "extractive", id: "extractive" },
    embedding: { backend: "use", id: "use", dim: 512 }, prompt_template_version: "rag-v1",
    retrieval: { trace_id: "t", mode: "hybrid", k: 10, score_gate: 0.16, top_score: 0.7, chunks_returned: 8, chunks_used: 2 },
    usage: { prompt_tokens: 0, completion_tokens: 9, first_token_ms: 3, latency_ms: 41.6 },
    versions: {}, created_at: "", result_hash: "", answer_id: 7, ...over,
  };
}

describe("settings", () => {
  it("sends only what the user set, under the server's config keys", () => {
    const set: Record<string, unknown> = {
      "llm.backend": "ollama", "llm.endpoint": "http://127.0.0.1:11434", "llm.model": "", "llm.apiKeyEnv": "OPENAI_API_KEY",
      "search.k": 5, "search.mode": "lexical", "rag.answeredAt": 0.6, indexDir: "~/idx", serverPath: "/x/kebab",
    };
    assert.deepEqual(serverOptions((s) => set[s], (p) => p.replace("~", "/home/me")), {
      llm: { backend: "ollama", endpoint: "http://127.0.0.1:11434", api_key_env: "OPENAI_API_KEY" },
      search: { k: 5, mode: "lexical" }, rag: { answered_at: 0.6 }, index_dir: "/home/me/idx",
    });
    assert.deepEqual(serverOptions(() => undefined), {});
  });
});

describe("finding the server", () => {
  const exists = (files: string[]) => (f: string) => files.includes(f);
  it("prefers the setting, then the workspace's .venv, then PATH", () => {
    const all = ["/s/kebab", "/ws/.venv/bin/kebab", "/usr/bin/kebab"];
    assert.deepEqual(findServer({ setting: "/s/kebab", folders: ["/ws"], pathEnv: "/usr/bin", isExecutable: exists(all), platform: "linux" }),
      { command: "/s/kebab", args: ["serve"], source: "setting" });
    assert.equal((findServer({ folders: ["/other", "/ws"], pathEnv: "/usr/bin", isExecutable: exists(all), platform: "linux" }) as { command: string }).command,
      "/ws/.venv/bin/kebab");
    assert.deepEqual(findServer({ folders: ["/other"], pathEnv: "/nope:/usr/bin", isExecutable: exists(all), platform: "linux" }),
      { command: "/usr/bin/kebab", args: ["serve"], source: "path" });
  });
  it("says why when there is none, or the setting is wrong", () => {
    assert.match((findServer({ folders: [], pathEnv: "", isExecutable: () => false }) as { missing: string }).missing, /serverPath/);
    assert.match((findServer({ setting: "bin/kebab", folders: ["/ws"], isExecutable: () => false }) as { missing: string }).missing,
      /bin\/kebab, which is not an executable/);
  });
  it("expands ~, ${workspaceFolder} and relative paths", () => {
    assert.equal(expandPath("${workspaceFolder}/.venv/bin/kebab", "/ws"), "/ws/.venv/bin/kebab");
    assert.equal(expandPath("tools/kebab", "/ws"), "/ws/tools/kebab");
    assert.ok(path.isAbsolute(expandPath("~/bin/kebab")));
  });
});

describe("the panel", () => {
  it("links each citation to its lines and lists the sources", () => {
    const md = panelMarkdown(answer());
    assert.ok(md.startsWith("At 02:30 [\\[1\\]](<file:///notes/ops/backup.md#L12-L26> \"Backups › Schedule\")"), md);
    assert.match(md, /\*\*Sources\*\*\n\n- \\\[1\\\] \[Backups › Schedule\]\(<file:\/\/\/notes\/ops\/backup\.md#L12-L26>\) `ops\/backup\.md` L12\u2060–\u2060L26/);
    const html = renderMarkdown(md);
    assert.match(html, /<li>\[2\] <a href="file:\/\/\/notes\/ops\/my%20notes%20\(old\)\.md#L3-L4">my notes \(old\)\.md<\/a>/);
    assert.match(html, /<a href="file:\/\/\/notes\/ops\/backup\.md#L12-L26" title="Backups › Schedule">\[1\]<\/a>/);
    assert.deepEqual(parseCitationHref(citationHref(answer().citations[0])), { uri: "file:///notes/ops/backup.md", start: 12, end: 26 });
    assert.equal(parseCitationHref("https://example.com"), undefined);
  });

  it("keeps a note's issue link `[#11](…)` as a link, not a citation", () => {
    const md = panelMarkdown(answer({ answer: "See [#11](https://github.com/o/r/issues/11) at 02:30 [#1]." }));
    assert.ok(md.startsWith("See [#11](https://github.com/o/r/issues/11) at 02:30 [\\[1\\]]"), md);
  });
  it("says which notes an answer was limited to", () => {
    assert.ok(!panelMarkdown(answer()).includes("Only notes matching"));
    const md = panelMarkdown(answer({ filters: "#ops path:infra/ status=draft" }));
    assert.ok(md.startsWith("> Only notes matching: `#ops path:infra/ status=draft`\n\nAt 02:30"), md);
  });

  it("shows a refusal as such, with the nearest passages", () => {
    const refused = answer({
      grounded: false, refusal_reason: "score_gate", citations: [],
      answer: "No passage in the notes is close enough to this question to answer it.",
      candidates: [citation(0, "cooking/sourdough.md", ["Sourdough", "Proofing"], 5, 9)],
    });
    const md = panelMarkdown(refused);
    assert.match(md, /^> \*\*Not answered\.\*\* The closest passages in the notes do not answer this\./);
    assert.match(md, /\*\*Nearest passages\*\*\n\n1\. \[Sourdough › Proofing\]\(<file:\/\/\/notes\/cooking\/sourdough\.md#L5-L9>\)/);
    assert.doesNotMatch(md, /Sources/);
    const v = turnView({ id: 1, question: "q", state: "refused", streamed: "", answer: refused });
    assert.equal(v.state, "refused");
    assert.deepEqual([v.canInsert, v.canCopy], [false, true]); // the server inserts grounded answers only
  });

  it("keeps notes' HTML as text and shows markers plainly while streaming", () => {
    assert.doesNotMatch(renderMarkdown("<script>alert(1)</script>"), /<script>/);
    assert.equal(streamingMarkdown("at 02:30 [#1]"), "at 02:30 \\[1\\]");
    const v = turnView({ id: 2, question: "q", state: "streaming", streamed: "at 02:30 [#1]" });
    assert.match(v.html, /at 02:30 \[1\]/);
    assert.equal(v.canInsert, false);
  });

  it("offers Insert for a stored grounded answer (the server inserts it by id)", () => {
    assert.equal(turnView({ id: 3, question: "q", state: "answered", streamed: "", answer: answer() }).canInsert, true);
    assert.equal(turnView({ id: 4, question: "q", state: "answered", streamed: "", answer: answer({ answer_id: null }) }).canInsert, false);
  });

  it("follows up only in the thread of the latest answer (the server's id); nothing else sends one", () => {
    assert.equal(followUpConversation([]), undefined);
    const turns = [
      { id: 1, question: "a?", state: "answered" as const, streamed: "", answer: answer({ conversation: "aaaaaaaaaaaa" }) },
      { id: 2, question: "b?", state: "refused" as const, streamed: "", answer: answer({ grounded: false, conversation: "bbbbbbbbbbbb" }) },
      { id: 3, question: "c?", state: "failed" as const, streamed: "", error: "boom" },
    ];
    assert.equal(followUpConversation(turns), "bbbbbbbbbbbb");
    assert.equal(turnView({ ...turns[1], followUp: true }).followUp, true);
    assert.equal(turnView(turns[0]).followUp, false);
  });

  it("numbers citations by the labels the server gave them: [1] first, in order of appearance", () => {
    // one source cited as the evidence's third passage is kb-1, shown [1], never [3]
    const one = answer({ answer: "Use `listen 443 quic` [#3].", citations: [citation(3, "ops/nginx.md", ["Nginx", "HTTP/3"], 7, 23, "kb-1")] });
    const md = panelMarkdown(one);
    assert.match(md, /\[\\\[1\\\]\]\(<file:\/\/\/notes\/ops\/nginx\.md#L7-L23>/);
    assert.doesNotMatch(md, /\\\[3\\\]/);
    assert.match(md, /\*\*Sources\*\*\n\n- \\\[1\\\] \[Nginx › HTTP\/3\]/);
    // [#3] then [#1]: labelled kb-1 then kb-2, Sources in that order; a marker naming no citation is dropped
    const two = answer({
      answer: "At 02:30 [#3], kept 7 days [#1], see [#9] and [#3].",
      citations: [citation(1, "ops/backup.md", ["Retention"], 28, 36, "kb-2"), citation(3, "ops/backup.md", ["Schedule"], 12, 26, "kb-1")],
    });
    assert.deepEqual([...citationLabels(two)], [[3, "1"], [1, "2"]]);
    const html = renderMarkdown(panelMarkdown(two));
    assert.deepEqual([...html.matchAll(/title="[^"]*">\[(\d)\]<\/a>/g)].map((m) => m[1]), ["1", "2", "1"]);
    assert.match(html, /<li>\[1\] <a [^>]*>Schedule<\/a>[^]*<li>\[2\] <a [^>]*>Retention<\/a>/);
    assert.doesNotMatch(html, /\[9\]/);
  });

  it("shows the labels the server gave for the note asked from, numeric ones too, sorted as numbers", () => {
    // kb-2 is the note's own definition of the first passage (reused), kb-10 the next free label
    const cites = [citation(1, "ops/backup.md", ["Retention"], 28, 36, "kb-10"), citation(2, "ops/backup.md", ["Schedule"], 12, 26, "kb-2")];
    const a = answer({ answer: "Kept 7 days [#1], at 02:30 [#2].", citations: cites });
    assert.deepEqual([...citationLabels(a)], [[2, "2"], [1, "10"]]);
    const md = panelMarkdown(a);
    assert.match(md, /^Kept 7 days \[\\\[10\\\]\][^\n]*, at 02:30 \[\\\[2\\\]\]/);
    assert.match(md, /\*\*Sources\*\*\n\n- \\\[2\\\] \[Schedule\][^\n]*\n- \\\[10\\\] \[Retention\]/);
    // footnote_labels = numeric: "3" is shown as it is; a label without kb- too
    const numeric = answer({ citations: [citation(1, "a.md", ["A"], 1, 2, "3"), citation(2, "b.md", ["B"], 1, 2, "src")] });
    assert.deepEqual([...citationLabels(numeric)], [[1, "3"], [2, "src"]]);
    assert.match(panelMarkdown(numeric), /- \\\[3\\\] \[A\][^\n]*\n- \\\[src\\\] \[B\]/);
    assert.equal(answerMeta(numeric), "extractive · 42 ms · 2 sources");
  });

  it("shows an older answer's citations (no labels) by their marker numbers", () => {
    const old = answer({
      answer: "At 02:30 [#3], kept 7 days [#1].",
      citations: [citation(1, "ops/backup.md", ["Retention"], 28, 36), citation(3, "ops/backup.md", ["Schedule"], 12, 26)],
    });
    assert.deepEqual([...citationLabels(old)], [[1, "1"], [3, "3"]]);
    const html = renderMarkdown(panelMarkdown(old));
    assert.deepEqual([...html.matchAll(/title="[^"]*">\[(\d)\]<\/a>/g)].map((m) => m[1]), ["3", "1"]);
    assert.match(html, /<li>\[1\] <a [^>]*>Retention<\/a>[^]*<li>\[3\] <a [^>]*>Schedule<\/a>/);
  });

  it("reads wiki links as text in the answer", () => {
    const a = answer({ answer: "See [[#Order of the new task]] and [[Recurring Tasks#When done|done]] [#1]." });
    const md = panelMarkdown(a);
    assert.match(md, /^See Order of the new task and done \[/);
    assert.doesNotMatch(md, /\[\[/);
  });

  it("keeps a line range on one line and says how many notes an answer cites, not passages", () => {
    const html = renderMarkdown(panelMarkdown(answer()));
    assert.match(html, /L12\u2060–\u2060L26/); // word joiners: no break at the dash
    assert.equal(answerMeta(answer()), "extractive · 42 ms · 2 sources");
    assert.equal(answerMeta(answer({ usage: { prompt_tokens: 0, completion_tokens: 0, first_token_ms: null, latency_ms: 2345 } })),
      "extractive · 2.3 s · 2 sources");
    assert.equal(answerMeta(answer({ grounded: false, refusal_reason: "score_gate", citations: [] })), "extractive · 42 ms");
    assert.doesNotMatch(answerMeta(answer()), /passages|of/);
  });

  it("says why in words, never the refusal code", () => {
    for (const reason of ["score_gate", "llm_self_judge", "no_chunks", "cancelled", "llm_error"] as const) {
      const md = panelMarkdown(answer({ grounded: false, refusal_reason: reason, citations: [], answer: "" }));
      assert.doesNotMatch(md, new RegExp(reason), reason);
      assert.match(md, /^> \*\*Not answered\.\*\* \S/, reason);
    }
    const todoist = answer({
      grounded: false, refusal_reason: "score_gate", citations: [], refusal_text: "The notes never mention: Todoist.",
      answer: "No passage in the notes is close enough to this question to answer it. No note mentions: Todoist.",
    });
    const md = panelMarkdown(todoist);
    assert.match(md, /^> \*\*Not answered\.\*\* The notes never mention: Todoist\.\n$/); // the server's canned text is not repeated
    // a model's text that cited nothing is kept under the refusal; the extractive refusal sentence is not
    const judged = { grounded: false, refusal_reason: "llm_self_judge" as const, citations: [], refusal_text: "The passages found do not state an answer." };
    assert.match(panelMarkdown(answer({ ...judged, answer: "Probably at night.", model: { backend: "openai", id: "m" } })), /Probably at night\./);
    assert.doesNotMatch(panelMarkdown(answer({ ...judged, answer: "The notes do not contain enough evidence." })), /enough evidence/);
  });

  it("shows a model answer the notes do not support under a warning, never as Not answered", () => {
    const md = panelMarkdown(answer({
      grounded: false, refusal_reason: "llm_self_judge", citations: [], model: { backend: "openai", id: "smollm2" },
      answer: "Daily snapshots are kept for 20 days.", unsupported: ["20", "Daily snapshots are kept for 20 days."],
      refusal_text: "The notes do not support this answer. No passage holds: 20.",
    }));
    assert.match(md, /^> ⚠ The notes do not support this answer\. No passage holds: 20\.\n\nDaily snapshots are kept for 20 days\./);
    assert.doesNotMatch(md, /Not answered/);
  });

  it("says when the answer was made while the index was still being built", () => {
    const message = "The index is still being built (5 of 119 files read): ask again when it is done for a complete answer.";
    const building = { files_done: 5, files_total: 119, vectors_pending: 0, message };
    assert.match(panelMarkdown(answer({ index_building: building })), /^> ⏳ The index is still being built \(5 of 119 files read\)/);
    const refused = panelMarkdown(answer({ index_building: building, grounded: false, refusal_reason: "score_gate", citations: [] }));
    assert.match(refused, /still being built[^]*Not answered/);
    assert.doesNotMatch(panelMarkdown(answer({ index_building: null })), /being built/);
  });

  it("shows the nearest passages with the server's excerpt as it is, and nothing for an older server's", () => {
    const raw = "## Setup\n\n<!-- placeholder -->\n| Flag | Value |\n|------|------:|\n| `--keep-daily` | 7 |";
    const clean = "Flag · Value --keep-daily · 7, see the backup note; snake_case_name <b> stays.";
    const refused = answer({
      grounded: false, refusal_reason: "score_gate", citations: [], candidates: [
        { ...citation(0, "a.md", ["A"], 1, 9), text: raw, excerpt: clean },
        { ...citation(0, "b.md", ["B"], 1, 9), text: raw, excerpt: null },
      ],
    });
    const md = panelMarkdown(refused);
    const html = renderMarkdown(md);
    assert.doesNotMatch(html, /&lt;!--|```|\| `|placeholder|<b>/);
    assert.match(html, /<em>Flag · Value --keep-daily · 7, see the backup note; snake_case_name &lt;b&gt; stays\.<\/em>/);
    assert.equal([...html.matchAll(/<em>/g)].length, 1); // the passage without an excerpt shows only its link
    assert.match(md, /\n2\. \[B\]\(<file:\/\/\/notes\/b\.md#L1-L9>\) `b\.md` L1\u2060–\u2060L9\n?$/);
  });

  // the panel's own words, English: none of them may show around a Korean answer
  const ENGLISH = /Not answered|Closest in your notes|Sources|Closest passages|Nearest passages|Only notes matching|disagree|not cited|source|Searching|Failed/;

  it("writes its words around a Korean answer in Korean: closest, with the closest passages", () => {
    const closest = answer({
      question: "크루아상 반죽은 냉장고에서 얼마나 쉬어야 하나요?", lang: "ko",
      grounded: false, outcome: "closest", refusal_reason: "llm_self_judge", citations: [], answer: "",
      refusal_text: "찾은 구절에 답이 나와 있지 않습니다.", filters: "#요리",
      candidates: [{ ...citation(0, "korean/kimchi-jjigae.md", ["김치찌개", "만드는 법"], 24, 30), excerpt: "냄비에 식용유 1큰술을 두르고 돼지고기를 볶는다." }],
    });
    const md = panelMarkdown(closest);
    assert.ok(md.startsWith("> 이 노트에서만: `#요리`\n\n> **노트에서 가장 가까운 곳.** 찾은 구절에 답이 나와 있지 않습니다.\n\n"), md);
    assert.match(md, /\*\*가장 가까운 구절\*\*\n\n1\. \[김치찌개 › 만드는 법\]\(<file:\/\/\/notes\/korean\/kimchi-jjigae\.md#L24-L30>\)/);
    assert.match(md, /\*냄비에 식용유 1큰술을 두르고 돼지고기를 볶는다\.\*/);
    assert.doesNotMatch(md, ENGLISH);
    assert.equal(answerMeta(closest), "extractive · 42 ms");
    // nothing in the notes, and an older server's refusal without words: still Korean
    const none = panelMarkdown(answer({ lang: "ko", grounded: false, refusal_reason: "score_gate", citations: [], answer: "",
      candidates: [citation(0, "a.md", ["가"], 1, 2)] }));
    assert.ok(none.startsWith("> **답하지 못했습니다.** 노트에서 가장 가까운 구절도 이 질문에 답하지 않습니다.\n\n**가까운 구절**\n\n1. "), none);
    assert.doesNotMatch(none, ENGLISH);
    for (const reason of ["score_gate", "llm_self_judge", "no_chunks", "cancelled", "llm_error"] as const) {
      const md = panelMarkdown(answer({ lang: "ko", grounded: false, refusal_reason: reason, citations: [], answer: "" }));
      assert.ok(md.startsWith(`> **답하지 못했습니다.** ${WORDS.ko.refusals[reason]}`), md);
      assert.doesNotMatch(md, ENGLISH);
    }
  });

  it("writes its words around a Korean answer in Korean: grounded, with its sources", () => {
    const grounded = answer({
      question: "김치찌개에 설탕은 언제 넣나요?", lang: "ko", outcome: "answered",
      answer: "김치를 넣고 5분 더 볶을 때 설탕을 넣는다 [#1]. 두부는 마지막에 넣는다 [#2].",
      citations: [citation(1, "korean/kimchi-jjigae.md", ["김치찌개", "만드는 법", "볶기"], 27, 28, "kb-1"),
        citation(2, "korean/kimchi-jjigae.md", ["김치찌개", "만드는 법", "끓이기"], 30, 34, "kb-2")],
      conflicts: [{ a: 1, b: 2, detail: "5분과 10분", a_source: "korean/kimchi-jjigae.md", b_source: "korean/kimchi-jjigae.md" },
        { a: 1, b: 9, detail: "설탕 양" }],
    });
    const md = panelMarkdown(grounded);
    assert.match(md, /^김치를 넣고 5분 더 볶을 때 설탕을 넣는다 \[\\\[1\\\]\]\(<file:\/\/\/notes\/korean\/kimchi-jjigae\.md#L27-L28>/);
    assert.match(md, /\*\*출처\*\*\n\n- \\\[1\\\] \[김치찌개 › 만드는 법 › 볶기\][^\n]*\n- \\\[2\\\] \[김치찌개 › 만드는 법 › 끓이기\]/);
    assert.match(md, /> ⚠ 노트끼리 어긋납니다 \(\\\[1\\\], \\\[2\\\]\): 5분과 10분/);
    assert.match(md, /> ⚠ 노트끼리 어긋납니다 \(\\\[1\\\], 인용되지 않은 구절\): 설탕 양/);
    assert.doesNotMatch(md, ENGLISH);
    assert.equal(answerMeta(grounded), "extractive · 42 ms · 출처 2개");
    const html = renderMarkdown(md);
    assert.match(html, /<p><strong>출처<\/strong><\/p>/);
    const view = turnView({ id: 1, question: grounded.question, state: "answered", streamed: "", answer: grounded });
    assert.equal(view.lang, "ko");
    assert.doesNotMatch(view.html + view.meta, ENGLISH);
    // stored before `lang`: the words of its question's language
    for (const lang of [undefined, null] as const) {
      assert.match(panelMarkdown({ ...grounded, lang }), /\*\*출처\*\*/);
      assert.match(panelMarkdown({ ...grounded, lang, question: "When do I add the sugar?" }), /\*\*Sources\*\*/);
    }
    // the same answer said to be English: the English words
    for (const lang of ["en"] as const) {
      const en = panelMarkdown({ ...grounded, lang });
      assert.match(en, /\*\*Sources\*\*\n\n- \\\[1\\\]/);
      assert.match(en, /> ⚠ The notes disagree \(\\\[1\\\] and \\\[2\\\]\)/);
      assert.doesNotMatch(en, /출처|어긋납니다/);
      assert.equal(answerMeta({ ...grounded, lang }), "extractive · 42 ms · 2 sources");
    }
  });

  it("writes its words for a Korean question in Korean before the answer arrives, as the server will answer it", () => {
    assert.equal(questionLang("김치찌개에 설탕은 언제 넣나요?"), "ko");
    assert.equal(questionLang("CORSMiddleware allow_credentials 설정하려면?"), "ko"); // the server's rule: a fifth of the words
    assert.equal(questionLang("What time does the nightly backup run?"), "en");
    assert.equal(questionLang("How do I say 안녕 in a formal letter to my new manager?"), "en");
    // read without the filter words at its start, as the server reads it
    assert.equal(questionLang("path:infra/ #ops status=draft tag:x 백업은?"), "ko");
    assert.equal(questionLang("#ops reviewed>=2024-01-01 when is the backup?"), "en");
    assert.equal(questionLang("#!/bin/bash a b c 배포"), "en"); // a shebang is no tag
    assert.equal(questionLang("분류=운영 a b c d e f 배포"), "en"); // a Korean key filters too
    assert.equal(questionLang(""), "en");
    const waiting = turnView({ id: 1, question: "김치찌개에 설탕은 언제 넣나요?", state: "waiting", streamed: "" });
    assert.equal(waiting.lang, "ko");
    assert.match(waiting.html, /<em>노트를 찾는 중…<\/em>/);
    const failed = turnView({ id: 2, question: "김치찌개에 설탕은 언제 넣나요?", state: "failed", streamed: "김치를 [#1]", error: "connection lost" });
    assert.match(failed.html, /김치를 \[1\][^]*<strong>실패했습니다\.<\/strong> connection lost/);
    assert.doesNotMatch(failed.html, /Failed/);
    const english = turnView({ id: 3, question: "When?", state: "failed", streamed: "", error: "connection lost" });
    assert.equal(english.lang, "en");
    assert.match(english.html, /<strong>Failed\.<\/strong> connection lost/);
    assert.match(turnView({ id: 4, question: "When?", state: "waiting", streamed: "" }).html, /Searching the notes…/);
  });

  it("allows only its own nonce'd script", () => {
    const html = page("vscode-resource:", "abc123");
    assert.match(html, /script-src 'nonce-abc123'/);
    assert.match(html, /<script nonce="abc123">/);
  });
});

describe("status", () => {
  const folder = {
    uri: "file:///notes", root: "/notes", state: "ready" as const, progress: { phase: "", done: 0, total: 0 }, error: null,
    files: 16, chunks: 84, vectors: 84, pending_vectors: 0, index_dir: "/cache/notes-1",
    embedding: { backend: "use", id: "use-multilingual-v3", dim: 512 }, llm: { backend: "extractive", id: "extractive", endpoint: null },
    skipped: [{ path: "big.md", reason: "larger than max_file_bytes" }],
  };
  const status = (over: object): Status => ({ state: "ready", files: 16, chunks: 84, folders: [{ ...folder, ...over }] });

  it("shows indexing progress, then notes, chunks and model", () => {
    assert.equal(statusBar(status({ state: "indexing", progress: { phase: "parsing", done: 5, total: 16 } })).text,
      "$(sync~spin) kebab: indexing 5/16 files");
    assert.equal(statusBar(status({ state: "indexing", progress: { phase: "embedding", done: 40, total: 84 } })).text,
      "$(sync~spin) kebab: embedding 40/84");
    assert.equal(statusBar(status({ state: "indexing", progress: { phase: "units", done: 16, total: 76 } })).text,
      "$(sync~spin) kebab: reading passages 16/76"); // passages, not files
    assert.equal(statusBar(status({ pending_vectors: 12 })).busy, true);
    const ready = statusBar(status({}));
    assert.equal(ready.text, "$(book) kebab: 16 notes · 84 chunks");
    assert.match(ready.tooltip, /extractive/);
    assert.equal(statusBar(status({ state: "failed", error: "index locked" })).text, "$(error) kebab");
  });

  it("is one item: indexing wins, else what kebab is doing for you, else the counts", () => {
    const indexing = status({ state: "indexing", progress: { phase: "parsing", done: 5, total: 16 } });
    assert.equal(statusBar(indexing, "answering").text, "$(sync~spin) kebab: indexing 5/16 files");
    const answering = statusBar(status({}), "answering");
    assert.deepEqual([answering.text, answering.busy], ["$(sync~spin) kebab: answering", true]);
  });

  it("lists folders, models, index and skipped files as plain text for the output view", () => {
    const text = statusText(status({}));
    assert.match(text, /^kebab status: ready · 16 notes · 84 chunks\n/);
    assert.match(text, /\n {2}embeddings {2}use use-multilingual-v3 \(512-d\)\n/);
    assert.match(text, /\n {2}index {7}\/cache\/notes-1\n/);
    assert.match(text, /\n {4}big\.md: larger than max_file_bytes\n/);
    assert.match(statusText(status({ state: "indexing", progress: { phase: "parsing", done: 5, total: 16 } })), /state {7}indexing \(indexing 5\/16 files\)/);
  });
});

describe("server messages", () => {
  const info = (message: string): Message => ({ type: 3, message });
  it("drops the info toast of a refusal the panel shows, keeps warnings and other messages", async () => {
    const shown: string[] = [];
    const held = new HeldMessages((m) => shown.push(m.message));
    await held.while(async () => {
      held.received(info("kebab: The notes never mention: Todoist. Nothing was inserted."));
      held.received({ type: 2, message: "kebab: the note kept changing" });
      return { grounded: false };
    }, (r) => !r.grounded);
    assert.deepEqual(shown, ["kebab: the note kept changing"]);
    await held.while(async () => { held.received(info("kebab: inserted")); return { grounded: true }; }, (r) => !r.grounded);
    assert.deepEqual(shown, ["kebab: the note kept changing", "kebab: inserted"]);
    held.received(info("kebab: reindexing"));
    assert.equal(shown.at(-1), "kebab: reindexing");
    await assert.rejects(held.while(async () => { held.received(info("kept")); throw new Error("boom"); }, () => true));
    assert.equal(shown.at(-1), "kept"); // a failed request shows what it held
  });
});

describe("related passages", () => {
  const hit = (over: Partial<Hit> = {}): Hit => ({
    path: "ops/postgres.md", uri: "file:///notes/ops/postgres.md", heading_path: ["Postgres on nas01", "Dumps"],
    range: { start: { line: 25, character: 0 }, end: { line: 34, character: 0 } }, score: 0.61,
    text: "## Dumps\n\nA cron job runs `pg_dumpall` every day at **02:00**.\n\n```bash\n0 2 * * * pg_dumpall\n```\n",
    chunk_id: "c", content_hash: "h", start_line: 26, end_line: 34, ...over,
  });

  it("labels a passage by its heading path, describes it by note and lines, and reads its text as text", () => {
    const item = passageItem(hit());
    assert.equal(item.label, "Postgres on nas01 › Dumps");
    assert.equal(item.description, "ops/postgres.md · L26\u2060–\u2060L34");
    assert.equal(item.detail, "A cron job runs pg_dumpall every day at 02:00. 0 2 * * * pg_dumpall"); // code kept, fences not
    assert.deepEqual([item.uri, item.start, item.end], ["file:///notes/ops/postgres.md", 25, 33]); // 0-based, inclusive
    assert.equal(passageItem(hit({ start_line: 3, end_line: 3 })).description, "ops/postgres.md · L3");
    assert.equal(passageItem(hit({ start_line: 3, end_line: 3, linked: true })).description, "ops/postgres.md · L3 · linked");
  });

  it("reads a passage's detail as clean text: no comments, fences, pipes, link targets or emphasis marks", () => {
    const raw = [
      "## Setup", "", "<!-- placeholder: write this section -->", "<!-- include: snippets/setup.md -->",
      "| Flag | Value |", "|------|------:|", "| `--keep-daily` | 7 |", "", "```md", "- [ ] a task #todo", "```",
      "> [!note]", "> See [the docs](https://example.com/docs) and [[backup|the backup note]].",
    ].join("\n");
    assert.equal(excerpt(raw), "Flag · Value --keep-daily · 7 a task #todo See the docs and the backup note.");
    assert.equal(excerpt("# Title\n## Setup\nRun it.\n### Later\nDone."), "Run it. Later Done.");
    assert.equal(excerpt("<!-- only a comment -->"), "");
    assert.equal(excerpt("word ".repeat(100), 30), "word word word word word word…");
    assert.equal(excerpt("The _new_ task goes *above* it, see [[#Order of the new task]] and [[notes#Setup]]; snake_case_name stays."),
      "The new task goes above it, see Order of the new task and notes › Setup; snake_case_name stays.");
  });

  it("names a passage without headings by its note's title, else its file name; `$(x)` stays text", () => {
    assert.equal(passageItem(hit({ heading_path: [], title: "Postgres" })).label, "Postgres");
    assert.equal(passageItem(hit({ heading_path: [" "], title: undefined })).label, "postgres.md");
    assert.equal(passageItem(hit({ heading_path: ["Costs $(sync) of $(x~spin)"] })).label, "Costs \\$(sync) of \\$(x~spin)");
    assert.equal(noIcons("price $(5 dollars) and \\$(kept)"), "price $(5 dollars) and \\$(kept)");
  });

  it("finds the cursor's section: ATX headings above it, not in front matter or code", () => {
    const note = [
      "---", "title: x", "# not a heading", "---", // 0-3
      "# Top", "", "## A", "text", // 4-7
      "```sh", "# a comment, not a heading", "```", "after the fence", // 8-11
      "### A.1 ###", "deep", "## B", "b text", // 12-15
      "~~~", "## in tildes", "```", "still code", "~~~", "out", // 16-21
    ].join("\n");
    assert.deepEqual(sectionAt(note, 1), []);
    assert.deepEqual(sectionAt(note, 5), ["Top"]);
    assert.deepEqual(sectionAt(note, 6), ["Top", "A"]);
    assert.deepEqual(sectionAt(note, 11), ["Top", "A"]);
    assert.deepEqual(sectionAt(note, 13), ["Top", "A", "A.1"]);
    assert.deepEqual(sectionAt(note, 15), ["Top", "B"]);
    assert.deepEqual(sectionAt(note, 21), ["Top", "B"]);
    assert.deepEqual(sectionAt(note, 999), ["Top", "B"]);
    assert.deepEqual(sectionAt("no headings\r\nat all", 1), []);
  });

  it("says in words when nothing is related, and where else it can look", () => {
    const none = noRelated(["Home server backups", "Schedule"], false);
    assert.equal(none.label, "No related passages in other notes");
    assert.match(none.detail, /No other note is close in meaning to “Schedule”\..*this note's other sections/);
    assert.match(noRelated([], true).detail, /^Nothing else in the notes is close in meaning to this part of the note\.$/);
  });
});
