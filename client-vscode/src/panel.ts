/**
 * The answer panel: a webview beside the editor where answers stream in, with their citations
 * clickable, Insert at cursor (the server writes the answer into the note) and Copy. It keeps the
 * session's questions and answers. A question from Kebab: Ask starts a new thread; only the
 * follow-up box continues one (the server's `conversation` of the answer above).
 */
import * as crypto from "node:crypto";
import * as vscode from "vscode";
import { parseCitationHref } from "./core/answer";
import { finishedState, followUpConversation, page, resetMessages, ToWebview, Turn, turnMessages } from "./core/panelView";
import type { Answer } from "./core/protocol";
import { ask, AskParams, insertAnswer, Rpc } from "./core/protocol";

type FromWebview =
  | { type: "ready" }
  | { type: "open"; href: string }
  | { type: "insert"; id: number }
  | { type: "copy"; id: number }
  | { type: "stop"; id: number }
  | { type: "ask"; question: string };

export class AnswerPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private readonly turns: Turn[] = [];
  private readonly running = new Map<number, () => void>();
  private lastNote: vscode.TextEditor | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly rpc: () => Promise<Rpc>, private readonly log: vscode.LogOutputChannel) {
    // The panel takes focus from the editor: remember the note the user was in, for Insert.
    this.subscriptions.push(vscode.window.onDidChangeActiveTextEditor((e) => this.remember(e)));
    this.remember(vscode.window.activeTextEditor);
  }

  /**
   * Ask a question and stream its answer into the panel: a new thread, or with `followUp` the
   * thread of the latest answer in the panel (the server keeps its turns).
   */
  async ask(question: string, options: { uri?: string; followUp?: boolean } = {}): Promise<void> {
    this.show();
    const conversation = options.followUp ? followUpConversation(this.turns) : undefined;
    const turn: Turn = { id: this.turns.length + 1, question, state: "waiting", streamed: "", followUp: !!conversation };
    this.turns.push(turn);
    this.post(turn, true);
    const params: AskParams = { question };
    if (options.uri) {
      params.uri = options.uri;
    }
    if (conversation) {
      params.conversation = conversation;
    }
    try {
      const handle = ask(await this.rpc(), params, (e) => {
        if (e.kind === "text") {
          turn.state = "streaming";
          turn.streamed = e.soFar;
        } else if (e.message) {
          turn.status = e.message;
        }
        this.post(turn);
      });
      this.running.set(turn.id, handle.stop);
      const { answer } = await handle.result;
      turn.answer = answer;
      turn.state = finishedState(answer);
    } catch (e) {
      turn.state = "failed";
      turn.error = e instanceof Error ? e.message : String(e);
      this.log.error(`kebab/ask failed: ${turn.error}`);
    } finally {
      this.running.delete(turn.id);
    }
    this.post(turn);
  }

  /** An answer made elsewhere (Answer question on this line, the code action), shown like any other. */
  showAnswer(answer: Answer): void {
    this.show();
    const turn: Turn = { id: this.turns.length + 1, question: answer.question, state: finishedState(answer), streamed: "", answer };
    this.turns.push(turn);
    this.post(turn, true);
  }

  show(): void {
    if (this.panel) {
      this.panel.reveal(undefined, true);
      return;
    }
    const panel = vscode.window.createWebviewPanel("kebab.answers", "kebab", { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [] });
    panel.webview.html = page(panel.webview.cspSource, crypto.randomBytes(16).toString("base64"));
    panel.webview.onDidReceiveMessage((m: FromWebview) => this.receive(m).catch((e) => {
      void vscode.window.showErrorMessage(`kebab: ${e instanceof Error ? e.message : e}`);
    }), undefined, this.subscriptions);
    panel.onDidDispose(() => {
      this.panel = undefined;
      for (const stop of this.running.values()) {
        stop();
      }
    }, undefined, this.subscriptions);
    this.panel = panel;
  }

  dispose(): void {
    this.panel?.dispose();
    vscode.Disposable.from(...this.subscriptions).dispose();
  }

  private remember(editor: vscode.TextEditor | undefined): void {
    if (editor && editor.document.uri.scheme !== "output" && editor.document.languageId === "markdown") {
      this.lastNote = editor;
    }
  }

  /** Show `turn` in the webview; `reveal`: it just started, so the panel scrolls to it. */
  private post(turn: Turn, reveal = false): void {
    this.send(turnMessages(this.turns, turn, reveal));
  }

  private send(messages: ToWebview[]): void {
    for (const m of messages) {
      void this.panel?.webview.postMessage(m);
    }
  }

  private async receive(m: FromWebview): Promise<void> {
    switch (m.type) {
      case "ready":
        this.send(resetMessages(this.turns));
        return;
      case "open":
        return this.openCitation(m.href);
      case "insert":
        return this.insert(this.turns[m.id - 1]);
      case "copy": {
        const a = this.turns[m.id - 1]?.answer;
        if (a) {
          await vscode.env.clipboard.writeText(a.grounded ? a.markdown : a.answer);
          void vscode.window.setStatusBarMessage("kebab: answer copied", 3000);
        }
        return;
      }
      case "stop":
        this.running.get(m.id)?.();
        return;
      case "ask":
        return this.ask(m.question, { followUp: true });
    }
  }

  private async openCitation(href: string): Promise<void> {
    const cited = parseCitationHref(href);
    if (!cited) {
      return;
    }
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(cited.uri));
    const last = Math.min(cited.end, doc.lineCount) - 1;
    const range = new vscode.Range(Math.min(cited.start - 1, last), 0, last, doc.lineAt(last).text.length);
    const column = this.lastNote?.viewColumn ?? vscode.ViewColumn.One;
    const editor = await vscode.window.showTextDocument(doc, { viewColumn: column, selection: range });
    editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  /**
   * The answer under the cursor's line in the last note used: the server loads the stored answer
   * by its id, renders its footnotes for the note and applies the edit (workspace/applyEdit).
   */
  private async insert(turn: Turn | undefined): Promise<void> {
    const answer = turn?.answer;
    if (!answer?.grounded || typeof answer.answer_id !== "number") {
      return;
    }
    const editor = this.lastNote && vscode.window.visibleTextEditors.includes(this.lastNote)
      ? this.lastNote
      : vscode.window.visibleTextEditors.find((e) => e.document.languageId === "markdown");
    if (!editor) {
      void vscode.window.showWarningMessage("kebab: open a note and put the cursor where the answer should go, then Insert again.");
      return;
    }
    const doc = editor.document;
    const line = editor.selection.active.line;
    // answer ids are per workspace folder: the server looks the id up in the note's folder
    const folderOf = (uri: vscode.Uri) => vscode.workspace.getWorkspaceFolder(uri)?.uri.toString();
    const cited = answer.citations[0];
    if (doc.uri.scheme !== "file" || !folderOf(doc.uri) || (cited && folderOf(vscode.Uri.parse(cited.uri)) !== folderOf(doc.uri))) {
      void vscode.window.showWarningMessage("kebab: insert the answer into a note file in the workspace folder that answered it.");
      return;
    }
    // the server says why when it inserts nothing (window/showMessage)
    const { applied } = await insertAnswer(await this.rpc(), doc.uri.toString(), line, answer.answer_id);
    this.log.info(`kebab.insertAnswer #${answer.answer_id} ${vscode.workspace.asRelativePath(doc.uri)}:${line + 1}: ${applied}`);
    if (applied) {
      await vscode.window.showTextDocument(doc, { viewColumn: editor.viewColumn, preserveFocus: false });
    }
  }
}
