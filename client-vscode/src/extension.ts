/**
 * The VS Code side of kebab: starts `kebab serve` with vscode-languageclient, passes the settings,
 * and adds the commands, the answer panel and the one status bar item. The protocol work lives in
 * ./core (no `vscode` import there), which the tests drive against the real server.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  State,
} from "vscode-languageclient/node";
import { AnswerPanel } from "./panel";
import { relatedPassages, searchNotes } from "./passages";
import { Answer, INSERT_ANSWER, LINK_RELATED, Rpc, Status, StatusRequest } from "./core/protocol";
import { expandPath, findServer } from "./core/serverCommand";
import { serverOptions, ServerOptions } from "./core/settings";
import { statusBar, statusText } from "./core/statusView";
import { ServerUi } from "./serverUi";

let client: LanguageClient | undefined;
let ui: ServerUi | undefined;
/** Set in activate: what the server's UI hooks call. */
let poller: StatusPoller | undefined;
let panel: AnswerPanel | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("kebab", { log: true });
  const item = vscode.window.createStatusBarItem("kebab.status", vscode.StatusBarAlignment.Right, 100);
  item.name = "kebab";
  item.command = "kebab.showStatus";
  item.text = "$(sync~spin) kebab: starting";
  item.show();
  const statusView = new StatusView();
  const statusPoller = new StatusPoller(item, statusView);
  poller = statusPoller;
  const rpc = async (): Promise<Rpc> => {
    const c = await running(log);
    return {
      sendRequest: (type, params, token) => c.sendRequest(type, params, token),
      sendNotification: (type, params) => c.sendNotification(type, params),
      onProgress: (type, token, handler) => c.onProgress(type, token, handler),
    };
  };
  const answers = new AnswerPanel(rpc, log);
  panel = answers;

  context.subscriptions.push(log, item, answers, statusPoller, statusView,
    vscode.commands.registerCommand("kebab.askQuestion", async (question?: string) => {
      const editor = vscode.window.activeTextEditor;
      const selected = editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection).trim() : "";
      const asked = typeof question === "string" && question.trim() ? question : await vscode.window.showInputBox({
        title: "Kebab: Ask", prompt: "Ask your notes a question", placeHolder: "What time does the nightly backup run?",
        value: selected, ignoreFocusOut: true,
      });
      if (asked?.trim()) {
        const uri = editor?.document.uri;
        const inWorkspace = uri?.scheme === "file" && vscode.workspace.getWorkspaceFolder(uri) !== undefined;
        await answers.ask(asked.trim(), { uri: inWorkspace ? uri.toString() : undefined });
      }
    }),
    vscode.commands.registerCommand("kebab.answerLine", () => answerLine(log)),
    vscode.commands.registerCommand("kebab.relatedPassages", () => relatedPassages(rpc)),
    vscode.commands.registerCommand("kebab.searchNotes", (query?: string) => {
      const editor = vscode.window.activeTextEditor;
      const selected = editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection).trim() : "";
      searchNotes(rpc, typeof query === "string" ? query : selected.split("\n")[0]);
    }),
    vscode.commands.registerCommand("kebab.reindexNotes", async () => {
      const c = await running(log);
      await c.sendRequest(ExecuteCommandRequest.type, { command: "kebab.reindex", arguments: [] });
      statusPoller.soon();
    }),
    // in the bottom panel's output view, not an editor column beside the note and the answers
    vscode.commands.registerCommand("kebab.showStatus", async () => {
      const c = await running(log);
      statusView.update(await c.sendRequest(StatusRequest, {}));
      statusView.show();
    }),
    vscode.commands.registerCommand("kebab.restartServer", async () => {
      await stop();
      await running(log);
      statusPoller.soon();
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration("kebab.serverPath")) {
        const choice = await vscode.window.showInformationMessage("kebab.serverPath changed: restart the kebab server?", "Restart");
        if (choice) {
          await vscode.commands.executeCommand("kebab.restartServer");
        }
      } else if (e.affectsConfiguration("kebab") && client?.state === State.Running) {
        // the server pulls the new values with workspace/configuration
        await client.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
        statusPoller.soon();
      }
    }),
  );

  try {
    await running(log);
    statusPoller.soon();
  } catch (e) {
    item.text = "$(error) kebab";
    item.tooltip = e instanceof Error ? e.message : String(e);
  }
}

