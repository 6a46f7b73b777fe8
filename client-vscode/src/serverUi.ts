/**
 * What the server would put on screen by itself, routed through the extension's own UI:
 *
 * - progress the server creates (`window/workDoneProgress/create`: indexing, an answer written
 *   into a note) is not shown as a second status bar item beside kebab's own; its begin and end
 *   only make that item look again (`onWork`);
 * - `window/showMessage` goes through HeldMessages, so a refusal the panel shows is not also a toast.
 *
 * Registered after vscode-languageclient's built-in features, so its handlers replace theirs.
 */
import * as vscode from "vscode";
import {
  Disposable,
  FeatureState,
  LanguageClient,
  MessageType,
  ShowMessageNotification,
  StaticFeature,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressCreateRequest,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from "vscode-languageclient/node";
import { HeldMessages, Message } from "./core/heldMessages";

export class ServerUi implements StaticFeature {
  readonly messages = new HeldMessages(showMessage);
  private readonly progress = new Map<string | number, Disposable>();

  constructor(private readonly client: LanguageClient, private readonly onWork: () => void) {}

  fillClientCapabilities(): void {
    // window.workDoneProgress stays as the built-in ProgressFeature announced it
  }

  getState(): FeatureState {
    return { kind: "static" };
  }

  initialize(): void {
    this.client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
      this.progress.get(token)?.dispose();
      this.progress.set(token, this.client.onProgress(WorkDoneProgress.type, token,
        (value: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
          if (value.kind === "end") {
            this.progress.get(token)?.dispose();
            this.progress.delete(token);
          }
          if (value.kind !== "report") {
            this.onWork();
          }
        }));
      return null;
    });
    this.client.onNotification(ShowMessageNotification.type, (m) => this.messages.received(m));
  }

  clear(): void {
    this.progress.forEach((d) => d.dispose());
    this.progress.clear();
  }
}

function showMessage(m: Message): void {
  if (m.type === MessageType.Error) {
    void vscode.window.showErrorMessage(m.message);
  } else if (m.type === MessageType.Warning) {
    void vscode.window.showWarningMessage(m.message);
  } else {
    void vscode.window.showInformationMessage(m.message);
  }
}
