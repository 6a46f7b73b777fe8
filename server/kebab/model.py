"""Value types shared by every layer.

Plain msgspec Structs: cheap to build, typed, and serialisable to the JSON the front ends speak.
Nothing here imports anything else of kebab's.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

SearchMode = Literal["hybrid", "lexical", "vector"]
By = Literal["model", "kebab"]  # who placed a citation's marker
RefusalReason = Literal["no_chunks", "score_gate", "llm_self_judge", "cancelled", "llm_error"]
# What an answer is (`rag.outcome`): a confident answer, the passages that come closest (no claim
# made), or nothing in the notes (also a failed or cancelled answer).
Outcome = Literal["answered", "closest", "not_answered"]
Language = Literal["en", "ko"]  # the language an answer's words for people are in

PARSER_VERSION = "md-1"
CHUNKER_VERSION = "chunk-4"
INDEX_VERSION = "idx-6"  # idx-5: front-matter fields (filters); idx-6: links between notes


class Turn(msgspec.Struct):
    """An earlier question of a thread and the answer it got."""

    question: str
    answer: str


TopK = Annotated[int, msgspec.Meta(ge=1, le=200)]
Text = Annotated[str, msgspec.Meta(min_length=1)]
# A question, or a selection asked as one, with a pasted log or stack trace in it: past this,
# reading it alone takes seconds (a megabyte: eleven on two cores) and no note answers it.
QUESTION_CHARS = 20_000
Question = Annotated[str, msgspec.Meta(min_length=1, max_length=QUESTION_CHARS)]


class AskRequest(msgspec.Struct, forbid_unknown_fields=False):
    """What `kebab/ask`, `kebab ask` and the MCP `ask_notes` take. Built from user input with
    `checked()`, so a bad value is an error naming its field, whichever door it came through."""

    question: Question
    k: TopK | None = None
    mode: SearchMode | None = None
    history: list[Turn] = []
    conversation: str | None = None
    path: str | None = None  # workspace-relative note the question was asked from
    # Only notes under this glob, with every one of these tags, whose front matter holds every
    # `key=value` (`!=`, `>=`, `<=`): `kebab.filters`. The question may also start with them.
    path_glob: str | None = None
    tags: list[str] = []
    where: list[str] = []
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    seed: int | None = None
    explain: bool = False
    dry_run: bool = False


def checked(value: msgspec.Struct) -> msgspec.Struct:
    """`value` validated against its own type's constraints (a Struct built in code is not):
    raises msgspec.ValidationError whose message names the field."""
    return msgspec.convert(msgspec.to_builtins(value), type(value))


class Chunk(msgspec.Struct, frozen=True):
    """One retrievable passage: a heading section or a paragraph-bounded slice of one."""

    id: str
    path: str  # workspace-relative, forward slashes
    heading_path: list[str]
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str  # the raw Markdown lines of the passage
    content_hash: str
    tokens: int
    title: str = ""
    tags: list[str] = []


class Document(msgspec.Struct):
    """A note as the index knows it."""

    path: str
    title: str
    tags: list[str]
    aliases: list[str]
    size: int
    mtime_ns: int
    content_hash: str
    warnings: list[str] = []
    # front matter's scalar fields and lists of scalars, as YAML read them (dates as ISO text):
    # what `--where status=draft` filters on
    fields: dict[str, object] = {}


class Hit(msgspec.Struct):
    """A chunk ranked for a query, with the evidence behind its rank."""

    chunk_id: str
    path: str
    heading_path: list[str]
    start_line: int
    end_line: int
    text: str
    content_hash: str
    score: float  # fused (hybrid) or the single retriever's normalised score
    lexical_score: float | None = None  # raw BM25
    vector_score: float | None = None  # cosine similarity
    lexical_rank: int | None = None  # 1-based
    vector_rank: int | None = None
    title: str = ""
    tags: list[str] = []
    # a related passage whose note links to the note asked about, or is linked from it
    linked: bool = False


class Skipped(msgspec.Struct):
    path: str
    reason: str


class IndexSummary(msgspec.Struct):
    """What one sync did: the `kebab index --json` output."""

    root: str
    index_dir: str
    files: int
    chunks: int
    added: int
    updated: int
    deleted: int
    unchanged: int
    embedded: int
    pending_vectors: int
    skipped: list[Skipped]
    warnings: list[Skipped]
    seconds: float


class Range(msgspec.Struct):
    """An LSP range (0-based line, character) of whole cited lines."""

    start: dict[str, int]
    end: dict[str, int]


class Citation(msgspec.Struct):
    marker: int
    path: str
    uri: str
    heading_path: list[str]
    range: Range
    chunk_id: str
    content_hash: str
    score: float
    text: str
    start_line: int = 0
    end_line: int = 0
    # "model": the model placed the marker; "kebab": kebab attributed an unmarked (or
    # mis-marked) sentence to this passage because a unit of it supports the sentence.
    # None on a nearest passage (`candidates`), which supports nothing.
    by: By | None = None
    # The footnote label Insert writes for this citation in the note the question was asked
    # from (`kb-3`; `kb-1`… with no note): what every client shows. None on a nearest passage.
    label: str | None = None
    # A nearest passage as a person reads it: plain text on one line (`excerpts.excerpt`).
    excerpt: str | None = None


class ModelInfo(msgspec.Struct):
    backend: str
    id: str


class EmbeddingInfo(msgspec.Struct):
    backend: str
    id: str
    dim: int


class Retrieval(msgspec.Struct):
    trace_id: str
    mode: str
    k: int
    score_gate: float
    top_score: float
    chunks_returned: int
    chunks_used: int


class Usage(msgspec.Struct):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    first_token_ms: float | None = None
    latency_ms: float = 0.0


class Conflict(msgspec.Struct):
    a: int  # marker of one passage
    b: int  # marker of the other
    detail: str
    a_source: str = ""  # "path:start-end" of passage a (it may not be among the citations)
    b_source: str = ""


class IndexBuilding(msgspec.Struct):
    """The index was still being built when an answer was made: ask again when it is done."""

    files_done: int | None  # None: the file count is not known yet
    files_total: int | None
    vectors_pending: int  # passages whose vectors are not computed yet (searched by words only)
    message: str  # the same, in words for people


class Answer(msgspec.Struct):
    """`answer.v1`: the stable JSON every front end returns. Fields may be added, never renamed."""

    question: str
    answer: str
    markdown: str
    citations: list[Citation]
    grounded: bool
    refusal_reason: RefusalReason | None
    model: ModelInfo
    embedding: EmbeddingInfo
    prompt_template_version: str
    retrieval: Retrieval
    usage: Usage
    versions: dict[str, str]
    created_at: str
    result_hash: str
    schema: str = "answer.v1"
    candidates: list[Citation] = []  # nearest passages, listed on a refusal
    conflicts: list[Conflict] = []
    error: str | None = None  # what went wrong, for llm_error
    answer_id: int | None = None  # row id in the answers store (`id` is the caller's, in batches)
    conversation: str | None = None  # thread id, always set: pass it back to ask a follow-up
    explain: dict[str, object] | None = None
    refusal_text: str | None = None  # on a refusal: why, in words for people
    index_building: IndexBuilding | None = None  # set when asked while the index was building
    # A model answer the notes do not support (llm_self_judge): the values no passage holds,
    # then the sentences no passage supports. Shown under a warning, never as an answer.
    unsupported: list[str] = []
    # answered | closest | not_answered; set on every new answer (None: a row stored before it)
    outcome: Outcome | None = None
    # the filter the answer was limited to, as written at the start of a question
    # (`path:infra/ #ops status=draft`); None when it searched every note
    filters: str | None = None
    # The language of the answer's words for people (the question's: `text.is_korean`), "ko" or
    # "en": `refusal_text` and the `closest` sentence are written in it, and every door writes
    # its own words around the answer in it too (`Closest in your notes.` / `노트에서 가장
    # 가까운 곳.`, `Sources` / `출처`), so that a Korean answer does not sit in English chrome.
    lang: Language = "en"


class GeneratedNote(msgspec.Struct):
    """`note.v1`: what `kebab generate` and `kebab.generateNote` return."""

    topic: str
    path: str  # workspace-relative path of the note
    uri: str
    written: bool  # False: refused or failed, nothing written (see refusal_reason, error)
    markdown: str  # the note as written (or as it would have been)
    citations: list[Citation]
    unknown_markers: list[int]  # markers the model used that name no passage: dropped
    refusal_reason: RefusalReason | None
    error: str | None
    model: ModelInfo
    prompt_template_version: str
    retrieval: Retrieval
    usage: Usage
    created_at: str
    overwritten: bool = False
    schema: str = "note.v1"


def to_builtins(value: object) -> object:
    """Structs → plain JSON-able Python values (what LSP and --json send)."""
    return msgspec.to_builtins(value)


def citation_range(start_line: int, end_line: int) -> Range:
    """Whole lines, as an LSP range: from the first line's start to the line after the last."""
    return Range(
        start={"line": start_line - 1, "character": 0}, end={"line": end_line, "character": 0}
    )
