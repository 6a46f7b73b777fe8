"""One typed Config, validated in one place.

Sources, later ones winning: defaults, the user config dir's `kebab.toml`, the workspace's
`kebab.toml`, `KEBAB_*` environment variables, then what a front end passes (CLI flags, LSP
initializationOptions / `workspace/configuration`). No other module reads the environment for
settings; API keys are read from the environment variable a setting *names*, only when needed.
"""

from __future__ import annotations

import copy
import logging
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import platformdirs

from kebab.errors import ConfigError


class EmbedConfig(msgspec.Struct, forbid_unknown_fields=True):
    backend: Literal["use", "openai", "ollama"] = "use"
    model: str = ""  # empty: the backend's default
    endpoint: str = ""
    api_key_env: str = ""  # name of the environment variable holding the key
    batch_size: int = 64
    timeout_s: float = 60.0


class SearchConfig(msgspec.Struct, forbid_unknown_fields=True):
    k: int = 10
    mode: Literal["hybrid", "lexical", "vector"] = "hybrid"
    lexical_weight: float = 0.5  # hybrid: share of BM25 in the fused score (the rest: vectors)
    candidates: int = 50  # how deep each retriever looks before fusion


class LLMConfig(msgspec.Struct, forbid_unknown_fields=True):
    backend: Literal["extractive", "openai", "ollama"] = "extractive"
    model: str = ""
    endpoint: str = ""
    api_key_env: str = ""
    temperature: float = 0.0
    seed: int = 42
    context_tokens: int = 8192
    max_tokens: int = 1024
    connect_timeout_s: float = 5.0
    first_token_timeout_s: float = 60.0
    idle_timeout_s: float = 60.0  # longest silence mid-stream
    max_seconds: float = 300.0  # a stream that never ends is cut here
    max_retries: int = 3


class RagConfig(msgspec.Struct, forbid_unknown_fields=True):
    max_context_tokens: int = 8000
    reserve_tokens: int = 512
    # Refuse without calling a model when the best vector hit is below this cosine AND no
    # lexical hit matched a meaningful share of the question's words. A cosine means something
    # only on the scale of the model it was measured with: unset, kebab uses the value measured
    # for the index's embedding model (`rag.outcome.CALIBRATED`), and with a model it has no
    # measurement for it gates on wording alone.
    min_cosine: float | None = None
    # A question naming a name no note contains ("Kafka", "Redis") is always refused; one with
    # an everyday word no note contains ("croissant") is refused unless its best vector match
    # is at least this close (unset: the value measured for the embedding model); a word that
    # only phrases the question ("kick off", "for a while") needs a match 0.7 times as close.
    unknown_word_cosine: float | None = None
    min_lexical_coverage: float = 0.34
    # How sure the extractive answerer must be that its quote holds what was asked to call it
    # `answered` (below it: `closest`). Higher answers less often and is wrong less often:
    # docs/quality.md has the measured trade (risk-coverage tables, each corpus held out).
    answered_at: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.55
    prompt_template_version: str = "rag-v1"
    # Cite a model's unmarked (or mis-marked) sentences with the passage that supports them
    # (`citations[].by = "kebab"`); false: only the model's own `[#n]` markers count.
    attribute_citations: bool = True
    # Extras (issue 8), each off by default and skipped with the extractive backend; each is one
    # more call to the configured model, with its timeouts.
    hyde: bool = False  # embed a drafted hypothetical answer for the vector side of retrieval
    hyde_max_tokens: int = 150
    relevance_filter: bool = False  # the model scores retrieved passages 0-10 before packing
    relevance_threshold: int = 5  # passages scored below this are dropped
    detect_conflicts: bool = False  # the model lists packed passages that disagree


