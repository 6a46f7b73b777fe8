/**
 * The answer panel (panel.ts) in a fake VS Code whose webview runs the real page script: what a
 * person sees in the panel when a new turn starts while they read an earlier one (issue 27, 8).
 */
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeWebviewPanel, panels, settle, useFakeVscode } from "./fakePanel";
import type { AnswerPanel } from "../src/panel";
import type { Answer, Rpc } from "../src/core/protocol";

function answer(question: string, over: Partial<Answer> = {}): Answer {
  return {
    schema: "answer.v1", question, answer: "At 02:30 [#1].", markdown: "",
    citations: [{
      marker: 1, path: "ops/backup.md", uri: "file:///notes/ops/backup.md", heading_path: ["Backups"],
      range: { start: { line: 11, character: 0 }, end: { line: 26, character: 0 } }, chunk_id: "c1",
      content_hash: "0123456789abcdef", score: 0.5, text: "At 02:30.", start_line: 12, end_line: 26,
    }],
    grounded: true, refusal_reason: null, model: { backend: "extractive", id: "extractive" },
    embedding: { backend: "use", id: "use", dim: 512 }, prompt_template_version: "rag-v1",
    retrieval: { trace_id: "t", mode: "hybrid", k: 10, score_gate: 0.16, top_score: 0.7, chunks_returned: 8, chunks_used: 1 },
    usage: { prompt_tokens: 0, completion_tokens: 9, first_token_ms: 3, latency_ms: 41.6 },
    versions: {}, created_at: "", result_hash: "", answer_id: 7, ...over,
  };
}

const REFUSAL = answer("Can I sync my tasks to Todoist?", {
  grounded: false, refusal_reason: "score_gate", citations: [], answer: "", refusal_text: "The notes never mention: Todoist.",
});

/** A connection whose kebab/ask the test answers: its progress reports, then the answer. */
class ScriptedRpc {
  progress: ((value: unknown) => void) | undefined;
  answer: ((a: Answer) => void) | undefined;
  sendRequest(_type: unknown, _params: unknown): Promise<unknown> {
    return new Promise((resolve) => { this.answer = resolve; });
  }
  sendNotification(): Promise<void> {
    return Promise.resolve();
  }
  onProgress(_type: unknown, _token: unknown, handler: (value: unknown) => void): { dispose(): void } {
    this.progress = handler;
    return { dispose() {} };
  }
}

describe("the answer panel", () => {
  let Panel: typeof AnswerPanel;
  const log = { info() {}, error() {} } as never;

  before(async () => {
    useFakeVscode();
    Panel = (await import("../src/panel")).AnswerPanel;
  });

  /** A panel that already shows `n` answered turns, the newest in view. */
  async function panelWith(n: number, rpc = new ScriptedRpc()): Promise<{ answers: AnswerPanel; webview: FakeWebviewPanel }> {
    const answers = new Panel(() => Promise.resolve(rpc as unknown as Rpc), log);
    for (let i = 1; i <= n; i++) {
      answers.showAnswer(answer(`Question ${i}?`));
    }
    await settle();
    const webview = panels.at(-1)!;
    assert.deepEqual(webview.page!.visibleTurns().includes(n), true);
    return { answers, webview };
  }

  it("scrolls to an answer made in the note while an earlier turn is read", async () => {
    const { answers, webview } = await panelWith(4);
    const page = webview.page!;
    page.scrollTo(0); // the person reads the first answer
    assert.deepEqual(page.visibleTurns(), [1, 2, 3]);

    answers.showAnswer(REFUSAL); // Answer question on this line, refused
    await settle();
    assert.ok(page.visibleTurns().includes(5), `turn 5 is off-screen: the panel shows ${page.visibleTurns()}`);
    assert.match(page.turnText(5), /Todoist[^]*Not answered/);
    answers.dispose();
  });

  it("reveals a hidden panel and scrolls to the new turn once it is shown", async () => {
    const { answers, webview } = await panelWith(4);
    webview.page!.scrollTo(0);
    webview.hide(); // the person chose another tab in the panel's group
    assert.deepEqual(webview.page!.visibleTurns(), []);
    const reveals = webview.reveals;

    answers.showAnswer(REFUSAL);
    await settle();
    assert.equal(webview.reveals, reveals + 1, "the panel is brought to the front");
    assert.ok(webview.page!.visibleTurns().includes(5), `turn 5 is off-screen: the panel shows ${webview.page!.visibleTurns()}`);
    answers.dispose();
  });

  it("shows the newest turn when the panel is opened again after it was closed", async () => {
    const { answers, webview } = await panelWith(4);
    webview.dispose(); // closed by the person
    answers.showAnswer(REFUSAL);
    await settle();
    const reopened = panels.at(-1)!;
    assert.notEqual(reopened, webview);
    assert.ok(reopened.page!.visibleTurns().includes(5), `turn 5 is off-screen: the panel shows ${reopened.page!.visibleTurns()}`);
    answers.dispose();
  });

  it("writes its words around a Korean answer in Korean, from the moment it is asked", async () => {
    const rpc = new ScriptedRpc();
    const { answers, webview } = await panelWith(1, rpc);
    const page = webview.page!;
    const question = "김치찌개에 설탕은 언제 넣나요?";
    const asking = answers.ask(question);
    await settle();
    assert.match(page.turnText(2), /노트를 찾는 중/);
    assert.doesNotMatch(page.turnText(2), /Searching/);
    rpc.answer!(answer(question, { lang: "ko", answer: "김치를 볶을 때 설탕을 넣는다 [#1]." }));
    await asking;
    await settle();
    const box = page.turns.children.find((t) => t.id === "turn-2")!;
    assert.match(page.turnText(2), /<strong>출처<\/strong>/);
    assert.doesNotMatch(page.turnText(2), /Sources/);
    assert.equal(box.querySelector(".meta")!.textContent, "extractive · 42 ms · 출처 1개");
    assert.deepEqual([".question", ".answer", ".meta"].map((part) => box.querySelector(part)!.lang), ["ko", "ko", "ko"]);
    // its buttons and the question box under it speak Korean too
    assert.deepEqual([".insert", ".copy", ".stop"].map((b) => box.querySelector(b)!.textContent), ["커서 위치에 넣기", "복사", "멈추기"]);
    assert.equal(page.byId("question")!.placeholder, "질문하기…");
    assert.equal(page.byId("ask")!.textContent, "묻기");
    assert.equal(page.turns.children.find((t) => t.id === "turn-1")!.querySelector(".copy")!.textContent, "Copy");
    // the English answer above it keeps its English words
    assert.match(page.turnText(1), /<strong>Sources<\/strong>/);
    assert.equal(page.turns.children.find((t) => t.id === "turn-1")!.querySelector(".answer")!.lang, "en");
    answers.dispose();
  });

  it("scrolls to a question when it is asked, then leaves the scrolling to the person", async () => {
    const rpc = new ScriptedRpc();
    const { answers, webview } = await panelWith(4, rpc);
    const page = webview.page!;
    page.scrollTo(0);

    const asking = answers.ask("When does the backup run?");
    await settle();
    assert.ok(page.visibleTurns().includes(5), `the asked turn is off-screen: the panel shows ${page.visibleTurns()}`);
    assert.match(page.turnText(5), /Searching the notes/);

    page.scrollTo(0); // back to the first answer while this one streams
    rpc.progress!({ kind: "report", message: "At 02:30 [#1]." });
    rpc.answer!(answer("When does the backup run?"));
    await asking;
    await settle();
    assert.deepEqual(page.visibleTurns(), [1, 2, 3], "the streamed text does not pull the person away");
    answers.dispose();
  });
});
