"""One object per workspace root that owns config, index, search and answering.

This is the façade both front ends (`cli`, `lsp`) call; nothing above it touches the layers below.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from kebab import config as config_mod
from kebab import links as links_mod
from kebab.config import Config
from kebab.embed import Embedder
from kebab.embed.choose import make_embedder
from kebab.errors import InvalidParams, KebabError, WorkspaceError
from kebab.filters import build, joined
from kebab.index import Index, Progress, answers, files
from kebab.llm import LanguageModel
from kebab.llm.choose import make_llm
from kebab.model import (
    QUESTION_CHARS,
    Answer,
    Chunk,
    GeneratedNote,
    Hit,
    IndexBuilding,
    IndexSummary,
    SearchMode,
    checked,
)
from kebab.paths import resolve_inside
from kebab.search import Fusion, related, search, written_scope
from kebab.text import is_korean

if TYPE_CHECKING:  # answering is imported when first asked: `status` and `search` skip it
    from kebab.model import AskRequest
    from kebab.rag.generate import NotePlan
    from kebab.rag.pipeline import OnConflicts, OnText
    from kebab.rag.retrieval import Prepared

log = logging.getLogger(__name__)


# A related note worth a link: cosine (USE multilingual v3) at least this. Measured on the
# fixtures: sections on the same subject 0.27-0.57, a section of "Nothing yet." 0.16-0.23.
RELATED_COSINE = 0.3


class Workspace:
    """A Markdown workspace and its index. Thread-safe for concurrent reads and one writer."""

    def __init__(
        self,
        root: Path | str,
        cfg: Config | None = None,
        overrides: dict[str, Any] | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        root = Path(root).expanduser()
        if not root.is_dir():
            raise WorkspaceError(f"workspace root {root} is not a folder")
        self.root = root.resolve()
        self.cfg = cfg or config_mod.load(self.root, overrides)
        index_dir = (
            Path(self.cfg.index_dir).expanduser()
            if self.cfg.index_dir
            else config_mod.default_index_dir(self.root)
        )
        self.embedder = embedder or make_embedder(self.cfg.embed)
        self.index = Index(self.root, index_dir, self.cfg, self.embedder)
        answers.ensure_schema(self.index.store)
        self._llm: LanguageModel | None = None

    @property
    def llm(self) -> LanguageModel:
        if self._llm is None:
            self._llm = make_llm(self.cfg.llm, self.embedder, self.index)
        return self._llm

    @property
    def read_only(self) -> str | None:
        """Why the index cannot be updated (it still answers as last built), or None."""
        return self.index.read_only

    @property
    def index_dir(self) -> Path:
        return self.index.dir

    async def release_model(self) -> None:
        """Close the answering model's connections; the next question opens new ones (a CLI
        run answers inside one event loop and closes before the loop does)."""
        if self._llm is not None:
            await self._llm.aclose()
            self._llm = None

    def close(self) -> None:
        self.index.close()

    async def aclose(self) -> None:
        if self._llm is not None:
            await self._llm.aclose()
        await asyncio.to_thread(self.close)  # saving vectors is disk work

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # indexing ---------------------------------------------------------------------------------
    def sync(
        self,
        progress: Progress | None = None,
        overrides: dict[str, str] | None = None,
        should_stop: Callable[[], bool] | None = None,
        reread: Collection[str] = (),
    ) -> IndexSummary:
        """Files → chunks → BM25. Returns as soon as lexical search is current; `reread` notes
        are read from their files even when size and mtime look unchanged."""
        return self.index.sync(
            overrides=overrides, progress=progress, should_stop=should_stop, reread=reread
        )

    def embed(
        self, progress: Progress | None = None, should_stop: Callable[[], bool] | None = None
    ) -> int:
        """Fill in missing vectors; hybrid search uses what exists so far."""
        return self.index.embed_pending(self.cfg.embed.batch_size, progress, should_stop)

    def preload_model(self) -> None:
        """Start loading the embedding model in the background: a caller about to check the
        index's freshness and then embed a question overlaps the two."""
        if self.embedder is not None:
            self.embedder.preload()

    def pending_vectors(self) -> int:
        """Passages not embedded yet: until they are, they are found by their words only."""
        return self.index.pending_vectors()

    def building(
        self, reading: bool, done: int | None, total: int | None, question: str = ""
    ) -> IndexBuilding | None:
        """What an answer or search made now lacks because the index is still being built
        (files still being read, passages without vectors), said in the question's language;
        None when the index is complete. The LSP and MCP front ends both say it this way."""
        pending = self.pending_vectors()
        if not reading and not pending:
            return None
        say = _BUILDING_KO if is_korean(question) else _BUILDING_EN
        parts = []
        if reading:
            parts.append(say["read"].format(done=done, total=total) if total else say["reading"])
        if pending:
            parts.append(say["pending"].format(pending=pending))
        message = say["message"].format(parts=say["join"].join(parts))
        return IndexBuilding(done, total, pending, message)

    def refresh(self, progress: Progress | None = None) -> IndexSummary:
        """sync() then embed(): the index fully current, as `kebab index` leaves it."""
        started = time.perf_counter()
        summary = self.sync(progress)
        summary.embedded = self.embed(progress)
        summary.pending_vectors = self.pending_vectors()
        summary.seconds = round(time.perf_counter() - started, 3)
        return summary

    def update_text(self, path: str, text: str) -> bool:
        return self.index.update_text(path, text)

    # reading ----------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int | None = None,
        mode: SearchMode | None = None,
        path_glob: str | None = None,
        tags: list[str] | None = None,
        where: list[str] | None = None,
    ) -> list[Hit]:
        """The best passages for `query`, limited to the notes that pass the filter given and
        the one written at the start of the query (`#ops path:infra/ restore`)."""
        s = self.cfg.search
        _within("query", query)
        if k is not None and not 1 <= k <= 200:
            raise InvalidParams(f"invalid search request: k must be 1..200, got {k}")
        written, query = written_scope(self.index, query)
        scope = joined(build(path_glob, tags, where), written)
        return search(
            self.index,
            query,
            k or s.k,
            mode or s.mode,
            scope,
            s.candidates,
            Fusion(lexical_weight=s.lexical_weight),
        )

    def related(
        self, path: str, line: int, k: int = 5, same_note: bool = False, linked: bool = True
    ) -> list[Hit]:
        """The passages elsewhere closest in meaning to the section holding `line` (1-based) of
        the note at `path`, then (`linked`) the notes it links to or from that are not among
        them, each by its closest passage, marked `linked`: none when the note is not indexed."""
        sections = self.index.store.chunks_of(path)
        around = [key for key, c in sections if c.start_line <= line] or [
            key for key, _ in sections[:1]
        ]
        if not around:
            return []
        graph = self.links(path) if linked else {}
        near = frozenset(
            link.path for kind in graph.values() for link in kind if link.path is not None
        )
        return related(self.index, around[-1], k, same_note, near if linked else frozenset())

    def related_links(self, path: str, line: int, k: int = 3, text: str | None = None) -> list[str]:
        """Links to the `k` notes most related in meaning to the section holding `line`
        (1-based) of the note at `path` (`text`: the editor's copy of it, unsaved links
        included), written as the note writes links (`links.written`): never to the note
        itself or to a note it links already, one per note, none that is only loosely close."""
        known = set(self.index.store.paths())
        if path not in known:
            raise InvalidParams(f"no note {path!r} in {self.root} (a .md file kebab indexes)")
        if text is None:
            note = files.NoteFile(path, str(self.root / path), -1, -1)
            text, _ = files.read_note(note, self.cfg.max_file_bytes)
        resolve = links_mod.resolver(known)
        have = {link.path for link in links_mod.links_in(path, text or "", resolve)}
        wiki = links_mod.writes_wikilinks(text or "", (self.root / ".obsidian").is_dir())
        out: list[str] = []
        for hit in self.related(path, line, k * 6, linked=False):
            if hit.score < RELATED_COSINE:
                break  # best first: the rest are looser still
            if hit.path == path or hit.path in have or hit.path not in known:
                continue
            have.add(hit.path)
            heading = hit.heading_path[-1] if hit.heading_path else None
            if heading is not None and heading == hit.title:
                heading = None  # the note's title: a link to the note
            out.append(links_mod.written(path, hit.path, heading, resolve, wiki, hit.title))
            if len(out) == k:
                break
        return out

    async def ask(
        self,
        request: AskRequest,
        on_text: OnText | None = None,
        on_conflicts: OnConflicts | None = None,
    ) -> Answer:
        """Answer a question with citations, streaming text pieces to `on_text`.

        On cancellation the partial answer is persisted and `errors.Cancelled` (a
        CancelledError carrying it) propagates. `on_conflicts` hears the disagreements found
        among the evidence (`rag.detect_conflicts`) before the answer starts.
        """
        from kebab.rag import pipeline

        request = _valid(request)
        return await pipeline.ask(self.index, self.cfg, self.llm, request, on_text, on_conflicts)

    async def generate_note(
        self, topic: str, output_path: str | Path, overwrite: bool = False
    ) -> GeneratedNote:
        """Write a new note on `topic` at `output_path` (absolute, or relative to the root).

        Raises WorkspaceError when the path is outside the root, a folder, or exists and
        `overwrite` is False; a refusal or a model fault comes back with `written` False.
        """
        from kebab.rag import generate

        _within("topic", topic)
        return await generate.generate(
            self.index, self.cfg, self.llm, topic, output_path, overwrite
        )

    def plan_note(self, topic: str, output_path: str | Path) -> NotePlan:
        """Retrieval and the prompt `generate_note` would use; no model is called."""
        from kebab.rag import generate

        _within("topic", topic)
        return generate.plan(
            self.index, self.cfg, self.llm, topic, self.note_path(output_path, overwrite=True)
        )

    def prepare(self, request: AskRequest) -> Prepared:
        """Retrieval, gate, packing and prompt only: what `--dry-run` shows."""
        from kebab.rag import pipeline

        return pipeline.prepare(self.index, self.cfg, self.llm, _valid(request))

    def history(self, limit: int = 20) -> list[dict[str, object]]:
        return answers.recent(self.index.store, limit)

    def stored_answer(self, answer_id: int) -> Answer | None:
        """An answer as it was saved (`answer.v1` `answer_id`), or None when there is none."""
        return answers.get(self.index.store, answer_id)

    def last_conversation(self) -> str | None:
        """The thread of the last answer saved here (`kebab ask --continue`)."""
        return answers.last_conversation(self.index.store)

    def knows_conversation(self, conversation: str) -> bool:
        """Whether an answer saved here belongs to the thread `conversation` (a follow-up on
        any other id would silently start over)."""
        return bool(answers.conversation_turns(self.index.store, conversation, limit=1))

    def links(self, path: str) -> dict[str, list[links_mod.Link]]:
        """The note's links (`links`) and the links of other notes that reach it (`backlinks`),
        from the index's link table (kept with the notes, `sync` first for a fresh one),
        resolved against the notes there now as Obsidian resolves them."""
        paths = self.index.store.paths()
        rel = self.relpath(path if Path(path).is_absolute() else self.root / path)
        if rel is None or rel not in set(paths):
            raise InvalidParams(f"no note {path!r} in {self.root} (a .md file kebab indexes)")
        resolve = links_mod.resolver(paths)
        out: dict[str, list[links_mod.Link]] = {"links": [], "backlinks": []}
        for link in self.index.store.links():
            reached = resolve(link.source, link.path) if link.path else None
            if link.source == rel:
                out["links"].append(msgspec.structs.replace(link, path=reached))
            elif reached == rel:
                out["backlinks"].append(msgspec.structs.replace(link, path=reached))
        return out

    def unresolved_links(self, path: str, text: str) -> list[links_mod.Link]:
        """The links of the note at `path` (its `text`, as the editor has it) that reach no
        indexed note: wikilinks and Markdown links to notes, not a heading of the note itself."""
        resolve = links_mod.resolver(self.index.store.paths())
        return [
            link
            for link in links_mod.links_in(path, text, resolve)
            if link.path is None and link.target
        ]

    def chunks_of(self, path: str) -> list[Chunk]:
        """The indexed passages of the note at workspace-relative `path`, in order."""
        return [c for _, c in self.index.store.chunks_of(path)]

    def inside(self, path: str | Path) -> Path | None:
        """The real path of `path` (relative to the root, or absolute) when it lies inside the
        workspace, symlinks followed; None for `../..`, `/etc/passwd` or a link out."""
        return resolve_inside(self.root, path)

    def relpath(self, path: str | Path) -> str | None:
        """Workspace-relative path of a file inside the root, or None when it is outside."""
        real = self.inside(path)
        return None if real is None else real.relative_to(self.root).as_posix()

    def note_path(self, output_path: str | Path, overwrite: bool = False) -> str:
        """Where `generate_note` would write (workspace-relative); raises WorkspaceError when
        the path is outside the root, a folder, or exists and `overwrite` is False."""
        from kebab.rag import generate

        return generate.output_path(self.root, output_path, overwrite)

    def status(self) -> dict[str, object]:
        return self.index.status()


