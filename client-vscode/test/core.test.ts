/** The protocol modules' pure parts: settings, finding the server, the panel's rendering, status. */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { citationHref, panelMarkdown, parseCitationHref, streamingMarkdown } from "../src/core/answer";
import { history, page, renderMarkdown, turnView } from "../src/core/panelView";
import type { Answer, Citation, Status } from "../src/core/protocol";
import { expandPath, findServer } from "../src/core/serverCommand";
import { serverOptions } from "../src/core/settings";
import { statusBar, statusMarkdown } from "../src/core/statusView";

function citation(marker: number, p: string, heading: string[], start: number, end: number): Citation {
  return {
    marker, path: p, uri: `file:///notes/${p}`, heading_path: heading,
    range: { start: { line: start - 1, character: 0 }, end: { line: end, character: 0 } },
    chunk_id: `c${marker}`, content_hash: "0123456789abcdef0123", score: 0.5, text: "Backups run at 02:30.",
    start_line: start, end_line: end,
  };
}

function answer(over: Partial<Answer> = {}): Answer {
  return {
    schema: "answer.v1", question: "When?", answer: "At 02:30 [#1], kept 7 days [#2] [#1].",
    markdown: "", citations: [citation(1, "ops/backup.md", ["Backups", "Schedule"], 12, 26),
      citation(2, "ops/my notes (old).md", [], 3, 4)],
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
      "search.k": 5, "search.mode": "lexical", indexDir: "~/idx", serverPath: "/x/kebab",
    };
    assert.deepEqual(serverOptions((s) => set[s], (p) => p.replace("~", "/home/me")), {
      llm: { backend: "ollama", endpoint: "http://127.0.0.1:11434", api_key_env: "OPENAI_API_KEY" },
      search: { k: 5, mode: "lexical" }, index_dir: "/home/me/idx",
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
    assert.match(md, /\*\*Sources\*\*\n\n- \\\[1\\\] \[Backups › Schedule\]\(<file:\/\/\/notes\/ops\/backup\.md#L12-L26>\) `ops\/backup\.md` L12–L26/);
    const html = renderMarkdown(md);
    assert.match(html, /<li>\[2\] <a href="file:\/\/\/notes\/ops\/my%20notes%20\(old\)\.md#L3-L4">my notes \(old\)\.md<\/a>/);
    assert.match(html, /<a href="file:\/\/\/notes\/ops\/backup\.md#L12-L26" title="Backups › Schedule">\[1\]<\/a>/);
    assert.deepEqual(parseCitationHref(citationHref(answer().citations[0])), { uri: "file:///notes/ops/backup.md", start: 12, end: 26 });
    assert.equal(parseCitationHref("https://example.com"), undefined);
  });

  it("shows a refusal as such, with the nearest passages", () => {
    const refused = answer({
      grounded: false, refusal_reason: "score_gate", citations: [],
      answer: "No passage in the notes is close enough to this question to answer it.",
      candidates: [citation(0, "cooking/sourdough.md", ["Sourdough", "Proofing"], 5, 9)],
    });
    const md = panelMarkdown(refused);
    assert.match(md, /^> \*\*Not answered\.\*\* No passage in the notes is close enough/);
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

  it("builds follow-up history from answered turns", () => {
    const turns = [
      { id: 1, question: "a?", state: "answered" as const, streamed: "", answer: answer() },
      { id: 2, question: "b?", state: "refused" as const, streamed: "", answer: answer({ grounded: false }) },
    ];
    assert.deepEqual(history(turns), [{ question: "a?", answer: answer().answer }]);
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
    assert.equal(statusBar(status({ pending_vectors: 12 })).busy, true);
    const ready = statusBar(status({}));
    assert.equal(ready.text, "$(book) kebab: 16 notes · 84 chunks");
    assert.match(ready.tooltip, /extractive/);
    assert.equal(statusBar(status({ state: "failed", error: "index locked" })).text, "$(error) kebab");
  });

  it("lists folders, models, index and skipped files on the status page", () => {
    const md = statusMarkdown(status({}));
    assert.match(md, /\| embeddings \| use use-multilingual-v3 \(512-d\) \|/);
    assert.match(md, /\| index \| `\/cache\/notes-1` \|/);
    assert.match(md, /- `big\.md`: larger than max_file_bytes/);
  });
});