class Config(msgspec.Struct, forbid_unknown_fields=True):
    index_dir: str = ""  # empty: user cache dir, keyed by the root's path
    max_file_bytes: int = 4_000_000
    ignore: list[str] = []
    chunk_target_tokens: int = 320
    chunk_max_tokens: int = 640
    footnote_labels: Literal["kb", "numeric"] = "kb"
    # editors: a diagnostic on each link that reaches no note (`[[Missing note]]`); off unless
    # asked for, since a vault of drafts links notes not written yet on purpose
    unresolved_links: bool = False
    embed: EmbedConfig = msgspec.field(default_factory=EmbedConfig)
    search: SearchConfig = msgspec.field(default_factory=SearchConfig)
    llm: LLMConfig = msgspec.field(default_factory=LLMConfig)
    rag: RagConfig = msgspec.field(default_factory=RagConfig)


_SECTION_TYPES: dict[str, type[msgspec.Struct]] = {
    "embed": EmbedConfig,
    "search": SearchConfig,
    "llm": LLMConfig,
    "rag": RagConfig,
}
_SECTIONS = set(_SECTION_TYPES)
log = logging.getLogger(__name__)


def load(
    root: Path | None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Build the Config for a workspace root from every source, raising ConfigError on bad values."""
    user_file = Path(platformdirs.user_config_dir("kebab")) / "kebab.toml"
    files = [p for p in (user_file, root / "kebab.toml" if root else None) if p and p.is_file()]
    layers = [_read_toml(p) for p in files]
    layers.append(env_overrides(os.environ if env is None else env))
    return from_mapping(merged(*layers, dict(overrides or {})))


def from_mapping(data: Mapping[str, Any]) -> Config:
    """Validate a nested mapping into a Config; the error names the bad setting."""
    try:
        return msgspec.convert(dict(data), Config, strict=False)
    except msgspec.ValidationError as e:
        raise ConfigError(f"invalid kebab setting: {e}") from None


# KEBAB_* variables that are not settings but read where they are used.
_NOT_SETTINGS = {"KEBAB_MODEL_CACHE"}


def env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    """`KEBAB_LLM_BACKEND=ollama` → {"llm": {"backend": "ollama"}}; `KEBAB_INDEX_DIR` → top level.

    A KEBAB_ variable that names no setting is ignored with a warning that names it (never its
    value: `KEBAB_LLM_API_KEY=sk-…` is what many try first) and says what to do instead; it never
    stops a command that does not need it.
    """
    out: dict[str, Any] = {}
    for name, value in env.items():
        if not name.startswith("KEBAB_") or not value or name in _NOT_SETTINGS:
            continue
        key = name[len("KEBAB_") :].lower()
        section, _, rest = key.partition("_")
        if section in _SECTIONS and rest in _SECTION_TYPES[section].__struct_fields__:
            out.setdefault(section, {})[rest] = value
        elif key in Config.__struct_fields__ and key not in _SECTIONS:
            out[key] = value
        else:
            log.warning("%s is not a kebab setting; ignored. %s", name, _instead(section, rest))
    return out


def _instead(section: str, rest: str) -> str:
    if "key" in rest or "token" in rest or "secret" in rest:
        return (
            "Keep an API key in any environment variable (OPENAI_API_KEY is the usual one) and "
            "name that variable in llm.api_key_env (KEBAB_LLM_API_KEY_ENV=OPENAI_API_KEY)."
        )
    if section in _SECTIONS:
        names = ", ".join(sorted(_SECTION_TYPES[section].__struct_fields__))
        return f"The [{section}] settings are: {names}."
    return "Settings are listed in the README (Configuration)."


def default_index_dir(root: Path) -> Path:
    """The user cache dir, one folder per workspace root (named and hashed for humans and safety)."""
    import hashlib

    digest = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:12]
    return Path(platformdirs.user_cache_dir("kebab")) / f"{root.resolve().name}-{digest}"


def api_key(env_name: str) -> str | None:
    """The API key from the environment variable a setting names. Never logged, never returned."""
    return os.environ.get(env_name) or None if env_name else None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}") from None


def merged(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Settings layers merged, later ones winning key by key inside sections; the layers are
    left as they were (the one merge for files, environment, flags and LSP clients)."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, Mapping) and isinstance(out.get(key), dict):
                out[key] = merged(out[key], value)
            elif isinstance(value, Mapping):
                out[key] = merged(value)
            else:
                out[key] = copy.deepcopy(value)
    return out
