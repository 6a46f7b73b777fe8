"""Whether Insert can write the answers kebab gives, and find each again to replace it: every
`answered` answer of a `kebab eval --answers` run, under a question in four hosts (text after
it, the note's list after it, a task item with a sub-item, a callout). Prints one JSON object:
per host, how many Insert writes (`placement.keeps_structure`) and how many it replaces in place
when asked again (`footnotes.answer_below`, then the same note back).

    .venv/bin/python bench/insert_shapes.py RUN.jsonl
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from kebab.footnotes import answer_below
from kebab.placement import answer_text, keeps_structure

HOSTS = {
    "text_after": ["# Inbox", "", "Q?", "", "My own text.", ""],
    "list_after": ["# Inbox", "", "Q?", "", "- my item", "- another", ""],
    "task_item": ["- [ ] Q?", "  - my sub-item", "- [ ] next"],
    "callout": ["> [!question] Q?", "", "after"],
}
MARKER = re.compile(r"\s*\[#(\d+)\]")


def written(lines: list[str], line: int, end: int, body: str) -> list[str]:
    """The note with `body` under `line`, in place of lines up to `end`."""
    text, stop = answer_text(lines, line, end, body)
    return lines[:line] + (lines[line] + text).split("\n") + lines[stop + 1 :]


def main(run: str) -> None:
    rows = [json.loads(s) for s in Path(run).read_text(encoding="utf-8").splitlines() if s]
    bodies = [
        MARKER.sub(lambda m: f"[^kb-{m[1]}]", r["answer"]).strip()
        for r in rows
        if r.get("outcome") == "answered"
    ]
    out: dict[str, object] = {"answers": len(bodies)}
    for name, lines in HOSTS.items():
        line = next(i for i, s in enumerate(lines) if "Q?" in s)
        writes = again = 0
        for body in bodies:
            if not keeps_structure(lines, line, body):
                continue
            writes += 1
            once = written(lines, line, line, body)
            end = answer_below(once, line)
            again += end is not None and written(once, line, end, body) == once
        out[name] = {"written": writes, "replaced_in_place": again}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
