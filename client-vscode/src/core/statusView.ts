/**
 * `kebab/status` for people: the one status bar item (the index's state, or what kebab is doing
 * for you), and the Show status text.
 */
import type { FolderStatus, Status } from "./protocol";

export interface StatusBar {
  text: string; // with a codicon
  tooltip: string;
  busy: boolean; // poll again soon
  failed: boolean;
}

/**
 * The status bar item: indexing progress while the index builds, then notes, chunks and model.
 * `working` is what the extension is waiting on the server for ("answering"), shown when the
 * index is not building: kebab has this one item, never a second progress item beside it.
 */
export function statusBar(s: Status, working?: string): StatusBar {
  const failed = s.folders.find((f) => f.state === "failed" || f.error);
  const indexing = s.folders.find((f) => f.state === "opening" || f.state === "indexing");
  const embedding = s.folders.find((f) => (f.pending_vectors ?? 0) > 0);
  const model = modelName(s.folders[0]);
  const counts = `${s.files} note${s.files === 1 ? "" : "s"} · ${s.chunks} chunks`;
  if (failed) {
    return { text: "$(error) kebab", tooltip: `kebab: ${failed.error ?? `${failed.root} failed`}`, busy: false, failed: true };
  }
  if (indexing || embedding) {
    const f = indexing ?? embedding!;
    return { text: `$(sync~spin) kebab: ${progress(f)}`, tooltip: `kebab is indexing ${f.root}; answers use what is indexed so far`, busy: true, failed: false };
  }
  if (working) {
    return { text: `$(sync~spin) kebab: ${working}`, tooltip: `kebab is ${working}`, busy: true, failed: false };
  }
  if (!s.folders.length) {
    return { text: "$(book) kebab", tooltip: "kebab: no workspace folder open", busy: false, failed: false };
  }
  return { text: `$(book) kebab: ${counts}`, tooltip: `kebab: ${counts}${model ? ` · ${model}` : ""} · click for status`, busy: false, failed: false };
}

function progress(f: FolderStatus): string {
  const { phase, done, total } = f.progress ?? { phase: "", done: 0, total: 0 };
  if (f.state === "opening") {
    return "opening the index";
  }
  if (phase === "embedding" && total) {
    return `embedding ${done}/${total}`;
  }
  if (phase === "units" && total) {
    return `reading passages ${done}/${total}`; // sentence by sentence, after the files
  }
  if (total && f.state === "indexing") {
    return `indexing ${done}/${total} files`;
  }
  if ((f.pending_vectors ?? 0) > 0) {
    return `embedding (${f.pending_vectors} left)`;
  }
  return "indexing";
}

function modelName(f: FolderStatus | undefined): string {
  if (!f?.llm) {
    return "";
  }
  return f.llm.id && f.llm.id !== f.llm.backend ? `${f.llm.backend} ${f.llm.id}` : f.llm.backend;
}

/** Show status as plain text (the "kebab status" output view): per folder, one fact a line. */
export function statusText(s: Status): string {
  const out = [`kebab status: ${s.state} · ${s.files} notes · ${s.chunks} chunks`];
  for (const f of s.folders) {
    const rows: [string, string][] = [
      ["state", f.state + (f.state === "indexing" || f.state === "opening" || f.pending_vectors ? ` (${progress(f)})` : "")],
      ["notes", String(f.files ?? "–")],
      ["chunks", String(f.chunks ?? "–")],
      ["vectors", `${f.vectors ?? "–"}${f.pending_vectors ? ` (${f.pending_vectors} waiting)` : ""}`],
      ["answers", f.llm ? `${modelName(f)}${f.llm.endpoint ? ` at ${f.llm.endpoint}` : ""}` : "–"],
      ["embeddings", f.embedding ? `${f.embedding.backend} ${f.embedding.id} (${f.embedding.dim}-d)` : "–"],
      ["index", f.index_dir ?? "–"],
    ];
    if (f.error) {
      rows.push(["error", f.error]);
    }
    if (f.embedding_error) {
      rows.push(["embedding error", f.embedding_error]);
    }
    const width = Math.max(...rows.map(([k]) => k.length));
    out.push("", f.root, ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`));
    const skipped = f.skipped ?? [];
    if (skipped.length) {
      out.push(`  skipped (${skipped.length}):`, ...skipped.map((x) => `    ${x.path}: ${x.reason}`));
    }
  }
  return out.join("\n") + "\n";
}
