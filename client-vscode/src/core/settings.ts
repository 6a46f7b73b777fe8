/**
 * The extension's `kebab.*` settings → the server's config keys (server/kebab/config.py).
 *
 * Only settings the user set are sent: an unset one leaves the decision to the workspace's
 * `kebab.toml`, `KEBAB_*` and the server's defaults. Empty strings count as unset. The API key's
 * *name* travels (`llm.api_key_env`); the key itself never leaves the environment.
 */

/** Setting (under `kebab.`) → path in the server's config mapping. */
export const SETTING_KEYS: Readonly<Record<string, readonly string[]>> = {
  "llm.backend": ["llm", "backend"],
  "llm.endpoint": ["llm", "endpoint"],
  "llm.model": ["llm", "model"],
  "llm.apiKeyEnv": ["llm", "api_key_env"],
  "search.k": ["search", "k"],
  "search.mode": ["search", "mode"],
  "rag.answeredAt": ["rag", "answered_at"],
  indexDir: ["index_dir"],
};

export type ServerOptions = {
  llm?: { backend?: string; endpoint?: string; model?: string; api_key_env?: string };
  search?: { k?: number; mode?: string };
  rag?: { answered_at?: number };
  index_dir?: string;
};

/**
 * The server options for the settings `read` returns (undefined: not set by the user).
 * `expand` resolves paths (`~`, `${workspaceFolder}`) for `indexDir`.
 */
export function serverOptions(read: (setting: string) => unknown,
  expand: (path: string) => string = (p) => p): ServerOptions {
  const out: Record<string, unknown> = {};
  for (const [setting, path] of Object.entries(SETTING_KEYS)) {
    let value = read(setting);
    if (value === undefined || value === null || (typeof value === "string" && !value.trim())) {
      continue;
    }
    if (setting === "indexDir" && typeof value === "string") {
      value = expand(value.trim());
    }
    let node = out;
    for (const key of path.slice(0, -1)) {
      node = (node[key] ??= {}) as Record<string, unknown>;
    }
    node[path[path.length - 1]] = value;
  }
  return out as ServerOptions;
}
