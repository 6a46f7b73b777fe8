/**
 * kebab's custom LSP requests and `answer.v1`, and `ask()`: one `kebab/ask` request whose answer
 * streams as `$/progress` reports on the request's workDoneToken (DESIGN.md, "Streaming").
 *
 * No `vscode` import: the extension calls this through vscode-languageclient, the tests through a
 * plain vscode-jsonrpc connection to `kebab serve`.
 */
import {
  CancellationToken,
  Disposable,
  ExecuteCommandRequest,
  NotificationType,
  ProgressToken,
  ProgressType,
  RequestType,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from "vscode-languageserver-protocol";

// answer.v1 -----------------------------------------------------------------------------------
export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface Citation {
  marker: number;
  path: string; // workspace-relative
  uri: string;
  heading_path: string[];
  range: Range; // whole cited lines
  chunk_id: string;
  content_hash: string;
  score: number;
  text: string;
  start_line?: number; // 1-based, inclusive
  end_line?: number;
  by?: "model" | "kebab" | null; // who placed the marker (kebab: an unmarked sentence it attributed)
  /** The footnote label Insert writes for it in the note asked from (`kb-3`, or `3` with numeric labels); null on a candidate or from an older server. */
  label?: string | null;
  /** A nearest passage (`candidates`) as a person reads it: plain text on one line, at most 240 characters; null from an older server. */
  excerpt?: string | null;
}

export type RefusalReason = "no_chunks" | "score_gate" | "llm_self_judge" | "cancelled" | "llm_error";

export interface Answer {
  schema: string; // "answer.v1"
  question: string;
  answer: string; // model text with [#n] markers
  markdown: string; // [^kb-n] references and their definitions (links workspace-relative)
  citations: Citation[];
  grounded: boolean;
  /** answered (a confident answer) | closest (passages that may hold it, no claim) | not_answered */
  outcome?: "answered" | "closest" | "not_answered" | null;
  refusal_reason: RefusalReason | null;
  model: { backend: string; id: string };
  embedding: { backend: string; id: string; dim: number };
  prompt_template_version: string;
  retrieval: {
    trace_id: string;
    mode: string;
    k: number;
    score_gate: number;
    top_score: number;
    chunks_returned: number;
    chunks_used: number;
  };
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    first_token_ms: number | null;
    latency_ms: number;
  };
  versions: Record<string, string>;
  created_at: string;
  result_hash: string;
  candidates?: Citation[]; // nearest passages, on a refusal
  unsupported?: string[]; // a model answer the notes do not support: what they do not hold
  conflicts?: { a: number; b: number; detail: string; a_source?: string; b_source?: string }[];
  error?: string | null;
  answer_id?: number | null; // the stored answer (kebab.insertAnswer takes it)
  conversation?: string | null; // the thread, always set by the server: send it back to follow up
  refusal_text?: string | null; // on a refusal: why, in words for people (refusal_reason is for tools)
  index_building?: IndexBuilding | null; // set when the answer was made while the index was building
  filters?: string | null; // the notes it was limited to, as written: `#ops path:infra/ status=draft`
  lang?: "en" | "ko" | null; // the language of its words for people (the question's); absent on older answers: "en"
}

/** answer.v1 `index_building`: the index was still being built when the answer was made. */
export interface IndexBuilding {
  files_done: number | null;
  files_total: number | null;
  vectors_pending: number;
  message: string; // the same, in words for people
}

// requests ------------------------------------------------------------------------------------
export type SearchMode = "hybrid" | "lexical" | "vector";

export interface Turn {
  question: string;
  answer: string;
}

export interface AskParams {
  question: string;
  k?: number;
  mode?: SearchMode;
  history?: Turn[];
  uri?: string; // the note the question was asked from
  temperature?: number;
  seed?: number;
  explain?: boolean;
  conversation?: string; // a follow-up: the thread of the answer it follows (none: a new thread)
  workDoneToken?: ProgressToken;
}

export interface SearchParams {
  query: string;
  k?: number;
  mode?: SearchMode;
  path_glob?: string;
  tag?: string;
  uri?: string;
}

export interface Hit {
  path: string;
  uri: string;
  heading_path: string[];
  range: Range;
  score: number;
  text: string;
  chunk_id: string;
  content_hash: string;
  start_line: number;
  end_line: number;
  title?: string;
  lexical_score?: number | null;
  vector_score?: number | null;
  linked?: boolean; // kebab/related: its note links to the note asked about, or from it
}

/** `kebab/related`: the section under `position` in the note `uri`. */
export interface RelatedParams {
  uri: string;
  position: Position;
  k?: number; // 1-50, the server's default 5
  same_note?: boolean; // also the note's other sections (never the section itself)
}

