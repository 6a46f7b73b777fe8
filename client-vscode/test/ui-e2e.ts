/// <reference lib="dom" /> // textBox() runs in the page
/**
 * The extension in a real VS Code (code-server) driven through Chromium with playwright-core, on
 * the default (extractive) answerer first, as installed: install the .vsix, ask a question (one
 * status bar item while indexing; the panel numbered as the note's footnotes), insert it, hover
 * its footnote, take the screenshot, open a citation, answer a question on its line that the notes
 * cannot answer (the refusal in the panel, in words, with clean nearest passages, no toast), show
 * status (no third editor column); Kebab: Related passages from the editor's context menu (the
 * first is Postgres on nas01 › Dumps, none from the section's own note; choosing it opens the
 * passage), Go to Symbol in Workspace (Ctrl+T) and Kebab: Search notes. Then with a scripted model server: an answer streams into the
 * panel in a new thread, and the follow-up box continues it. Run by test/ui-e2e.sh, which checks
 * the prerequisites and installs code-server; the paths come from the environment.
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { chromium, FrameLocator, Page } from "playwright-core";
import { markerFor, ScriptedModel } from "./scriptedModel";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) {
    throw new Error(`ui-e2e: ${name} is not set (run test/ui-e2e.sh)`);
  }
  return value;
};
const CODE_SERVER = env("CODE_SERVER");
const CHROMIUM = env("CHROMIUM");
const KEBAB_SERVER = env("KEBAB_SERVER");
const VSIX = env("VSIX");
const SCREENSHOT = env("SCREENSHOT");
const REPO = path.resolve(__dirname, "..", "..");
// Where the README's picture goes when it is taken on purpose (ui-e2e.sh passes KEBAB_SCREENSHOT_TO)
const README_SHOT = process.env.README_SCREENSHOT || "";
const ASKED = "What time does the nightly backup job run?"; // on the default (extractive) answerer
const QUESTION = "What time does the nightly backup run, and how long are daily snapshots kept?"; // to the scripted model
const REFUSED = "How do I sync tasks with Todoist?"; // no note mentions Todoist

function step(message: string): void {
  console.log(`ui-e2e: ${message}`);
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kebab-ui-e2e-"));
  const workspace = path.join(tmp, "notes");
  const data = path.join(tmp, "data");
  const extensions = path.join(tmp, "extensions");
  fs.cpSync(path.join(REPO, "fixtures", "workspace"), workspace, { recursive: true });
  // a question the notes cannot answer, to answer on its line
  const questions = path.join(workspace, "inbox", "questions.md");
  fs.writeFileSync(questions, fs.readFileSync(questions, "utf8").replace("How do I enable HTTP/3 in nginx?\n", `How do I enable HTTP/3 in nginx?\n${REFUSED}\n`));
  // code-server and chromium keep logs, ids and crash reports under XDG dirs: keep them in tmp
  const home = { ...process.env, XDG_CONFIG_HOME: path.join(tmp, "xdg"), XDG_DATA_HOME: path.join(tmp, "xdg"), XDG_CACHE_HOME: path.join(tmp, "xdg") };
  let codeServer: ChildProcess | undefined;
  let log = "";
  const model = await ScriptedModel.start();
  // a model that streams slowly, citing the passages that hold the facts
  model.delay = 250;
  model.reply = (request) => {
    const when = markerFor(request, /02:30/) ?? 1;
    const kept = markerFor(request, /keep-daily/) ?? when;
    return ["The nightly backup ", "runs every day ", `at **02:30** [#${when}]`, " through a systemd timer; ",
      "daily snapshots ", "are kept ", `for **7 days** [#${kept}].`];
  };
  const browser = await chromium.launch({
    executablePath: CHROMIUM, headless: true,
    env: home,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  let page: Page | undefined;
  try {
    // no kebab.llm.* settings: the default answerer, what a person gets on installing
    const settings = JSON.stringify({
      "kebab.serverPath": KEBAB_SERVER,
      "kebab.indexDir": path.join(tmp, "index"),
      "workbench.colorTheme": "Default Dark Modern",
      "workbench.startupEditor": "none",
      "workbench.tips.enabled": false,
      "workbench.secondarySideBar.defaultVisibility": "hidden",
      "chat.disableAIFeatures": true,
      "security.workspace.trust.enabled": false,
      "telemetry.telemetryLevel": "off",
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "update.mode": "none",
      "editor.hover.delay": 150,
      "editor.minimap.enabled": false,
      "window.menuBarVisibility": "compact",
    }, null, 2);
    // code-server is a remote window: machine-scoped settings (kebab.serverPath) come from Machine/
    for (const scope of ["User", "Machine"]) {
      fs.mkdirSync(path.join(data, scope), { recursive: true });
      fs.writeFileSync(path.join(data, scope, "settings.json"), settings);
    }

    step(`installing ${path.basename(VSIX)} into code-server`);
    const config = ["--config", path.join(tmp, "config.yaml")]; // not ~/.config/code-server
    const installed = spawnSync(CODE_SERVER, [...config, "--user-data-dir", data, "--extensions-dir", extensions, "--install-extension", VSIX],
      { encoding: "utf8", timeout: 120_000, env: home });
    if (installed.status !== 0 || !/successfully installed/i.test(installed.stdout + installed.stderr)) {
      throw new Error(`installing the .vsix failed:\n${installed.stdout}\n${installed.stderr}`);
    }

    const port = await freePort();
    step(`starting code-server on 127.0.0.1:${port}`);
    codeServer = spawn(CODE_SERVER, [...config, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--user-data-dir", data,
      "--extensions-dir", extensions, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
      "--disable-getting-started-override", workspace], { stdio: ["ignore", "pipe", "pipe"], env: home });
    codeServer.stdout!.on("data", (d) => { log += d; });
    codeServer.stderr!.on("data", (d) => { log += d; });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok, 60_000, "code-server never answered");

    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });

    step("waiting for the status bar: the index is built; kebab has one status bar item meanwhile");
    const items = page.locator(".statusbar-item", { hasText: "kebab" });
    const ready = page.locator(".statusbar-item", { hasText: /kebab: \d+ notes/ });
    const seenItems = new Set<string>();
    await waitFor(async () => {
      const texts = (await items.allInnerTexts()).map((t) => t.trim());
      texts.forEach((t) => seenItems.add(t));
      if (texts.length > 1) {
        throw new Error(`two kebab status bar items at once: ${JSON.stringify(texts)}`);
      }
      return (await ready.count()) > 0;
    }, 120_000, "the index was never built", 50);
    step(`status bar said ${JSON.stringify([...seenItems])}`);

    step("Kebab: Related passages from the editor's context menu, the cursor in ops/backup.md's Schedule section");
    const postgresLines = fs.readFileSync(path.join(workspace, "ops", "postgres.md"), "utf8").split("\n");
    const dumpsLine = postgresLines.indexOf("## Dumps") + 1; // 1-based, as the status bar says
    await page.keyboard.press("Control+P");
    await page.keyboard.type("backup.md");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "backup.md" }).first().waitFor();
    await page.keyboard.press("Enter");
    const scheduleText = page.locator(".monaco-editor .view-line", { hasText: "The backup job runs" });
    await scheduleText.click();
    await scheduleText.click({ button: "right" });
    const menuItem = page.locator(".monaco-menu .action-item", { hasText: "Related passages" });
    await menuItem.waitFor({ timeout: 10_000 });
    await menuItem.click();
    const quickInput = page.locator(".quick-input-widget");
    const rows = quickInput.locator(".quick-input-list .monaco-list-row");
    await quickInput.locator(".quick-input-title", { hasText: "Related to Home server backups › Schedule" }).waitFor({ timeout: 10_000 });
    await rows.filter({ hasText: /· L\d/ }).first().waitFor({ timeout: 30_000 }); // the passages came
    // each row: its label, and all it shows (label, note and lines, excerpt); in the list's order
    const relatedRows = await rows.evaluateAll((els) => els
      .map((e) => ({
        index: Number(e.getAttribute("data-index")),
        label: (e.querySelector(".label-name")?.textContent ?? "").trim(),
        text: ((e as HTMLElement).innerText ?? "").replace(/\s+/g, " ").trim(),
      }))
      .sort((a, b) => a.index - b.index));
    step(`related: ${JSON.stringify(relatedRows.map((r) => r.text.slice(0, 70)))}`);
    const top = relatedRows[0];
    if (top?.label !== "Postgres on nas01 › Dumps" || !top.text.includes("ops/postgres.md · L")) {
      throw new Error(`the first related passage is not Postgres on nas01 › Dumps in ops/postgres.md: ${JSON.stringify(relatedRows)}`);
    }
    if (relatedRows.some((r) => r.text.includes("ops/backup.md ·"))) {
      throw new Error(`a related passage from the section's own note: ${JSON.stringify(relatedRows)}`);
    }
    if (!top.text.includes("A cron job runs pg_dumpall every day at 02:00") || /`|## /.test(top.text)) {
      throw new Error(`the first related passage's excerpt is not clean text: ${top.text}`);
    }
    await page.screenshot({ path: path.join(path.dirname(SCREENSHOT), "related.png") });
    await page.keyboard.press("Enter");
    await page.locator(".tab.active", { hasText: "postgres.md" }).waitFor({ timeout: 15_000 });
    await page.locator(".statusbar-item", { hasText: `Ln ${dumpsLine}, Col 1` }).waitFor({ timeout: 10_000 });
    await page.locator(".monaco-editor .view-line", { hasText: "A cron job runs" }).waitFor();
    step(`chose it: ops/postgres.md opened at line ${dumpsLine} (## Dumps)`);

    step("Go to Symbol in Workspace (Ctrl+T): the server's passages, as VS Code filters them");
    await page.locator(".part.editor .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+T");
    const byKey = await quickInput.locator("input").waitFor({ timeout: 3000 }).then(() => true, () => false);
    if (!byKey) { // the browser kept Ctrl+T: the same picker from the command palette
      step("Ctrl+T did not reach code-server: Go to Symbol in Workspace… from the command palette");
      await runCommand(page, "Go to Symbol in Workspace");
      await waitFor(async () => (await quickInput.locator("input").inputValue()) === "#", 5000, "Go to Symbol in Workspace did not open");
    } else if (!(await quickInput.locator("input").inputValue()).startsWith("#")) {
      throw new Error(`Ctrl+T opened something else: ${await quickInput.locator("input").inputValue()}`);
    }
    const rowTexts = async () => (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
    // a heading's words: VS Code keeps the server's passages whose names match what is typed
    await quickInput.locator("input").fill("#backup schedule");
    const schedule = rows.filter({ hasText: "Home server backups › Schedule" }).first();
    await schedule.waitFor({ timeout: 15_000 });
    const byHeading = await rowTexts();
    step(`Ctrl+T "backup schedule" lists ${JSON.stringify(byHeading.slice(0, 4))}`);
    // words of its meaning only: VS Code sends the server the first word and drops every passage
    // whose name does not fuzzy-match the words typed (recorded, not asserted: it is VS Code's filter)
    await quickInput.locator("input").fill("#nightly backup");
    await waitFor(async () => JSON.stringify(await rowTexts()) !== JSON.stringify(byHeading), 10_000, "unchanged").catch(() => undefined);
    const byMeaning = await rowTexts();
    step(`Ctrl+T "nightly backup" lists ${JSON.stringify(byMeaning.slice(0, 4))}`);
    await page.screenshot({ path: path.join(path.dirname(SCREENSHOT), "symbols.png") });
    await quickInput.locator("input").fill("#backup schedule");
    await schedule.waitFor({ timeout: 10_000 });
    await schedule.click();
    await page.locator(".tab.active", { hasText: "backup.md" }).waitFor({ timeout: 15_000 });
    const scheduleLine = fs.readFileSync(path.join(workspace, "ops", "backup.md"), "utf8").split("\n").indexOf("## Schedule") + 1;
    await page.locator(".statusbar-item", { hasText: `Ln ${scheduleLine}, Col 1` }).waitFor({ timeout: 10_000 });

    step("Kebab: Search notes: by meaning, as typed, in the server's order");
    await runCommand(page, "Kebab: Search notes");
    await quickInput.locator(".quick-input-title", { hasText: "Kebab: Search notes" }).waitFor({ timeout: 10_000 });
    await quickInput.locator("input").fill("nightly backup");
    await rows.filter({ hasText: "Home server backups › Schedule" }).first().waitFor({ timeout: 15_000 });
    const searched = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
    step(`Kebab: Search notes "nightly backup" lists ${JSON.stringify(searched.slice(0, 3))}`);
    await page.screenshot({ path: path.join(path.dirname(SCREENSHOT), "search.png") });
    await page.keyboard.press("Escape");
    await quickInput.waitFor({ state: "hidden" });

    step("opening inbox/questions.md and putting the cursor after the question");
    await page.keyboard.press("Control+P");
    await page.keyboard.type("questions.md");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "questions.md" }).first().waitFor();
    await page.keyboard.press("Enter");
    const questionLine = page.locator(".monaco-editor .view-line", { hasText: ASKED });
    await questionLine.waitFor();
    await questionLine.click();
    await page.keyboard.press("End");

    step("Kebab: Ask, on the default answerer");
    await runCommand(page, "Kebab: Ask");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor();
    await input.fill(ASKED);
    await page.keyboard.press("Enter");
    const panel = webview(page);
    const first = panel.locator(".turn").nth(0);
    await panel.locator(".turn.answered, .turn.refused").first().waitFor({ timeout: 90_000 });
    if (!(await first.evaluate((e) => e.classList.contains("answered")))) {
      throw new Error(`not answered: ${await first.innerText()}`);
    }
    const meta = (await first.locator(".actions .meta").innerText()).trim();
    step(`answered: ${meta}`);
    if (!/^extractive · /.test(meta) || /passages/.test(meta)) {
      throw new Error(`unexpected meta line: ${meta}`);
    }
    // the panel's numbers: [1], [2]… in order of first appearance, the Sources list in that order
    const view = await first.locator(".answer").evaluate((answer) => {
      const sourcesAt = Array.from(answer.children).findIndex((e) => e.textContent?.trim() === "Sources");
      const before = Array.from(answer.children).slice(0, sourcesAt);
      const numbers = before.flatMap((e) => Array.from(e.querySelectorAll("a[href^='file:']")).map((a) => a.textContent ?? ""));
      const sources = Array.from(answer.querySelectorAll("li")).map((li) => {
        const link = li.querySelector("a");
        // the line range: one line on screen, however narrow the panel
        const walker = document.createTreeWalker(li, NodeFilter.SHOW_TEXT);
        let lines = 0;
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const m = /L\d+\u2060–\u2060L\d+/.exec(node.textContent ?? "");
          if (m) {
            const range = document.createRange();
            range.setStart(node, m.index);
            range.setEnd(node, m.index + m[0].length);
            lines = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top))).size;
          }
        }
        return { text: li.textContent ?? "", title: link?.textContent ?? "", rangeLines: lines };
      });
      return { numbers, sources };
    });
    step(`panel citations ${JSON.stringify(view.numbers)}, sources ${JSON.stringify(view.sources.map((x) => x.text))}`);
    const order = [...new Set(view.numbers)];
    if (!order.length || order.some((n, i) => n !== `[${i + 1}]`)) {
      throw new Error(`the panel's citations are not numbered [1], [2]… in order: ${JSON.stringify(view.numbers)}`);
    }
    if (view.sources.length !== order.length || view.sources.some((x, i) => !x.text.startsWith(`[${i + 1}] `) || x.rangeLines !== 1)) {
      throw new Error(`Sources are not [1]… in order, each range on one line: ${JSON.stringify(view.sources)}`);
    }

    step("Insert at cursor: the note's footnotes are numbered as the panel's citations");
    await first.locator("button.insert").click();
    await page.locator(".monaco-editor .view-line", { hasText: "[^kb-1]: [" }).waitFor({ timeout: 20_000 });
    await page.keyboard.press("Control+S");
    await waitFor(async () => /\[\^kb-1\]: /.test(fs.readFileSync(questions, "utf8")), 10_000, "the note was never saved");
    const titles = [...fs.readFileSync(questions, "utf8").matchAll(/^\[\^kb-(\d+)\]: \[([^\]]+)\]/gm)].map((m) => [Number(m[1]), m[2]]);
    const panelTitles = view.sources.map((x, i) => [i + 1, x.title]);
    if (JSON.stringify(titles) !== JSON.stringify(panelTitles)) {
      throw new Error(`the note's footnotes ${JSON.stringify(titles)} differ from the panel's sources ${JSON.stringify(panelTitles)}`);
    }

    step("hovering the footnote [^kb-1]");
    const box = await textBox(page, "[^kb-1]", "[^kb-1]:");
    const hover = page.locator(".monaco-hover", { hasText: "backup.md" });
    for (let attempt = 0; attempt < 5 && !(await hover.isVisible()); attempt++) {
      await page.mouse.move(box.x + box.width / 2 - 3, box.y + box.height / 2);
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await hover.waitFor({ timeout: 4000 }).catch(() => undefined);
    }
    await hover.waitFor({ timeout: 5000 });
    step(`hover: ${(await hover.innerText()).split("\n")[0]}`);

    // for the picture: the hover on the definition at the note's end leaves the panel in view
    await page.mouse.move(5, 500);
    await hover.waitFor({ state: "hidden" }).catch(() => undefined);
    const definition = await textBox(page, "[^kb-1]: [", "");
    const definitionHover = page.locator(".monaco-hover", { hasText: "backup.md" });
    for (let attempt = 0; attempt < 5 && !(await definitionHover.isVisible()); attempt++) {
      await page.mouse.move(definition.x + definition.width / 2 - 3, definition.y + definition.height / 2);
      await page.mouse.move(definition.x + definition.width / 2, definition.y + definition.height / 2);
      await definitionHover.waitFor({ timeout: 4000 }).catch(() => undefined);
    }
    await shot(page, SCREENSHOT);
    if (README_SHOT) {
      await shot(page, README_SHOT); // on purpose: the default answerer, as a person sees it
    }

    step("opening a citation from the panel");
    await page.mouse.move(5, 500);
    await first.locator(".answer a[href^='file:']").first().click();
    await page.locator(".tab.active", { hasText: "backup.md" }).waitFor({ timeout: 15_000 });

    step("Kebab: Answer question on this line, refused: the refusal is shown in the panel, not as a toast");
    await page.locator(".tab", { hasText: "questions.md" }).click();
    const todoist = page.locator(".monaco-editor .view-line", { hasText: REFUSED });
    await todoist.click();
    await page.keyboard.press("End");
    await runCommand(page, "Kebab: Answer question on this line");
    const refused = panel.locator(".turn.refused", { hasText: "Todoist" });
    await refused.waitFor({ timeout: 60_000 });
    const refusal = (await refused.locator(".answer").innerText()).trim();
    step(`refusal: ${refusal.split("\n")[0]}`);
    if (!/^Not answered\. \S/.test(refusal) || /score_gate|llm_self_judge|no_chunks/.test(refusal)) {
      throw new Error(`the refusal does not say why in words: ${refusal}`);
    }
    const excerpts = await refused.locator(".answer li em").allInnerTexts();
    if (!/Nearest passages/.test(refusal) || !excerpts.length) {
      throw new Error(`no nearest passages under the refusal: ${refusal}`);
    }
    const raw = excerpts.find((t) => /<!--|```|~~~|\|\s|\[!\w+\]|^#+ /.test(t));
    if (raw) {
      throw new Error(`a nearest passage shows Markdown source: ${raw}`);
    }
    const toasts = await page.locator(".notification-toast", { hasText: "Todoist" }).count();
    if (toasts) {
      throw new Error("the refusal was also shown as a toast");
    }
    await page.screenshot({ path: path.join(path.dirname(SCREENSHOT), "refusal.png") });

    step("Kebab: Show status, in the output view: no third editor column");
    const groups = page.locator(".part.editor .editor-group-container");
    const before = await groups.count();
    await runCommand(page, "Kebab: Show status");
    await page.locator(".part.panel .view-line", { hasText: "kebab status:" }).waitFor({ timeout: 15_000 });
    if ((await groups.count()) !== before) {
      throw new Error(`Show status opened an editor column (${before} → ${await groups.count()})`);
    }
    await page.screenshot({ path: path.join(path.dirname(SCREENSHOT), "status.png") });

    step("a model server in the workspace settings: the status view shows it");
    fs.mkdirSync(path.join(workspace, ".vscode"), { recursive: true });
    fs.writeFileSync(path.join(workspace, ".vscode", "settings.json"), JSON.stringify({
      "kebab.llm.backend": "openai", "kebab.llm.endpoint": model.endpoint, "kebab.llm.model": "scripted",
    }));
    await page.locator(".part.panel .view-line", { hasText: "openai scripted" }).waitFor({ timeout: 60_000 });

    step("Kebab: Ask streams the model's answer into the panel, in a new thread");
    await page.locator(".part.editor .monaco-editor .view-lines").first().click();
    await runCommand(page, "Kebab: Ask");
    await input.waitFor();
    await input.fill(QUESTION);
    await page.keyboard.press("Enter");
    const third = panel.locator(".turn").nth(2);
    // the answer streams: sample the panel until the turn is answered
    const seen: string[] = [];
    await waitFor(async () => {
      const text = (await third.locator(".answer").innerText().catch(() => "")).trim();
      if (text && text !== seen[seen.length - 1]) {
        seen.push(text);
      }
      return await third.evaluate((e) => e.classList.contains("answered")).catch(() => false);
    }, 90_000, "the answer never finished", 50);
    const partial = seen.filter((t) => t.startsWith("The nightly backup") && !t.includes("Sources"));
    step(`the panel showed ${partial.length} partial answers before the whole one`);
    if (partial.length < 2) {
      throw new Error(`the answer did not stream into the panel; saw: ${JSON.stringify(seen)}`);
    }
    const final = (await third.locator(".answer").innerText()).trim();
    if (!/02:30/.test(final) || !/Sources/.test(final) || !/backup\.md/.test(final)) {
      throw new Error(`unexpected answer in the panel: ${final}`);
    }
    const prompt = (i: number) => JSON.stringify(model.requests.at(i)?.body.messages ?? []);
    if (/Todoist/.test(prompt(-1))) {
      throw new Error("Kebab: Ask continued the earlier thread (its question went to the model)");
    }

    step("the follow-up box continues the answer's thread");
    const asked = model.requests.length;
    await panel.locator("#question").fill("And how long are the weekly snapshots kept?");
    await panel.locator("#follow button").click();
    const followUp = panel.locator(".turn.follow-up.answered", { hasText: "weekly snapshots" });
    await followUp.waitFor({ timeout: 60_000 });
    if (model.requests.length <= asked || !prompt(-1).includes("how long are daily snapshots kept")) {
      throw new Error(`the follow-up did not carry the earlier turn: ${prompt(-1).slice(0, 2000)}`);
    }
    await page.screenshot({ path: path.join(path.dirname(SCREENSHOT), "panel-model.png") });

    step("a question from Kebab: Ask after the follow-up starts a thread of its own");
    await page.locator(".part.editor .monaco-editor .view-lines").first().click();
    await runCommand(page, "Kebab: Ask");
    await input.waitFor();
    await input.fill("Where is the restic password kept?");
    await page.keyboard.press("Enter");
    await panel.locator(".turn").nth(4).and(panel.locator(".turn.answered, .turn.refused")).waitFor({ timeout: 60_000 });
    if (/daily snapshots kept|weekly snapshots/.test(prompt(-1)) || await panel.locator(".turn").nth(4).evaluate((e) => e.classList.contains("follow-up"))) {
      throw new Error(`Kebab: Ask continued the thread: ${prompt(-1).slice(0, 2000)}`);
    }

    step("Kebab: Reindex");
    await runCommand(page, "Kebab: Reindex");
    await page.locator(".statusbar-item", { hasText: /kebab: 16 notes/ }).waitFor({ timeout: 60_000 });
    const errors = await page.locator(".notification-toast", { hasText: "kebab" }).allInnerTexts();
    if (errors.length) {
      throw new Error(`kebab notifications: ${errors.join(" | ")}`);
    }
    step("PASSED");
  } catch (e) {
    if (page) {
      const failed = path.join(os.tmpdir(), "kebab-ui-e2e-failure.png");
      await page.screenshot({ path: failed }).catch(() => undefined);
      console.error(`ui-e2e: screenshot of the failure: ${failed}`);
    }
    console.error(`ui-e2e: code-server log (tail):\n${log.slice(-4000)}`);
    throw e;
  } finally {
    await browser.close().catch(() => undefined);
    codeServer?.kill();
    model.close();
    fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
  }
}

async function shot(page: Page, file: string): Promise<void> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file });
  step(`screenshot: ${file}`);
}

/** The answer panel's document: code-server nests each webview in two iframes. */
function webview(page: Page): FrameLocator {
  return page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
}

