/**
 * Where `kebab serve` comes from: the `kebab.serverPath` setting, else the workspace's
 * `.venv/bin/kebab`, else `kebab` on PATH.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export interface ServerCommand {
  command: string;
  args: string[];
  source: "setting" | "venv" | "path";
}

export interface Lookup {
  setting?: string; // kebab.serverPath
  folders: string[]; // workspace folder paths, first one first
  pathEnv?: string; // PATH
  platform?: NodeJS.Platform;
  isExecutable?: (file: string) => boolean;
}

/** The command that starts the server, or why none was found (a sentence for the user). */
export function findServer(lookup: Lookup): ServerCommand | { missing: string } {
  const windows = (lookup.platform ?? process.platform) === "win32";
  const executable = lookup.isExecutable ?? isExecutable;
  const args = ["serve"];
  const setting = lookup.setting?.trim();
  if (setting) {
    const file = expandPath(setting, lookup.folders[0]);
    if (!executable(file)) {
      return { missing: `kebab.serverPath is ${setting}, which is not an executable file` };
    }
    return { command: file, args, source: "setting" };
  }
  const venvBin = windows ? path.join(".venv", "Scripts", "kebab.exe") : path.join(".venv", "bin", "kebab");
  for (const folder of lookup.folders) {
    const file = path.join(folder, venvBin);
    if (executable(file)) {
      return { command: file, args, source: "venv" };
    }
  }
  const names = windows ? ["kebab.exe", "kebab.cmd", "kebab"] : ["kebab"];
  for (const dir of (lookup.pathEnv ?? process.env.PATH ?? "").split(path.delimiter)) {
    for (const name of dir ? names : []) {
      const file = path.join(dir, name);
      if (executable(file)) {
        return { command: file, args, source: "path" };
      }
    }
  }
  return {
    missing: "kebab was not found: set kebab.serverPath, create the workspace's .venv with kebab " +
      "installed, or put kebab on PATH (pip install kebab)",
  };
}

/** `~/x`, `${workspaceFolder}/x` and paths relative to the first workspace folder, made absolute. */
export function expandPath(value: string, folder?: string): string {
  let out = value.trim();
  if (folder) {
    out = out.replace(/\$\{workspaceFolder\}/g, folder);
  }
  if (out === "~" || out.startsWith("~/")) {
    out = path.join(os.homedir(), out.slice(1));
  }
  if (!path.isAbsolute(out) && folder) {
    out = path.join(folder, out);
  }
  return out;
}

function isExecutable(file: string): boolean {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) {
      return false;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
