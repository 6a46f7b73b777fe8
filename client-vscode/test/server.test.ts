/**
 * The protocol modules against the real `kebab serve`, over stdio, on a private copy of
 * fixtures/workspace with its index in tmp: what the extension does through vscode-languageclient.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import {
  ApplyWorkspaceEditRequest,
  CodeAction,
  CodeActionRequest,
  ConfigurationRequest,
  createMessageConnection,
  DidChangeConfigurationNotification,
  DidChangeTextDocumentNotification,
  DidCloseTextDocumentNotification,
  DidChangeWatchedFilesNotification,
  DidOpenTextDocumentNotification,
  ErrorCodes,
  ExecuteCommandRequest,
  FileChangeType,
  HoverRequest,
  InitializeRequest,
  InitializedNotification,
  MessageConnection,
  ResponseError,
  ShowMessageNotification,
  StreamMessageReader,
  StreamMessageWriter,
  TextEdit,
  SymbolInformation,
  WorkDoneProgressCreateRequest,
  WorkspaceSymbolRequest,
} from "vscode-languageserver-protocol/node";
import { answerMeta, citationLabels, panelMarkdown } from "../src/core/answer";
import { followUpConversation } from "../src/core/panelView";
import { ask, AskRequest, insertAnswer, Linked, LINK_RELATED, RelatedRequest, SearchRequest, Status, StatusRequest, StreamEvent } from "../src/core/protocol";
import { noRelated, passageItem, related, sectionAt } from "../src/core/related";
import { findServer } from "../src/core/serverCommand";
import { serverOptions } from "../src/core/settings";
import { ScriptedModel } from "./scriptedModel";

const REPO = path.resolve(__dirname, "..", "..");
const BACKUP_Q = "What time does the nightly backup run, and how long are daily snapshots kept?";

describe("kebab serve", () => {
  let tmp: string;
  let root: string;
  let server: ChildProcess;
  let rpc: MessageConnection;
  let stderr = "";
  const messages: string[] = [];
  const created: string[] = [];
  let settings: Record<string, unknown> = {};
  const open = new Map<string, { version: number; text: string }>(); // the "editor's" buffers

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kebab-vscode-"));
    root = path.join(tmp, "workspace");
    fs.cpSync(path.join(REPO, "fixtures", "workspace"), root, { recursive: true });
    const found = findServer({ setting: process.env.KEBAB_SERVER, folders: [REPO] });
    assert.ok("command" in found, "no kebab server: run `make test` at the repository root (it creates .venv), or set KEBAB_SERVER");
    server = spawn(found.command, found.args, {
      cwd: root, stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, FAKE_LLM_KEY: "sk-not-a-real-key" },
    });
    server.stderr!.on("data", (d: Buffer) => { stderr += d.toString(); });
    rpc = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
    // what the extension's settings turn into, sent both ways the server reads them
    settings = { indexDir: path.join(tmp, "index"), "search.k": 6 };
    const options = serverOptions((s) => settings[s]);
    rpc.onRequest(WorkDoneProgressCreateRequest.type, (p) => { created.push(String(p.token)); return null; });
    rpc.onRequest(ConfigurationRequest.type, (p) => p.items.map(() => serverOptions((s) => settings[s])));
    rpc.onRequest("client/registerCapability", () => null);
    rpc.onNotification(ShowMessageNotification.type, (p) => { messages.push(p.message); });
    // as VS Code does: apply a versioned edit to the buffer it was computed on, then sync the buffer
    rpc.onRequest(ApplyWorkspaceEditRequest.type, async ({ edit }) => {
      for (const change of edit.documentChanges ?? []) {
        const doc = "textDocument" in change ? open.get(change.textDocument.uri) : undefined;
        if (!doc || !("textDocument" in change) || change.textDocument.version !== doc.version) {
          return { applied: false, failureReason: "not an edit of an open buffer's current version" };
        }
        doc.text = applyTextEdits(doc.text, change.edits);
        doc.version += 1;
        await rpc.sendNotification(DidChangeTextDocumentNotification.type, {
          textDocument: { uri: change.textDocument.uri, version: doc.version }, contentChanges: [{ text: doc.text }],
        });
      }
      return { applied: !!edit.documentChanges?.length };
    });
    rpc.listen();
    const init = await rpc.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: pathToFileURL(root).href,
      workspaceFolders: [{ uri: pathToFileURL(root).href, name: "workspace" }],
      capabilities: {
        window: { workDoneProgress: true },
        workspace: { configuration: true, workspaceFolders: true, applyEdit: true, workspaceEdit: { documentChanges: true } },
        general: { positionEncodings: ["utf-16"] },
        textDocument: {
          hover: { contentFormat: ["markdown", "plaintext"] },
          codeAction: { codeActionLiteralSupport: { codeActionKind: { valueSet: ["quickfix", "refactor", "refactor.rewrite"] } } },
        },
      },
      initializationOptions: options,
    });
    assert.ok(init.capabilities);
    await rpc.sendNotification(InitializedNotification.type, {});
    await ready(rpc);
  });

  after(async () => {
    if (rpc) {
      await Promise.race([rpc.sendRequest("shutdown").catch(() => {}), sleep(3000)]);
      await rpc.sendNotification("exit").catch(() => {});
      rpc.dispose();
    }
    if (server && server.exitCode === null) {
      await Promise.race([new Promise((r) => server.once("exit", r)), sleep(3000)]);
      server.kill();
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("reports its index state and counts, with the index where the settings put it", async () => {
    const status = await rpc.sendRequest(StatusRequest, {});
    assert.equal(status.state, "ready");
    assert.equal(status.files, 16);
    assert.ok(status.chunks > 16);
    const folder = status.folders[0];
    assert.equal(folder.index_dir, path.join(tmp, "index"), stderr);
    assert.ok(folder.embedding?.id);
    assert.equal(folder.llm?.backend, "extractive");
    assert.deepEqual(messages.filter((m) => m.includes("setting")), []);
  });

  it("searches", async () => {
    const { hits } = await rpc.sendRequest(SearchRequest, { query: "restic retention policy", k: 3 });
    assert.ok(hits.length > 0 && hits.length <= 3);
    assert.equal(hits[0].path, "ops/backup.md");
    assert.match(hits[0].uri, /^file:\/\/.*ops\/backup\.md$/);
    assert.ok(hits[0].range.start.line >= 0);
  });

  it("finds the passages in other notes related to the section under the cursor, shaped for the picker", async () => {
    const file = path.join(root, "ops", "backup.md");
    const uri = pathToFileURL(file).href;
    const text = fs.readFileSync(file, "utf8");
    const line = text.split("\n").findIndex((l) => l.startsWith("The backup job runs")); // in "## Schedule"
    assert.deepEqual(sectionAt(text, line), ["Home server backups", "Schedule"]);

    const items = await related(rpc, uri, { line, character: 3 });
    assert.ok(items.length > 0 && items.length <= 10, JSON.stringify(items));
    assert.equal(items[0].label, "Postgres on nas01 › Dumps", JSON.stringify(items.map((i) => i.label)));
    assert.equal(items[0].path, "ops/postgres.md");
    assert.deepEqual(items.filter((i) => i.path === "ops/backup.md"), []); // never its own note
    // where it opens: the passage's lines in the note
    const postgres = fs.readFileSync(path.join(root, "ops", "postgres.md"), "utf8").split("\n");
    assert.equal(postgres[items[0].start], "## Dumps");
    assert.match(items[0].uri, /^file:\/\/.*\/ops\/postgres\.md$/);
    assert.ok(items[0].end > items[0].start && items[0].end < postgres.length);
    // the backup note links [[postgres]]: the passage is marked as a linked note's
    assert.equal(items[0].description, `ops/postgres.md · L${items[0].start + 1}\u2060–\u2060L${items[0].end + 1} · linked`);
    // the excerpt reads as text: no heading it starts with, no fences, no code marks
    assert.match(items[0].detail, /^A cron job runs pg_dumpall every day at 02:00/);
    assert.doesNotMatch(items.map((i) => i.detail).join("\n"), /```|^#+ |`/m);
    for (let i = 1; i < items.length; i++) {
      assert.ok(items[i - 1].score >= items[i].score, "best first");
    }

    // same_note: the note's other sections may come too, never the section itself
    const mine = await related(rpc, uri, { line, character: 0 }, { k: 50, sameNote: true });
    assert.ok(mine.some((i) => i.path === "ops/backup.md"), JSON.stringify(mine.map((i) => i.label)));
    assert.ok(!mine.some((i) => i.path === "ops/backup.md" && i.start <= line && line <= i.end), "the section itself");
    assert.equal(noRelated(["Home server backups", "Schedule"], false).label, "No related passages in other notes");

    // a uri that is no note: InvalidParams, not a crash
    await assert.rejects(rpc.sendRequest(RelatedRequest, { uri: pathToFileURL(root).href, position: { line: 0, character: 0 } }),
      (e: unknown) => e instanceof ResponseError && e.code === ErrorCodes.InvalidParams);
  });

  it("answers workspace/symbol by meaning: heading path, note, the passage's lines; nothing for an empty query", async () => {
    const symbols = await rpc.sendRequest(WorkspaceSymbolRequest.type, { query: "nightly backup" }) as SymbolInformation[];
    assert.ok(symbols.length > 0);
    const schedule = symbols.find((s) => s.name === "Home server backups › Schedule");
    assert.ok(schedule, JSON.stringify(symbols.map((s) => s.name)));
    assert.equal(schedule.containerName, "ops/backup.md");
    assert.match(schedule.location.uri, /ops\/backup\.md$/);
    const lines = fs.readFileSync(path.join(root, "ops", "backup.md"), "utf8").split("\n");
    assert.equal(lines[schedule.location.range.start.line], "## Schedule");
    assert.deepEqual(await rpc.sendRequest(WorkspaceSymbolRequest.type, { query: "" }), []);
    // VS Code's Ctrl+T sends the first word of "backup schedule", and keeps what fuzzy-matches all of it
    const first = await rpc.sendRequest(WorkspaceSymbolRequest.type, { query: "backup" }) as SymbolInformation[];
    assert.ok(first.some((s) => s.name === "Home server backups › Schedule"), JSON.stringify(first.map((s) => s.name)));
    // VS Code's Ctrl+T keeps only names that fuzzy-match the words typed; Kebab: Search notes
    // shows kebab/search's passages for the same words, as they came
    const { hits } = await rpc.sendRequest(SearchRequest, { query: "nightly backup", k: 20 });
    const items = hits.map(passageItem);
    assert.ok(items.some((i) => i.label === "Home server backups › Schedule" && i.description.startsWith("ops/backup.md · L")),
      JSON.stringify(items.map((i) => i.label)));
  });

  it("streams an answer: begin, reports in order, end; the reports concatenate to the answer", async () => {
    const events: StreamEvent[] = [];
    const { result } = ask(rpc, { question: BACKUP_Q }, (e) => events.push(e));
    const asked = await result;
    const a = asked.answer;
    assert.equal(a.schema, "answer.v1");
    assert.equal(a.grounded, true, a.answer);
    assert.ok(asked.reports >= 1);
    assert.equal(asked.streamed, a.answer);
    const kinds = events.map((e) => e.kind);
    assert.equal(kinds[0], "begin");
    assert.equal(kinds[kinds.length - 1], "end");
    assert.ok(kinds.slice(1, -1).every((k) => k === "text"));
    const texts = events.filter((e) => e.kind === "text");
    assert.equal(texts.map((e) => e.text).join(""), a.answer);
    assert.equal(texts[texts.length - 1].soFar, a.answer);
    const end = events[events.length - 1];
    assert.match(end.kind === "end" ? end.message ?? "" : "", /answered with \d+ citation/);
    assert.ok(a.citations.some((c) => c.path === "ops/backup.md"));

    // the panel links each citation to its lines; Insert needs the stored answer's id
    const panel = panelMarkdown(a);
    const c = a.citations[0];
    assert.ok(panel.includes(`${c.uri}#L${c.start_line}-L${c.end_line}`), panel);
    assert.equal(typeof a.answer_id, "number");
  });

  it("inserts a stored answer into a note by its id, footnotes rendered for the note", async () => {
    const a = (await ask(rpc, { question: BACKUP_Q }).result).answer;
    assert.ok(a.grounded && typeof a.answer_id === "number", a.answer);
    const notePath = "inbox/questions.md";
    const file = path.join(root, notePath);
    const uri = pathToFileURL(file).href;
    // the buffer, unsaved: it already has a kebab footnote, so the answer's labels start after it
    const buffer = fs.readFileSync(file, "utf8") + "\n[^kb-2]: [Backups](../ops/backup.md) L1–L2\n";
    open.set(uri, { version: 1, text: buffer });
    await rpc.sendNotification(DidOpenTextDocumentNotification.type, { textDocument: { uri, languageId: "markdown", version: 1, text: buffer } });
    const at = buffer.split("\n").findIndex((l) => l.startsWith("What time does the nightly backup"));

    const inserted = await insertAnswer(rpc, uri, at, a.answer_id);
    assert.equal(inserted.applied, true, messages.join("\n"));
    assert.equal(inserted.answer.answer, a.answer);
    const text = open.get(uri)!.text;
    const lines = text.split("\n");
    assert.equal(lines[at + 1], "");
    assert.match(lines[at + 2], /\[\^kb-3\]/); // under the cursor's line, after the note's own kb-2
    // each new label has a definition at the end of the note whose link, relative to the note, is the cited
    // note (the answer may run to several paragraphs: both parts of a two-part question are quoted)
    const answerLines = lines.slice(at + 2).filter((l) => !/^\[\^kb-\d+\]: /.test(l));
    const refs = new Set(answerLines.flatMap((l) => [...l.matchAll(/\[\^(kb-\d+)\]/g)].map((m) => m[1])));
    const defs = lines.filter((l) => /^\[\^kb-\d+\]: /.test(l) && !l.startsWith("[^kb-2]:"));
    assert.equal(defs.length, refs.size, text);
    assert.equal(lines.findIndex((l) => l.startsWith("[^kb-2]:")) + 1, lines.indexOf(defs[0]));
    for (const def of defs) {
      const m = /^\[\^(kb-\d+)\]: \[[^\]]+\]\(([^)#\s]+)(#[^)\s]*)? "kb:[0-9a-f]{12}"\) L(\d+)–L(\d+)$/.exec(def);
      assert.ok(m && refs.has(m[1]), def);
      const cited = path.posix.join(path.posix.dirname(notePath), decodeURIComponent(m[2]));
      assert.ok(fs.existsSync(path.join(root, cited)), `${def}: ${cited} does not exist`);
      assert.ok(a.citations.some((c) => c.path === cited && c.start_line === Number(m[4])), def);
    }
    assert.ok(text.includes("](../ops/backup.md#"), text);

    // the server's hover follows the footnote it wrote
    const ref = lines.findIndex((l) => l.includes("[^kb-3]") && !l.startsWith("[^kb-3]:"));
    const hover = await rpc.sendRequest(HoverRequest.type, {
      textDocument: { uri }, position: { line: ref, character: lines[ref].indexOf("[^kb-3]") + 3 },
    });
    const value = hover && typeof hover.contents === "object" && "value" in hover.contents ? hover.contents.value : "";
    assert.match(value, /ops\/backup\.md/);
    assert.doesNotMatch(value, /source (changed|not found)/);

    // Insert at cursor again on the same line: the earlier answer is replaced, not doubled, and the server says so
    const once = open.get(uri)!.text;
    const again = await insertAnswer(rpc, uri, at, a.answer_id);
    assert.equal(again.applied, true, messages.join("\n"));
    assert.equal(again.replaced, true);
    assert.equal(open.get(uri)!.text, once);
    assert.ok(messages.some((m) => /replaced the earlier answer under line/.test(m)), messages.join("\n"));

    await assert.rejects(insertAnswer(rpc, uri, at, 10 ** 9), (e: unknown) =>
      e instanceof ResponseError && e.code === ErrorCodes.InvalidParams && /no grounded answer/.test(e.message));
    await rpc.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } });
    open.delete(uri);
  });

  it("offers Link related notes on a heading; run as the light bulb runs it, it writes a Related line under the section", async () => {
    const file = path.join(root, "inbox", "restores.md");
    const uri = pathToFileURL(file).href;
    const files = (await rpc.sendRequest(StatusRequest, {})).files;
    const buffer = "# Restores\n\n## One file\n\nRestoring one file from the nightly restic snapshots on the NAS.\n\n## Later\n\nNothing yet.\n";
    fs.writeFileSync(file, buffer);
    open.set(uri, { version: 1, text: buffer });
    await rpc.sendNotification(DidOpenTextDocumentNotification.type, { textDocument: { uri, languageId: "markdown", version: 1, text: buffer } });
    // what VS Code asks for the light bulb (the cursor: an empty range) or a selection, and the Refactor menu (only)
    const linkAction = async (start: number, end = start, only?: string[]): Promise<CodeAction | undefined> => {
      const found = await rpc.sendRequest(CodeActionRequest.type, {
        textDocument: { uri },
        range: { start: { line: start, character: 0 }, end: { line: end, character: 0 } },
        context: { diagnostics: [], ...(only ? { only } : {}) },
      });
      return (found ?? []).filter((a): a is CodeAction => CodeAction.is(a)).find((a) => a.title === "Link related notes");
    };
    try {
      assert.equal(await linkAction(4), undefined); // not on every line of text: a heading or a selection
      assert.ok(await linkAction(4, 5)); // the paragraph, selected
      assert.ok(await linkAction(2, 2, ["refactor"]));
      const action = await linkAction(2); // on "## One file"
      assert.ok(action?.command, JSON.stringify(action));
      assert.equal(action.kind, "refactor.rewrite");
      assert.equal(action.command.command, LINK_RELATED);
      assert.deepEqual(action.command.arguments, [uri, 2]);

      // vscode-languageclient runs the action's command as workspace/executeCommand with its arguments
      const linked: Linked = await rpc.sendRequest(ExecuteCommandRequest.type, {
        command: action.command.command, arguments: action.command.arguments,
      });
      assert.equal(linked.applied, true, messages.join("\n"));
      assert.ok(linked.links.length > 0);
      const lines = open.get(uri)!.text.split("\n");
      const at = lines.findIndex((l) => l.startsWith("Related: "));
      // after the heading's own text, before the next heading, set apart by blank lines
      assert.deepEqual([lines[4], lines[5], lines[7], lines[8]], [buffer.split("\n")[4], "", "", "## Later"], lines.join("\n"));
      assert.equal(at, 6, lines.join("\n"));
      assert.equal(lines.filter((l) => l.startsWith("Related: ")).length, 1);
      assert.equal(lines[at], `Related: ${linked.links.join(", ")}`);
      // Markdown links (the note has no wikilinks), relative to the note, to notes that exist; never to itself
      const targets = [...lines[at].matchAll(/\[[^\]]+\]\(([^)#\s]+)(#[^)\s]*)?\)/g)].map((m) => decodeURIComponent(m[1]));
      assert.equal(targets.length, linked.links.length, lines[at]);
      assert.doesNotMatch(lines[at], /\[\[/);
      for (const target of targets) {
        const linkedNote = path.posix.join("inbox", target);
        assert.notEqual(linkedNote, "inbox/restores.md", lines[at]);
        assert.ok(fs.existsSync(path.join(root, linkedNote)), `${lines[at]}: ${linkedNote} does not exist`);
      }
      assert.doesNotMatch(lines[at], /restores/i);
      assert.ok(targets.includes("../ops/backup.md"), lines[at]);
    } finally {
      await rpc.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } });
      open.delete(uri);
      fs.rmSync(file);
      // as VS Code's file watcher would: the note is gone, so later answers cannot cite it
      await rpc.sendNotification(DidChangeWatchedFilesNotification.type, { changes: [{ uri, type: FileChangeType.Deleted }] });
      const deadline = Date.now() + 30_000;
      while ((await ready(rpc)).files !== files) {
        assert.ok(Date.now() < deadline, "the server still counts the deleted note");
        await sleep(100);
      }
    }
  });

  it("numbers an answer asked from a note as Insert writes it there: after the note's own, a passage cited before keeps its label", async () => {
    const first = (await ask(rpc, { question: BACKUP_Q }).result).answer;
    assert.ok(first.grounded, first.answer);
    const notePath = "inbox/numbers.md";
    const file = path.join(root, notePath);
    const uri = pathToFileURL(file).href;
    // the note already cites the first passage of the answer (an earlier insert) as kb-4
    const cited = first.citations.find((c) => c.marker === citationLabels(first).keys().next().value)!;
    assert.equal(cited.label, "kb-1"); // asked from no note: kb-1, kb-2… in order of first citation
    const earlier = `[^kb-4]: [Earlier](../${cited.path} "kb:${cited.content_hash.slice(0, 12)}") L${cited.start_line}–L${cited.end_line}`;
    const buffer = `# Numbers\n\nSeen before.[^kb-4]\n\n${BACKUP_Q}\n\n${earlier}\n`;
    fs.writeFileSync(file, buffer);
    open.set(uri, { version: 1, text: buffer });
    await rpc.sendNotification(DidOpenTextDocumentNotification.type, { textDocument: { uri, languageId: "markdown", version: 1, text: buffer } });
    try {
      const a = (await ask(rpc, { question: BACKUP_Q, uri }).result).answer;
      const panel = panelMarkdown(a);
      const shown = [...panel.split("**Sources**")[0].matchAll(/\[\\\[(\d+)\\\]\]/g)].map((m) => Number(m[1]));
      const at = buffer.split("\n").indexOf(BACKUP_Q);
      const inserted = await insertAnswer(rpc, uri, at, a.answer_id!);
      assert.equal(inserted.applied, true, messages.join("\n"));
      const lines = open.get(uri)!.text.split("\n");
      const written = [
        ...new Set(
          lines
            .slice(at + 2)
            .filter((l) => !/^\[\^kb-\d+\]: /.test(l))
            .flatMap((l) => [...l.matchAll(/\[\^kb-(\d+)\]/g)].map((m) => Number(m[1]))),
        ),
      ];
      assert.deepEqual(shown, written); // the panel's [4], [5] are the note's [^kb-4], [^kb-5]
      assert.equal(shown[0], 4);
      assert.ok(a.citations.find((c) => c.content_hash === cited.content_hash && c.path === cited.path)?.label === "kb-4",
        JSON.stringify(a.citations.map((c) => c.label))); // the server's label, not counted here
      assert.equal(lines.filter((l) => l.startsWith("[^kb-4]:")).length, 1); // no second definition
      const sources = [...panel.split("**Sources**")[1].matchAll(/^- \\\[(\d+)\\\]/gm)].map((m) => Number(m[1]));
      assert.deepEqual(sources, [...new Set(written)].sort((x, y) => x - y));
    } finally {
      await rpc.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } });
      open.delete(uri);
      fs.rmSync(file);
    }
  });

  it("shows a refusal with the nearest passages", async () => {
    const a = (await ask(rpc, { question: "How long should croissant dough rest in the fridge?" }).result).answer;
    assert.equal(a.grounded, false);
    assert.equal(a.lang ?? "en", "en"); // an English question: the panel's words in English
    assert.ok(a.refusal_reason === "score_gate" || a.refusal_reason === "llm_self_judge", a.refusal_reason ?? "");
    // why, in the server's words; the code is for tools only
    const panel = panelMarkdown(a);
    assert.ok(a.refusal_text, "answer.v1 has refusal_text on a refusal");
    // closest (passages, no claim) or not answered (nothing in the notes): said in words
    const head = a.outcome === "closest" ? "Closest in your notes." : "Not answered.";
    assert.ok(panel.startsWith(`> **${head}** ${a.refusal_text}`), panel);
    assert.match(panel, a.outcome === "closest" ? /\*\*Closest passages\*\*/ : /\*\*Nearest passages\*\*/);
    assert.doesNotMatch(panel, /score_gate|llm_self_judge/);
    // each passage with the server's one-line excerpt (at most 320 characters and its `…`),
    // shown as it is, in italics under its link
    const candidates = a.candidates ?? [];
    assert.ok(candidates.length > 0);
    for (const c of candidates) {
      assert.ok(c.excerpt && !c.excerpt.includes("\n") && c.excerpt.length <= 321, JSON.stringify(c.excerpt));
      assert.equal(c.label ?? null, null); // a nearest passage is cited by nothing
    }
    const shown = [...panel.matchAll(/^ {3}\*(.*)\*$/gm)].map((m) => m[1].replace(/\\(.)/g, "$1"));
    assert.deepEqual(shown, candidates.map((c) => c.excerpt));
    // a refusal is stored too, but not inserted
    assert.equal(typeof a.answer_id, "number");
    const note = pathToFileURL(path.join(root, "inbox", "questions.md")).href;
    await assert.rejects(insertAnswer(rpc, note, 0, a.answer_id!), /no grounded answer/);
  });

  it("answers a Korean question in Korean, and the panel writes its own words around it in Korean", async () => {
    const english = /Not answered|Closest in your notes|\*\*Sources\*\*|Closest passages|Nearest passages|disagree/;
    const grounded = (await ask(rpc, { question: "김치찌개에 설탕은 언제 넣나요?" }).result).answer;
    assert.equal(grounded.lang, "ko");
    assert.equal(grounded.grounded, true, grounded.refusal_text ?? "");
    const answered = panelMarkdown(grounded);
    assert.match(answered, /\*\*출처\*\*\n\n- \\\[1\\\] \[김치찌개 › /);
    assert.doesNotMatch(answered, english);
    assert.match(answerMeta(grounded), / · 출처 \d+개$/);
    const refused = (await ask(rpc, { question: "크루아상 반죽은 냉장고에서 얼마나 쉬어야 하나요?" }).result).answer;
    assert.equal(refused.lang, "ko");
    assert.equal(refused.grounded, false);
    const panel = panelMarkdown(refused);
    const head = refused.outcome === "closest" ? "노트에서 가장 가까운 곳." : "답하지 못했습니다.";
    assert.ok(panel.startsWith(`> **${head}** ${refused.refusal_text}`), panel);
    assert.match(panel, refused.outcome === "closest" ? /\*\*가장 가까운 구절\*\*/ : /\*\*가까운 구절\*\*/);
    assert.doesNotMatch(panel, english);
  });

  it("answers invalid params with InvalidParams and keeps serving", async () => {
    const bad: unknown[] = [{ question: "" }, { question: 42 }, {}, { question: "why?", k: 0 }, { question: "why?", mode: "fuzzy" }];
    for (const params of bad) {
      await assert.rejects(rpc.sendRequest(AskRequest, params as never), (e: unknown) => {
        assert.ok(e instanceof ResponseError);
        assert.equal(e.code, ErrorCodes.InvalidParams);
        assert.match(e.message, /kebab\/ask/);
        return true;
      });
    }
    await assert.rejects(rpc.sendRequest(SearchRequest, { query: " " }), (e: unknown) =>
      e instanceof ResponseError && e.code === ErrorCodes.InvalidParams);
    assert.equal((await rpc.sendRequest(StatusRequest, {})).state, "ready");
  });

  describe("with a streaming model server", () => {
    let llm: ScriptedModel;

    before(async () => {
      llm = await ScriptedModel.start();
      settings = {
        ...settings, "llm.backend": "openai", "llm.endpoint": llm.endpoint, "llm.model": "scripted",
        "llm.apiKeyEnv": "FAKE_LLM_KEY",
      };
      await rpc.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
      const deadline = Date.now() + 30_000;
      while ((await rpc.sendRequest(StatusRequest, {})).folders[0].llm?.backend !== "openai") {
        assert.ok(Date.now() < deadline, "the server never took the new settings");
        await sleep(100);
      }
      await ready(rpc);
    });

    after(() => llm?.close());

    it("streams the model's pieces as reports, in order, and they concatenate to the answer", async () => {
      // markers on the passages that hold each value (#1 retention, #2 schedule; the note of open
      // questions that repeats the question is never evidence): kebab keeps them
      llm.script(["The nightly backup ", "runs at **02:30** ", "[#2]. Daily snapshots ", "are kept ", "for 7 days [#1]."], 120);
      const events: StreamEvent[] = [];
      const asked = await ask(rpc, { question: BACKUP_Q }, (e) => events.push(e)).result;
      const a = asked.answer;
      assert.equal(a.answer, "The nightly backup runs at **02:30** [#2]. Daily snapshots are kept for 7 days [#1].");
      assert.equal(a.grounded, true);
      assert.equal(a.model.backend, "openai");
      assert.ok(asked.reports >= 3, `only ${asked.reports} reports`);
      const texts = events.filter((e) => e.kind === "text");
      assert.equal(texts.map((e) => e.text).join(""), a.answer);
      for (let i = 1; i < texts.length; i++) {
        assert.ok(texts[i].soFar.startsWith(texts[i - 1].soFar));
      }
      assert.deepEqual([events[0].kind, events[events.length - 1].kind], ["begin", "end"]);
      // the API key travelled by its env var's name, the settings as config keys
      assert.equal(llm.requests[0].headers.authorization, "Bearer sk-not-a-real-key");
      assert.equal(llm.requests[0].body.model, "scripted");
    });

    it("numbers the panel's citations as the note's footnotes: the first cited passage is [1]", async () => {
      llm.script(["Snapshots are kept for 7 days [#2]; ", "the backup runs at 02:30 [#1]."], 0);
      const a = (await ask(rpc, { question: BACKUP_Q }).result).answer;
      assert.equal(a.grounded, true, a.answer);
      // answer.v1 `markdown` is the answer as footnotes: [^kb-n] in order, each with its definition
      const labels = [...a.markdown.matchAll(/\[\^kb-(\d+)\](?!:)/g)].map((m) => Number(m[1]));
      const titles = [...a.markdown.matchAll(/^\[\^kb-\d+\]: \[([^\]]+)\]/gm)].map((m) => m[1]);
      const numbers = citationLabels(a);
      const panel = panelMarkdown(a);
      const shown = [...panel.split("**Sources**")[0].matchAll(/\[\\\[(\d+)\\\]\]/g)].map((m) => Number(m[1]));
      assert.deepEqual(shown, labels);
      assert.deepEqual([...numbers.values()], titles.map((_, i) => String(i + 1)));
      assert.deepEqual(a.citations.map((c) => c.label).filter(Boolean).sort(), titles.map((_, i) => `kb-${i + 1}`));
      const sources = [...panel.split("**Sources**")[1].matchAll(/^- \\\[(\d+)\\\] \[([^\]]+)\]/gm)].map((m) => [Number(m[1]), m[2]]);
      assert.deepEqual(sources, titles.map((t, i) => [i + 1, t]));
    });

    it("starts a thread per question; the follow-up box continues the answer's thread", async () => {
      llm.script(["At 02:30 [#1]."], 0);
      const first = (await ask(rpc, { question: BACKUP_Q }).result).answer;
      const second = (await ask(rpc, { question: "Which port does Postgres listen on?" }).result).answer;
      assert.match(first.conversation ?? "", /^[0-9a-f]{12}$/); // minted by the server
      assert.notEqual(second.conversation, first.conversation);
      assert.doesNotMatch(JSON.stringify(llm.requests.at(-1)?.body.messages), /nightly backup run/);
      const turns = [{ id: 1, question: BACKUP_Q, state: "answered" as const, streamed: "", answer: first }];
      const followUp = (await ask(rpc, { question: "And the weekly ones?", conversation: followUpConversation(turns) }).result).answer;
      assert.equal(followUp.conversation, first.conversation);
      assert.match(JSON.stringify(llm.requests.at(-1)?.body.messages), /nightly backup run/); // the earlier turn went along
    });

    it("stops generating when asked, and returns the cancelled answer with the text so far", async () => {
      llm.script(Array.from({ length: 40 }, (_, i) => `piece ${i} `), 100);
      const events: StreamEvent[] = [];
      const handle = ask(rpc, { question: BACKUP_Q }, (e) => {
        events.push(e);
        if (e.kind === "text" && events.filter((x) => x.kind === "text").length === 2) {
          handle.stop();
        }
      });
      const asked = await handle.result;
      assert.equal(asked.answer.refusal_reason, "cancelled");
      assert.equal(asked.answer.grounded, false);
      assert.ok(asked.answer.answer.startsWith("piece 0"));
      assert.ok(!asked.answer.answer.includes("piece 39"));
      assert.equal(asked.streamed, asked.answer.answer);
      // the panel says so in words and keeps the text written so far
      const panel = panelMarkdown(asked.answer);
      assert.ok(panel.startsWith(`> **Not answered.** ${asked.answer.refusal_text}`), panel);
      assert.match(panel, /piece 0 piece 1/);
    });
  });
});

async function ready(rpc: MessageConnection, timeoutMs = 45_000): Promise<Status> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await rpc.sendRequest(StatusRequest, {});
    if (status.state === "ready" && status.folders.every((f) => f.pending_vectors === 0)) {
      return status;
    }
    assert.ok(Date.now() < deadline, `the index never became ready: ${JSON.stringify(status)}`);
    await sleep(100);
  }
}

/** `edits` (LSP ranges in UTF-16 code units, as JavaScript strings count) applied to `text`. */
function applyTextEdits(text: string, edits: TextEdit[]): string {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) {
    starts.push(i + 1);
  }
  const offset = (p: { line: number; character: number }) =>
    p.line < starts.length ? Math.min(starts[p.line] + p.character, text.length) : text.length;
  // from the end backwards; edits at one position land in their order
  return edits.map((e, i) => ({ from: offset(e.range.start), to: offset(e.range.end), text: e.newText, i }))
    .sort((x, y) => y.from - x.from || y.i - x.i)
    .reduce((out, e) => out.slice(0, e.from) + e.text + out.slice(e.to), text);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