async function runCommand(page: Page, title: string): Promise<void> {
  const input = page.locator(".quick-input-widget input");
  await page.keyboard.press("F1");
  if (!(await input.waitFor({ timeout: 3000 }).then(() => true, () => false))) {
    // a webview (the panel, a preview) had the keyboard: give it back to the workbench
    await page.locator(".part.editor .monaco-editor .view-lines").first().click();
    await page.keyboard.press("F1");
    await input.waitFor();
  }
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor();
  await page.keyboard.press("Enter");
}

/** The on-screen box of `needle` in the first editor line that holds it and does not start with `skip` (when given). */
async function textBox(page: Page, needle: string, skip: string): Promise<{ x: number; y: number; width: number; height: number }> {
  const box = await page.evaluate(([needle, skip]) => {
    for (const el of Array.from(document.querySelectorAll(".monaco-editor .view-line"))) {
      const text = (el.textContent ?? "").replace(/\u00a0/g, " ");
      const at = text.indexOf(needle);
      if (at < 0 || (skip && text.startsWith(skip))) {
        continue;
      }
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      const range = document.createRange();
      let offset = 0;
      let started = false;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const length = node.textContent?.length ?? 0;
        if (!started && at < offset + length) {
          range.setStart(node, at - offset);
          started = true;
        }
        if (started && at + needle.length <= offset + length) {
          range.setEnd(node, at + needle.length - offset);
          const r = range.getBoundingClientRect();
          return { x: r.x, y: r.y, width: r.width, height: r.height };
        }
        offset += length;
      }
    }
    return undefined;
  }, [needle, skip] as const);
  if (!box) {
    throw new Error(`no editor line with ${needle}`);
  }
  return box;
}

async function waitFor(check: () => Promise<unknown>, timeoutMs: number, message: string, everyMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) {
      throw new Error(message);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

main().then(() => process.exit(0), (e) => {
  console.error(`ui-e2e: FAILED: ${e instanceof Error ? e.stack ?? e.message : e}`);
  process.exit(1);
});