# "The index is still being built", in the question's language (`Workspace.building`).
_BUILDING_EN = {
    "read": "{done:,} of {total:,} files read",
    "reading": "reading files",
    "pending": "{pending:,} passages not embedded yet, found by their words only",
    "join": "; ",
    "message": "The index is still being built ({parts}): "
    "ask again when it is done for a complete answer.",
}
_BUILDING_KO = {
    "read": "파일 {done:,}/{total:,}개 읽음",
    "reading": "파일을 읽는 중",
    "pending": "구절 {pending:,}개는 아직 단어로만 찾음",
    "join": ", ",
    "message": "색인을 아직 만드는 중입니다({parts}). 끝난 뒤 다시 물어보면 더 완전한 답을 얻습니다.",
}


def preload_embedded_model() -> None:
    """Start loading the embedded model in a background thread when the user's settings use it
    (one copy per process, shared by every folder); a broken config is left for the server to
    report, folder by folder."""
    try:
        if config_mod.load(None).embed.backend == "use":
            from kebab.embed.use import preload

            preload()
    except KebabError:
        pass


def _within(what: str, text: str) -> None:
    """A question (a search query, a note's topic, an earlier question) kebab reads in good
    time, or a clear error: a megabyte took eleven seconds to read on two cores (a search for
    one, three) and no note answers it."""
    if len(text) > QUESTION_CHARS:
        verb = "search for" if what == "query" else "ask about"
        raise InvalidParams(
            f"the {what} is {len(text):,} characters; kebab reads at most "
            f"{QUESTION_CHARS:,}: {verb} a part of it"
        )


def _valid(request: AskRequest) -> AskRequest:
    """The request checked against AskRequest's constraints, at the one door every front end
    uses: `kebab ask -k -3` fails here as `kebab/ask` with k = -3 does."""
    _within("question", request.question)
    for turn in request.history:  # a follow-up's search reads the questions before it
        _within("earlier question", turn.question)
    try:
        checked(request)
    except msgspec.ValidationError as e:
        raise InvalidParams(f"invalid question request: {e}") from None
    if not request.question.strip():
        raise InvalidParams("invalid question request: the question is blank")
    return request
