"""Settings from the client: `initializationOptions` and `workspace/configuration` (section
`kebab`), on top of `kebab.toml` and `KEBAB_*` (which `config.load` reads).

Everything is validated here, once. A bad value never stops the server: the setting is dropped,
the user is told which one and why (`window/showMessage`), and the default applies.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer

from kebab import config
from kebab.config import Config
from kebab.errors import ConfigError
from kebab.lsp.params import plain

log = logging.getLogger(__name__)

SECTION = "kebab"
_WHERE = re.compile(r" - at `\$\.?([^`]*)`$")
_UNKNOWN = re.compile(r"unknown field `([^`]+)`")
_TIMEOUT_S = 10.0


def client_options(raw: Any) -> dict[str, Any]:
    """The kebab settings in a client payload: `{"kebab": {...}}` or the settings themselves."""
    value = plain(raw)
    if not isinstance(value, dict):
        return {}
    inner = value.get(SECTION)
    return dict(inner) if isinstance(inner, dict) else value


def clean(options: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(options without the invalid settings, one message per dropped setting)."""
    kept = copy.deepcopy(dict(options))
    problems: list[str] = []
    for _ in range(50):  # each round drops one bad setting
        try:
            config.from_mapping(kept)
            return kept, problems
        except ConfigError as e:
            message = str(e)
            path = _bad_path(message)
            if not path or not _drop(kept, path):
                return {}, [*problems, f"{message}; using the defaults for every client setting"]
            problems.append(f"{message} (setting `{'.'.join(path)}` ignored)")
    return {}, [*problems, "too many invalid kebab settings; using the defaults"]


def folder_config(root: Path, options: Mapping[str, Any]) -> tuple[Config, list[str]]:
    """The Config for one folder: kebab.toml and env under valid client options."""
    try:
        return config.load(root, options), []
    except ConfigError as e:  # kebab.toml or KEBAB_* is broken: the client's options still apply
        return config.from_mapping(options), [f"{e}; {root / 'kebab.toml'} and KEBAB_* ignored"]


async def pull(ls: LanguageServer, scope_uris: list[str]) -> dict[str, dict[str, Any]]:
    """`workspace/configuration` for section `kebab`, per folder; {} when the client has none."""
    if not scope_uris or not get_capability(
        ls.client_capabilities, "workspace.configuration", False
    ):
        return {}
    items = [types.ConfigurationItem(scope_uri=uri, section=SECTION) for uri in scope_uris]
    try:
        result = await asyncio.wait_for(
            ls.workspace_configuration_async(types.ConfigurationParams(items=items)), _TIMEOUT_S
        )
    except Exception as e:  # the client failed to answer: keep what we have
        log.warning("workspace/configuration failed: %s", e)
        return {}
    values = list(result or [])
    return {
        uri: client_options(values[i]) if i < len(values) else {}
        for i, uri in enumerate(scope_uris)
    }


def show(ls: LanguageServer, problems: list[str]) -> None:
    for problem in dict.fromkeys(problems):
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=f"kebab: {problem}")
        )


def _bad_path(message: str) -> list[str]:
    where = _WHERE.search(message)
    path = [p.split("[")[0] for p in where.group(1).split(".")] if where else []
    unknown = _UNKNOWN.search(message)
    if unknown:
        path.append(unknown.group(1))
    return [p for p in path if p]


def _drop(options: dict[str, Any], path: list[str]) -> bool:
    node: Any = options
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and path[-1] in node:
        del node[path[-1]]
        return True
    return False
