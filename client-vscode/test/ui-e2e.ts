/// <reference lib="dom" /> // textBox() runs in the page
/**
 * The extension in a real VS Code (code-server) driven through Chromium with playwright-core:
 * install the .vsix, ask a question and watch the answer stream into the panel, insert it into a
 * note, hover its footnote, open a citation, and take a screenshot. Run by test/ui-e2e.sh, which
 * checks the prerequisites and installs code-server; the paths come from the environment.
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
const QUESTION = "What time does the nightly backup run, and how long are daily snapshots kept?";

function step(message: string): void {
  console.log(`ui-e2e: ${message}`);
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kebab-ui-e2e-"));
  const workspace = path.join(tmp, "notes");
  const data = path.join(tmp, "data");
  const extensions = path.join(tmp, "extensions");
  fs.cpSync(path.join(REPO, "fixtures", "workspace"), workspace, { recursive: true });
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
    const settings = JSON.stringify({
      "kebab.serverPath": KEBAB_SERVER,
      "kebab.indexDir": path.join(tmp, "index"),
      "kebab.llm.backend": "openai",
      "kebab.llm.endpoint": model.endpoint,
      "kebab.llm.model": "scripted",
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

    step("waiting for the status bar: the index is built");
    const item = page.locator(".statusbar-item", { hasText: /kebab: \d+ notes/ });
    await item.waitFor({ timeout: 120_000 });
    step(`status bar says "${(await item.innerText()).trim()}"`);

    step("opening inbox/questions.md and putting the cursor after the question");
    await page.keyboard.press("Control+P");
    await page.keyboard.type("questions.md");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "questions.md" }).first().waitFor();
    await page.keyboard.press("Enter");
    const questionLine = page.locator(".monaco-editor .view-line", { hasText: "What time does the nightly backup job run?" });
    await questionLine.waitFor();
    await questionLine.click();
    await page.keyboard.press("End");

    step("Kebab: Ask");
    await runCommand(page, "Kebab: Ask");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor();
    await input.fill(QUESTION);
    await page.keyboard.press("Enter");

    const panel = webview(page);
    const answer = panel.locator(".turn .answer").first();
    // the answer streams: sample the panel until the turn is answered
    const seen: string[] = [];
    await waitFor(async () => {
      const text = (await answer.innerText().catch(() => "")).trim();
      if (text && text !== seen[seen.length - 1]) {
        seen.push(text);
      }
      return (await panel.locator(".turn.answered").count()) > 0;
    }, 90_000, "the answer never finished", 50);
    const partial = seen.filter((t) => t.startsWith("The nightly backup") && !t.includes("Sources"));
    step(`the panel showed ${partial.length} partial answers before the whole one`);
    if (partial.length < 2) {
      throw new Error(`the answer did not stream into the panel; saw: ${JSON.stringify(seen)}`);
    }
    const final = (await answer.innerText()).trim();
    if (!/02:30/.test(final) || !/Sources/.test(final) || !/backup\.md/.test(final)) {
      throw new Error(`unexpected answer in the panel: ${final}`);
    }

    step("Insert at cursor");
    await panel.locator(".turn.answered button.insert").click();
    const reference = page.locator(".monaco-editor .view-line", { hasText: "at **02:30**[^kb-1]" });
    await reference.waitFor({ timeout: 20_000 });
    await page.locator(".monaco-editor .view-line", { hasText: "[^kb-1]: [Home server backups" }).waitFor();

    step("hovering the footnote [^kb-1]");
    const box = await textBox(page, "at **02:30**[^kb-1]", "[^kb-1]");
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
    const definition = await textBox(page, "[^kb-2]: [Home server backups", "[^kb-2]");
    const definitionHover = page.locator(".monaco-hover", { hasText: "Retention policy" });
    for (let attempt = 0; attempt < 5 && !(await definitionHover.isVisible()); attempt++) {
      await page.mouse.move(definition.x + definition.width / 2 - 3, definition.y + definition.height / 2);
      await page.mouse.move(definition.x + definition.width / 2, definition.y + definition.height / 2);
      await definitionHover.waitFor({ timeout: 4000 }).catch(() => undefined);
    }

    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
    step(`screenshot: ${SCREENSHOT}`);

    step("opening a citation from the panel");
    await page.mouse.move(5, 500);
    await panel.locator(".turn.answered .answer a[href^='file:']").first().click();
    await page.locator(".tab.active", { hasText: "backup.md" }).waitFor({ timeout: 15_000 });

    step("Kebab: Answer question on this line");
    await page.locator(".tab", { hasText: "questions.md" }).click();
    const http3 = page.locator(".monaco-editor .view-line", { hasText: "How do I enable HTTP/3 in nginx?" });
    await http3.click();
    await page.keyboard.press("End");
    await runCommand(page, "Kebab: Answer question on this line");
    // the server answers and writes it under the line; its labels continue after the note's kb-2
    await page.locator(".monaco-editor .view-line", { hasText: "[^kb-3]:" }).waitFor({ timeout: 60_000 });

    step("Kebab: Show status");
    await runCommand(page, "Kebab: Show status");
    await page.locator(".tab", { hasText: "kebab status" }).waitFor({ timeout: 15_000 });

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

/** The on-screen box of `needle` inside the editor line that contains `line`. */
async function textBox(page: Page, line: string, needle: string): Promise<{ x: number; y: number; width: number; height: number }> {
  const box = await page.evaluate(([line, needle]) => {
    for (const el of Array.from(document.querySelectorAll(".monaco-editor .view-line"))) {
      const text = el.textContent ?? "";
      const at = text.indexOf(needle);
      if (!text.includes(line) || at < 0) {
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
  }, [line.replace(/ /g, "\u00a0"), needle] as const);
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