export async function deactivate(): Promise<void> {
  await stop();
}

/** The running client: started on first use, awaited while it (re)starts. */
let starting: Promise<LanguageClient> | undefined;
async function running(log: vscode.LogOutputChannel): Promise<LanguageClient> {
  const c = client;
  if (c?.state === State.Running) {
    return c;
  }
  if (c?.state === State.Starting && !starting) { // the client restarts a crashed server itself
    await new Promise<void>((resolve, reject) => {
      const sub = c.onDidChangeState((e) => {
        if (e.newState !== State.Starting) {
          sub.dispose();
          return e.newState === State.Running ? resolve() : reject(new Error("the kebab server stopped"));
        }
      });
    });
    return c;
  }
  starting ??= start(log).finally(() => { starting = undefined; });
  return starting;
}

async function start(log: vscode.LogOutputChannel): Promise<LanguageClient> {
  await stop(); // a client that gave up restarting
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
  const found = findServer({ setting: vscode.workspace.getConfiguration("kebab").get<string>("serverPath"), folders });
  if ("missing" in found) {
    void vscode.window.showErrorMessage(`kebab: ${found.missing}`, "Open Settings").then((c) => {
      if (c) {
        void vscode.commands.executeCommand("workbench.action.openSettings", "kebab.serverPath");
      }
    });
    throw new Error(found.missing);
  }
  log.info(`starting ${found.command} ${found.args.join(" ")} (from ${found.source})`);
  const options: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", language: "markdown" }],
    initializationOptions: settingsFor(undefined),
    outputChannel: log,
    markdown: { isTrusted: false, supportHtml: false },
    middleware: {
      // the code actions run their commands through here: "Answer with kebab" kebab.insertAnswer,
      // "Link related notes" kebab.linkRelated (the status bar item says so while the server looks)
      executeCommand: (command, args, next) => {
        if (command === INSERT_ANSWER) {
          return answerInNote(() => Promise.resolve(next(command, args)));
        }
        if (command === LINK_RELATED && poller) {
          return poller.working("linking", () => Promise.resolve(next(command, args)));
        }
        return next(command, args);
      },
      workspace: {
        // the server asks for section `kebab` per folder: answer with its own config keys
        configuration: (params, token, next) => {
          if (params.items.every((i) => i.section === "kebab")) {
            return params.items.map((i) => settingsFor(i.scopeUri ? vscode.Uri.parse(i.scopeUri) : undefined));
          }
          return next(params, token);
        },
      },
    },
  };
  const c = new LanguageClient("kebab", "kebab", {
    command: found.command, args: found.args, options: { cwd: folders[0], env: process.env },
  }, options);
  ui = new ServerUi(c, () => poller?.soon());
  c.registerFeature(ui); // after the built-in features: its handlers replace theirs
  client = c;
  await c.start();
  return c;
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  if (c && c.state !== State.Stopped) {
    await c.stop(5000).catch(() => undefined);
  }
}

/** The kebab settings the user set (folder, then workspace, then user), as server config. */
function settingsFor(scope: vscode.Uri | undefined): ServerOptions {
  const config = vscode.workspace.getConfiguration("kebab", scope);
  const folder = scope ? vscode.workspace.getWorkspaceFolder(scope)?.uri.fsPath : vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return serverOptions((key) => {
    const i = config.inspect(key);
    return i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
  }, (p) => expandPath(p, folder));
}