export interface FolderStatus {
  uri: string;
  root: string;
  state: "opening" | "indexing" | "ready" | "failed" | "closed";
  progress: { phase: string; done: number; total: number };
  error: string | null;
  files?: number;
  chunks?: number;
  vectors?: number;
  pending_vectors?: number;
  index_dir?: string;
  embedding?: { backend: string; id: string; dim: number } | null;
  embedding_error?: string | null;
  skipped?: { path: string; reason: string }[];
  llm?: { backend: string; id: string; endpoint: string | null };
}

export interface Status {
  state: "idle" | "indexing" | "ready";
  folders: FolderStatus[];
  files: number;
  chunks: number;
}

// Typed requests: a plain string method would send the params as an array.
export const AskRequest = new RequestType<AskParams, Answer, void>("kebab/ask");
export const SearchRequest = new RequestType<SearchParams, { hits: Hit[] }, void>("kebab/search");
export const RelatedRequest = new RequestType<RelatedParams, { hits: Hit[] }, void>("kebab/related");
export const StatusRequest = new RequestType<Record<string, never>, Status, void>("kebab/status");

/** The server command that writes an answer into a note, footnotes and all (workspace/executeCommand). */
export const INSERT_ANSWER = "kebab.insertAnswer";

/**
 * The server command behind the code action "Link related notes" (kind `refactor.rewrite`, on a
 * heading or a selection): (uri, line) — a `Related: ` line of links to the notes most related to
 * that section, written after its text with workspace/applyEdit. vscode-languageclient registers
 * it from the server's executeCommandProvider; the light bulb runs it with the action's arguments.
 */
export const LINK_RELATED = "kebab.linkRelated";

export interface Linked {
  applied: boolean; // false, with an Info message, when no related note is left to link
  links: string[]; // as written: `[[name#Heading]]` or `[Title › Heading](rel/path.md#slug)`
}

export interface Inserted {
  applied: boolean; // the editor took the server's workspace/applyEdit
  replaced?: boolean; // it took the place of kebab's earlier answer under the line (asked again)
  answer: Answer;
}

/** What `ask()` and `insertAnswer()` need of a connection: vscode-languageclient's LanguageClient or a MessageConnection. */
export interface Rpc {
  sendRequest<P, R, E>(type: RequestType<P, R, E>, params: P, token?: CancellationToken): Promise<R>;
  sendNotification<P>(type: NotificationType<P>, params?: P): Promise<void>;
  onProgress<P>(type: ProgressType<P>, token: string | number, handler: (params: P) => void): Disposable;
}

/** One event of an answer's stream, in the order the server sent them. */
export type StreamEvent =
  | { kind: "begin"; message?: string } // message: the index status, not answer text
  | { kind: "text"; text: string; soFar: string } // the next piece of answer text
  | { kind: "end"; message?: string }; // a short outcome ("answered with 2 citations")

export interface Asked {
  answer: Answer;
  streamed: string; // the concatenated report messages
  reports: number;
  token: ProgressToken;
}

let tokens = 0;

/** A progress token no other request of this process uses. */
export function newToken(prefix = "kebab-ask"): string {
  tokens += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${tokens}`;
}

/**
 * Ask one question: stream the answer text to `onEvent` as the server reports it, resolve to the
 * whole answer.v1. `stop()` on the returned handle asks the server to stop generating
 * (`window/workDoneProgress/cancel`); the request then resolves to the cancelled answer.
 */
export function ask(rpc: Rpc, params: AskParams, onEvent: (e: StreamEvent) => void = () => {},
  cancel?: CancellationToken): { result: Promise<Asked>; stop: () => void; token: ProgressToken } {
  const token = params.workDoneToken ?? newToken();
  let soFar = "";
  let reports = 0;
  const subscription = rpc.onProgress(WorkDoneProgress.type, token,
    (value: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
      if (value.kind === "begin") {
        onEvent({ kind: "begin", message: value.message });
      } else if (value.kind === "report") {
        if (value.message) {
          soFar += value.message;
          reports += 1;
          onEvent({ kind: "text", text: value.message, soFar });
        }
      } else if (value.kind === "end") {
        onEvent({ kind: "end", message: value.message });
      }
    });
  const result = rpc.sendRequest(AskRequest, { ...params, workDoneToken: token }, cancel)
    .then((answer) => ({ answer, streamed: soFar, reports, token }))
    .finally(() => subscription.dispose());
  const stop = () => {
    void rpc.sendNotification(WorkDoneProgressCancelNotification.type, { token });
  };
  return { result, stop, token };
}

/**
 * Insert a stored answer (answer.v1 `id`) under `line` (0-based) of the note at `uri`: the server
 * renders it for that note (links relative to it, the next free `[^kb-n]` labels, definitions at
 * its end) and applies the edit itself with workspace/applyEdit. Rejects with InvalidParams when
 * no grounded answer has that id.
 */
export function insertAnswer(rpc: Pick<Rpc, "sendRequest">, uri: string, line: number, answerId: number): Promise<Inserted> {
  return rpc.sendRequest(ExecuteCommandRequest.type, { command: INSERT_ANSWER, arguments: [uri, line, null, answerId] });
}
