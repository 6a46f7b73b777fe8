/**
 * The answer panel without VS Code: a `vscode` module with just what panel.ts uses, whose webview
 * runs the real page script (core/panelView's `page`) over a small DOM. The DOM lays turns out as
 * boxes of one height under each other and scrolls a window over them, so a test can say which
 * turns a person sees, and whether the panel is shown at all.
 */
import Module from "node:module";

const TURN_HEIGHT = 200;
const VIEW_HEIGHT = 500;

type Listener = (...args: any[]) => unknown;

class Element {
  id = "";
  className = "";
  hidden = false;
  disabled = false;
  title = "";
  value = "";
  placeholder = "";
  lang = "";
  innerHTML = "";
  onclick: Listener | undefined;
  children: Element[] = [];
  private text = "";
  private readonly listeners = new Map<string, Listener[]>();

  constructor(readonly tagName: string, private readonly page: Page) {}

  get textContent(): string {
    return this.text;
  }

  set textContent(value: string) {
    this.text = value;
    this.children = [];
  }

  append(...elements: Element[]): void {
    this.children.push(...elements);
  }

  setAttribute(): void {}

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  querySelector(selector: string): Element | undefined {
    const cls = selector.replace(/^\./, "");
    for (const child of this.children) {
      const found = child.className.split(" ").includes(cls) ? child : child.querySelector(selector);
      if (found) {
        return found;
      }
    }
    return undefined;
  }

  getClientRects(): object[] {
    return this.page.laidOut ? [{ top: this.page.top(this) - this.page.scrollY }] : [];
  }

  scrollIntoView(): void {
    this.page.scrollTo(this.page.top(this)); // its top at the top of the window, as far as it goes
  }
}

/** The webview's document and window, running the page's own script. */
export class Page {
  scrollY = 0;
  laidOut = true; // false while the panel is hidden: nothing has a size, nothing scrolls
  readonly turns: Element;
  private readonly elements = new Map<string, Element>();
  private readonly windowListeners = new Map<string, Listener[]>();

  constructor(html: string, post: (m: unknown) => void) {
    const script = /<script nonce="[^"]*">([^]*)<\/script>/.exec(html)?.[1];
    if (!script) {
      throw new Error("the page has no script");
    }
    for (const id of ["turns", "empty", "follow", "question", "ask"]) {
      const e = new Element(id === "turns" ? "main" : "p", this);
      e.id = id;
      this.elements.set(id, e);
    }
    this.turns = this.elements.get("turns")!;
    const page = this;
    const document = {
      body: { get scrollHeight() { return page.height(); } },
      getElementById: (id: string) => this.elements.get(id) ?? this.turns.children.find((t) => t.id === id) ?? null,
      createElement: (tag: string) => new Element(tag, this),
      addEventListener: () => undefined,
    };
    const window = {
      innerHeight: VIEW_HEIGHT,
      get scrollY() { return page.scrollY; },
      scrollTo: (_x: number, y: number) => this.scrollTo(y),
      addEventListener: (type: string, l: Listener) => {
        this.windowListeners.set(type, [...(this.windowListeners.get(type) ?? []), l]);
      },
    };
    new Function("acquireVsCodeApi", "window", "document", script)(() => ({ postMessage: post }), window, document);
  }

  /** A message from the extension (webview.postMessage). */
  receive(data: unknown): void {
    this.windowListeners.get("message")?.forEach((l) => l({ data }));
  }

  /** The panel is hidden (no layout) or shown again (laid out: the window is resized). */
  setLaidOut(laidOut: boolean): void {
    this.laidOut = laidOut;
    if (laidOut) {
      this.windowListeners.get("resize")?.forEach((l) => l({}));
    }
  }

  /** The ids of the turns a person sees in the panel now. */
  visibleTurns(): number[] {
    if (!this.laidOut) {
      return [];
    }
    return this.turns.children
      .filter((t) => this.top(t) < this.scrollY + VIEW_HEIGHT && this.top(t) + TURN_HEIGHT > this.scrollY)
      .map((t) => Number(t.id.replace("turn-", "")));
  }

  /** The element with this id (the question box, its button). */
  byId(id: string): Element | undefined {
    return this.elements.get(id);
  }

  /** The text of turn `id`'s question and answer. */
  turnText(id: number): string {
    const box = this.turns.children.find((t) => t.id === `turn-${id}`);
    return box ? `${box.querySelector(".question")?.textContent} ${box.querySelector(".answer")?.innerHTML}` : "";
  }

  scrollTo(y: number): void {
    if (this.laidOut) {
      this.scrollY = Math.max(0, Math.min(y, this.height() - VIEW_HEIGHT));
    }
  }

  top(e: Element): number {
    const i = this.turns.children.indexOf(e);
    return i < 0 ? 0 : i * TURN_HEIGHT;
  }

  height(): number {
    return this.laidOut ? this.turns.children.length * TURN_HEIGHT + 64 : 0;
  }
}

/** A webview panel as panel.ts sees it; its page is made when its html is set. */
export class FakeWebviewPanel {
  page: Page | undefined;
  visible = true;
  reveals = 0;
  private fromPage: Listener[] = [];
  private disposed: Listener[] = [];
  readonly webview = {
    cspSource: "vscode-resource:",
    postMessage: (m: unknown) => {
      setImmediate(() => this.page?.receive(m)); // delivered later, as VS Code does
      return Promise.resolve(true);
    },
    onDidReceiveMessage: (l: Listener) => {
      this.fromPage.push(l);
      return { dispose() {} };
    },
  };

  constructor() {
    let html = "";
    Object.defineProperty(this.webview, "html", {
      get: () => html,
      set: (value: string) => {
        html = value;
        this.page = new Page(value, (m) => setImmediate(() => this.fromPage.forEach((l) => l(m))));
      },
    });
  }

  /** Shown again: VS Code lays the webview out a moment after `reveal` returns. */
  reveal(): void {
    this.reveals += 1;
    if (!this.visible) {
      this.visible = true;
      setTimeout(() => this.page?.setLaidOut(true), 5);
    }
  }

  /** Another tab in its group is chosen: the panel is hidden, its webview kept. */
  hide(): void {
    this.visible = false;
    this.page?.setLaidOut(false);
  }

  onDidDispose(l: Listener): { dispose(): void } {
    this.disposed.push(l);
    return { dispose() {} };
  }

  dispose(): void {
    this.disposed.forEach((l) => l());
  }
}

export const panels: FakeWebviewPanel[] = [];

const vscode = {
  ViewColumn: { One: 1, Beside: -2 },
  Disposable: { from: (...items: { dispose(): void }[]) => ({ dispose: () => items.forEach((d) => d.dispose()) }) },
  window: {
    activeTextEditor: undefined,
    visibleTextEditors: [],
    onDidChangeActiveTextEditor: () => ({ dispose() {} }),
    createWebviewPanel: () => {
      const panel = new FakeWebviewPanel();
      panels.push(panel);
      return panel;
    },
    showErrorMessage: (m: string) => { throw new Error(`unexpected error message: ${m}`); },
  },
};

/** Make `require("vscode")` (panel.ts's import) give the fake. */
export function useFakeVscode(): void {
  const mod = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = mod._load;
  mod._load = function (request: string, ...rest: unknown[]) {
    return request === "vscode" ? vscode : load.call(this, request, ...rest);
  };
}

/** Until the messages posted so far (and what they set off) have been delivered. */
export function settle(ms = 20): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