/** Kebab: Answer question on this line — the server answers and writes it under the line with footnotes. */
async function answerLine(log: vscode.LogOutputChannel): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== "markdown") {
    void vscode.window.showWarningMessage("kebab: put the cursor on a question in a Markdown note.");
    return;
  }
  const c = await running(log);
  const { document, selection } = editor;
  const args: unknown[] = [document.uri.toString()];
  if (selection.isEmpty) {
    args.push(selection.active.line);
  } else {
    const end = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line - 1 : selection.end.line;
    args.push(end, document.getText(selection).trim());
  }
  if (document.isDirty) {
    await document.save();
  }
  try {
    // the server answers and applies the edit itself; a refusal goes to the panel
    const result = await answerInNote(() => c.sendRequest(ExecuteCommandRequest.type, { command: INSERT_ANSWER, arguments: args }));
    log.info(`${INSERT_ANSWER} ${path.basename(document.uri.fsPath)}:${(args[1] as number) + 1}: ${JSON.stringify((result as { applied?: boolean })?.applied)}`);
  } catch (e) {
    void vscode.window.showErrorMessage(`kebab: ${e instanceof Error ? e.message : e}`);
  }
}

/**
 * kebab.insertAnswer, whichever door it came through (the command, the code action): the status
 * bar item says kebab is answering; a refusal is shown in the panel like any other answer, with
 * its nearest passages, instead of the server's toast.
 */
async function answerInNote<T>(run: () => Promise<T>): Promise<T> {
  const shown = (result: T): boolean => {
    const answer = (result as { answer?: Answer } | undefined)?.answer;
    if (!answer || answer.grounded || !panel) {
      return false;
    }
    panel.showAnswer(answer);
    return true;
  };
  const work = () => ui ? ui.messages.while(run, shown) : run().then((r) => { shown(r); return r; });
  return poller ? poller.working("answering", work) : work();
}

/**
 * The status bar item, kept current by polling `kebab/status`: often while indexing or answering,
 * rarely after. It is kebab's only item: server-made progress is not shown beside it (ServerUi).
 */
class StatusPoller implements vscode.Disposable {
  private timer: NodeJS.Timeout | undefined;
  private disposed = false;
  private busy: string[] = [];
  private last: Status | undefined;

  constructor(private readonly item: vscode.StatusBarItem, private readonly view: StatusView) {}

  soon(): void {
    this.schedule(200);
  }

  /** `work` with the item saying what kebab is doing (unless the index is building, which it says instead). */
  async working<T>(what: string, work: () => Promise<T>): Promise<T> {
    this.busy.push(what);
    this.render();
    try {
      return await work();
    } finally {
      this.busy.splice(this.busy.indexOf(what), 1);
      this.render();
      this.soon();
    }
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (!this.disposed) {
      this.timer = setTimeout(() => void this.poll(), ms);
    }
  }

  private render(): boolean {
    if (!this.last) {
      if (this.busy.length) {
        this.item.text = `$(sync~spin) kebab: ${this.busy[0]}`;
      }
      return true;
    }
    const view = statusBar(this.last, this.busy[0]);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    return view.busy;
  }

  private async poll(): Promise<void> {
    if (client?.state !== State.Running) {
      this.last = undefined;
      this.item.text = "$(circle-slash) kebab";
      this.item.tooltip = "kebab: the server is not running (Kebab: Restart server)";
      return this.schedule(5000);
    }
    try {
      const status = await client.sendRequest(StatusRequest, {});
      this.last = status;
      this.view.update(status);
      this.schedule(this.render() ? 500 : 10_000);
    } catch {
      this.schedule(5000);
    }
  }
}

/** Show status: the "kebab status" output view, kept current while it is open. */
class StatusView implements vscode.Disposable {
  private readonly channel = vscode.window.createOutputChannel("kebab status");
  private text = "";

  update(status: Status): void {
    const text = statusText(status);
    if (text !== this.text) {
      this.text = text;
      this.channel.replace(text);
    }
  }

  show(): void {
    this.channel.show(true);
  }

  dispose(): void {
    this.channel.dispose();
  }
}
