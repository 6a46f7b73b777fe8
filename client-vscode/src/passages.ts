/**
 * Passages in a quick pick: Kebab: Related passages (the section under the cursor's nearest
 * passages in other notes) and Kebab: Search notes (by meaning, as you type). Each item is a
 * heading path, its note and lines, and a clean excerpt; choosing one opens the note at the
 * passage (the button on an item: to the side), its lines highlighted for a moment.
 */
import * as vscode from "vscode";
import { CancellationTokenSource } from "vscode-languageclient/node";
import type { Rpc } from "./core/protocol";
import { SearchRequest } from "./core/protocol";
import { noRelated, passageItem, PassageItem, related, sectionAt } from "./core/related";

type Item = vscode.QuickPickItem & { passage?: PassageItem };

const BESIDE: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("split-horizontal"), tooltip: "Open to the side" };
const SAME_NOTE_OFF: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("files"), tooltip: "Also this note's other sections" };
const SAME_NOTE_ON: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("file"), tooltip: "Only other notes" };

/** Kebab: Related passages, for the cursor's section of the active Markdown note. */
export async function relatedPassages(rpc: () => Promise<Pick<Rpc, "sendRequest">>): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const document = editor?.document;
  if (!editor || !document || document.languageId !== "markdown") {
    void vscode.window.showWarningMessage("kebab: put the cursor in a section of a Markdown note to see its related passages.");
    return;
  }
  if (document.uri.scheme !== "file" || !vscode.workspace.getWorkspaceFolder(document.uri)) {
    void vscode.window.showWarningMessage("kebab: related passages are found for notes inside the workspace folder; this one is not indexed.");
    return;
  }
  const position = editor.selection.active;
  const section = sectionAt(document.getText(), position.line);
  const name = section.length ? section.join(" › ") : vscode.workspace.asRelativePath(document.uri, false);
  let request: CancellationTokenSource | undefined;
  const pick = picker(`Related to ${name}`, "Filter the related passages by heading, note or text", () => request?.cancel());
  pick.matchOnDescription = true;
  pick.matchOnDetail = true;
  let sameNote = false;
  const load = async () => {
    request?.cancel();
    const cancel = request = new CancellationTokenSource();
    pick.busy = true;
    pick.buttons = [sameNote ? SAME_NOTE_ON : SAME_NOTE_OFF];
    try {
      const c = await rpc();
      const items = await related({ sendRequest: (type, params) => c.sendRequest(type, params, cancel.token) },
        document.uri.toString(), position, { sameNote });
      if (cancel.token.isCancellationRequested) {
        return;
      }
      pick.items = items.length ? items.map(toItem) : [{ ...noRelated(section, sameNote), alwaysShow: true, iconPath: new vscode.ThemeIcon("info") }];
    } catch (e) {
      if (!cancel.token.isCancellationRequested) {
        pick.hide();
        void vscode.window.showErrorMessage(`kebab: related passages: ${e instanceof Error ? e.message : e}`);
      }
    } finally {
      if (request === cancel) {
        pick.busy = false;
      }
    }
  };
  pick.onDidTriggerButton(() => {
    sameNote = !sameNote;
    void load();
  });
  pick.show();
  await load();
}

/** Kebab: Search notes — by meaning, as you type: kebab/search's hybrid search, best first. */
export function searchNotes(rpc: () => Promise<Pick<Rpc, "sendRequest">>, initial = ""): void {
  let request: CancellationTokenSource | undefined;
  let timer: NodeJS.Timeout | undefined;
  const pick = picker("Kebab: Search notes", "Search the notes by meaning: what you remember, in your words", () => {
    clearTimeout(timer);
    request?.cancel();
  });
  pick.value = initial;
  const load = async (query: string) => {
    request?.cancel();
    const cancel = request = new CancellationTokenSource();
    if (!query.trim()) {
      pick.items = [];
      pick.busy = false;
      return;
    }
    pick.busy = true;
    try {
      const c = await rpc();
      const { hits } = await c.sendRequest(SearchRequest, { query, k: 20 }, cancel.token);
      if (cancel.token.isCancellationRequested) {
        return;
      }
      // the server ranked them by meaning: shown whether or not the typed letters match, in its order
      pick.items = hits.length
        ? hits.map((h) => ({ ...toItem(passageItem(h)), alwaysShow: true }))
        : [{ label: "No passages found", detail: `Nothing in the notes matches “${query.trim()}”.`, alwaysShow: true, iconPath: new vscode.ThemeIcon("info") }];
    } catch (e) {
      if (!cancel.token.isCancellationRequested) {
        pick.items = [{ label: "Search failed", detail: e instanceof Error ? e.message : String(e), alwaysShow: true, iconPath: new vscode.ThemeIcon("error") }];
      }
    } finally {
      if (request === cancel) {
        pick.busy = false;
      }
    }
  };
  pick.onDidChangeValue((value) => {
    clearTimeout(timer);
    timer = setTimeout(() => void load(value), 150);
  });
  pick.show();
  if (initial.trim()) {
    void load(initial);
  }
}

function picker(title: string, placeholder: string, onHide: () => void): vscode.QuickPick<Item> {
  const pick = vscode.window.createQuickPick<Item>();
  pick.title = title;
  pick.placeholder = placeholder;
  pick.onDidAccept(() => {
    const [item] = pick.selectedItems;
    if (item?.passage || !pick.busy) {
      pick.hide();
    }
    if (item?.passage) {
      void openPassage(item.passage, false);
    }
  });
  pick.onDidTriggerItemButton((e) => {
    if (e.item.passage) {
      pick.hide();
      void openPassage(e.item.passage, true);
    }
  });
  pick.onDidHide(() => {
    onHide();
    pick.dispose();
  });
  return pick;
}

function toItem(passage: PassageItem): Item {
  return { label: passage.label, description: passage.description, detail: passage.detail, buttons: [BESIDE], passage };
}

const highlight = vscode.window.createTextEditorDecorationType({
  isWholeLine: true,
  backgroundColor: new vscode.ThemeColor("editor.rangeHighlightBackground"),
});

/** Opens the note with the cursor on the passage's first line, its lines at the top and highlighted until the cursor moves. */
export async function openPassage(passage: PassageItem, beside: boolean): Promise<vscode.TextEditor> {
  const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(passage.uri));
  const start = Math.min(passage.start, document.lineCount - 1);
  const end = Math.min(Math.max(passage.end, start), document.lineCount - 1);
  const at = new vscode.Range(start, 0, start, 0);
  const editor = await vscode.window.showTextDocument(document, {
    selection: at, viewColumn: beside ? vscode.ViewColumn.Beside : undefined, preview: !beside,
  });
  const lines = new vscode.Range(start, 0, end, document.lineAt(end).text.length);
  editor.revealRange(lines, vscode.TextEditorRevealType.AtTop);
  editor.setDecorations(highlight, [lines]);
  const clear = () => {
    editor.setDecorations(highlight, []);
    subscription.dispose();
    clearTimeout(timer);
  };
  const subscription = vscode.window.onDidChangeTextEditorSelection((e) => {
    if (e.textEditor === editor && !e.selections[0].isEqual(at)) {
      clear();
    }
  });
  const timer = setTimeout(clear, 4000);
  return editor;
}
