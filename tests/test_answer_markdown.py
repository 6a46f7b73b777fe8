"""What an answer inserts reads on its own as Markdown (issue 27, items 3, 4 and 6): a list
stays a list with its own numbers, sentences from different places are separate paragraphs, a
code block's marker leads into it rather than trailing it on a line of its own, and a sentence
that points at something above it is quoted with that thing or not at all. Judged on the
quoting answerer's Markdown parsed as every editor's preview parses it."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from kebab.llm import Evidence
from kebab.llm.extractive import Extractive
from kebab.llm.quoting import _between, quote, render
from kebab.units import units

_md = MarkdownIt("commonmark")

INSTALL = (
    "# Installing the CLI\n\n"
    "The CLI needs Python 3.11 or newer. It runs on Linux and macOS.\n\n"
    "1. Clone the repository.\n"
    "2. Create a virtual environment with `python3 -m venv .venv`.\n"
    "3. Activate it with `source .venv/bin/activate`.\n"
    "4. Install the package with `pip install -e .`.\n"
    "5. Check it works with `kebab --version`.\n\n"
    "Upgrading later is `git pull` and the fourth step again. Uninstalling is "
    "`pip uninstall kebab`, then deleting the folder. On Windows use WSL; the native console "
    "is not supported. The first run downloads nothing: the model ships with the package.\n"
    "A proxy is never needed. The index lives in `.kebab/` beside your notes, and deleting "
    "it only costs one rebuild. Logs go to `~/.cache/kebab/log`. Nothing else is written.\n"
)
QUERIES = (
    "# Task queries\n\n"
    "Lists what is overdue:\n\n"
    "```tasks\nnot done\ndue before today\n```\n\n"
    + " ".join(f"Filter number {n} narrows the list in its own way." for n in range(1, 14))
    + "\n\nThe same query as above, but grouped by folder, is easier to scan on a busy week.\n"
)
ROTATE = (
    "# Log rotation\n\n"
    "```\n/var/log/app/*.log {\n  weekly\n  rotate 8\n  compress\n}\n```\n\n"
    "Eight weeks of compressed logs fit in about 300 MB on the NAS.\n"
)


def _answer(embedder: object, question: str, path: str, text: str) -> str:
    evidence = [Evidence(1, path, [text.split("\n")[0].lstrip("# ")], 1, 30, text, "", 0.8)]
    return Extractive(embedder).answer(question, evidence)  # type: ignore[arg-type]


def test_a_numbered_list_of_five_steps_stays_a_list_of_five_numbered_steps(
    embedder: object,
) -> None:
    answer = _answer(embedder, "What are the steps to install the CLI?", "install.md", INSTALL)
    tokens = _md.parse(answer)
    assert len([t for t in tokens if t.type == "ordered_list_open"]) == 1, answer
    assert len([t for t in tokens if t.type == "list_item_open" and t.level == 1]) == 5, answer
    for n in range(1, 6):
        assert f"\n{n}. " in f"\n{answer}", answer
    assert "kebab --version" in answer  # the last step too


def test_sentences_are_separate_paragraphs_not_one_run_on_line(embedder: object) -> None:
    answer = _answer(embedder, "Where do the index and the logs live?", "install.md", INSTALL)
    quoted = [ln for ln in answer.split("\n") if ln.strip()]
    paragraphs = [t for t in _md.parse(answer) if t.type == "paragraph_open"]
    assert len(quoted) >= 2 and len(paragraphs) == len(quoted), answer


def test_a_code_blocks_marker_leads_into_it_never_alone_after_it(embedder: object) -> None:
    answer = _answer(embedder, "What does the log rotation config look like?", "rot.md", ROTATE)
    lines = answer.split("\n")
    assert "rotate 8" in answer, answer
    assert not [ln for ln in lines if ln.strip().startswith("[#") and ln.strip().endswith("]")]
    opening = next(i for i, ln in enumerate(lines) if ln.startswith("```"))
    assert opening > 0 and "[#1]" in lines[opening - 1], answer


@pytest.mark.parametrize(
    ("heading", "caption"),
    [
        ("Rotation", "Rotation: [#1]"),
        ("`Object`의 길이 체크는 `Object.keys`를 사용한다.", "`Object.keys`를 사용한다. [#1]"),
        ("3. VS Code", "3\\. VS Code: [#1]"),
    ],
)
def test_a_block_without_a_lead_in_is_captioned_by_its_heading_as_it_reads(
    heading: str, caption: str
) -> None:
    """A heading that is a sentence was captioned "…사용한다.:", and "3. VS Code:" rendered as
    the third item of a numbered list holding the caption."""
    text = quote('```json\n{ "files.autoSave": "on" }\n```', 1, "q", heading)
    assert text.split("\n")[0].endswith(caption), text
    first = _md.parse(text)[0]
    assert first.type == "paragraph_open", text


RESTART = (
    "# sshd keep-alive\n\n"
    "Edit the server's config:\n\n"
    "```shell\n$ sudo vim /etc/ssh/sshd_config\n```\n\n"
    "```shell\nTCPKeepAlive no\nClientAliveInterval 10\n```\n\n"
    "Restart the service afterwards.\n\n"
    "```shell\n$ sudo service sshd restart\n```\n\n"
    "또는\n\n"
    "```shell\n$ sudo systemctl restart sshd\n```\n"
)


def test_blocks_a_note_joins_read_as_it_joins_them_not_under_a_heading_each() -> None:
    """Every block without a line of its own was captioned with its heading: the two ways to
    restart read as two steps, the note's "또는" gone."""
    ev = Evidence(1, "sshd.md", ["sshd keep-alive"], 1, 20, RESTART, "", 0.8)
    found = [(ev, u) for u in units(RESTART)]
    text = render(found, list(range(len(found))), "how do I restart sshd?")
    assert "restart\n```\n\n또는 [#1]\n```shell\n$ sudo systemctl restart sshd" in text, text
    # every block still has a marker leading into it (Insert finds an answer's end by them)
    fences = [t for t in _md.parse(text) if t.type == "fence"]
    assert len(fences) == 4 and text.count("[#1]\n```") == 4, text


@pytest.mark.parametrize(
    ("between", "joins"),
    [
        ("\n\nor\n\n", "or"),
        ("\n\n또는\n\n", "또는"),
        ("\n\nAlternatively:\n\n", "Alternatively:"),
        ("\n\n", None),  # nothing: the heading says where it is from
        ("\n\nThen restart it once more.\n\n", None),  # a sentence, not a joining word
        ("\n\n2.\n\n", None),
        ("\n\n```\nls\n```\n\nor\n\n", None),  # a block left out lies between
    ],
)
def test_only_a_joining_word_alone_between_two_blocks_leads_into_the_second(
    between: str, joins: str | None
) -> None:
    first, second = "```yaml:compose.yml\nstop: nginx\n```", '```bash title="x"\nstart nginx\n```'
    text = f"# Nginx\n\n{first}{between}{second}\n"
    assert _between(text, first, second) == joins


def test_a_joining_word_is_not_read_after_a_line_the_passage_repeats() -> None:
    """`git pull` twice: which one the quote holds is not known, so nothing is assumed."""
    text = "```\ngit pull\n```\n\nor\n\n```\ngit fetch\n```\n\nLater:\n\n```\ngit pull\n```\n"
    assert _between(text, "```\ngit pull\n```", "```\ngit fetch\n```") is None


def test_a_sentence_pointing_above_is_quoted_with_what_it_points_at(embedder: object) -> None:
    answer = _answer(
        embedder, "Which overdue view is easier to scan on a busy week?", "q.md", QUERIES
    )
    assert "same query as above" in answer and "due before today" in answer, answer


COMPOSE = (
    "## 해결\n"
    "- ![image](https://github.com/example/assets/c8520ec6-82e4-4653-ac1f-1c0b57ba1ce4)\n"
    "- 위와 같이 도커 컴포즈 실행 시 `-p` 명령어 사용해 프로젝트 명 지정!\n"
)


def test_a_screenshot_alone_is_never_the_answer(embedder: object) -> None:
    """A fix written as a screenshot and a sentence is answered with the sentence: the image's
    list item, quoted alone, said nothing (it was, with confidence)."""
    answer = _answer(
        embedder,
        "도커 컴포즈 컨테이너 이름 앞에 붙는 프로젝트명 바꾸는 옵션?",
        "compose.md",
        COMPOSE,
    )
    assert "`-p`" in answer, answer
    assert "![image]" not in answer, answer


GUARD = (
    "# Double submits\n\n"
    "People double-click save in the admin and create duplicate records. I disable the form "
    "for two seconds after a submit, so it can never stay stuck.\n\n"
    "I added this to the admin's base template:\n\n"
    "```javascript\n"
    "function protectForm(form) {\n"
    "  var locked = false;\n"
    "  form.addEventListener('submit', (ev) => {\n"
    "    if (locked) {\n"
    "      ev.preventDefault();\n"
    "      return;\n"
    "    }\n"
    "    locked = true;\n"
    "    setTimeout(() => {\n"
    "      locked = false;\n"
    "    }, 2000);\n"
    "  });\n"
    "}\n"
    "window.addEventListener('load', () => {\n"
    "  Array.from(document.querySelectorAll('form')).forEach(protectForm);\n"
    "});\n"
    "```\n"
)


def test_a_code_block_of_twenty_lines_is_quoted_whole(embedder: object) -> None:
    """A snippet a note gives as its answer is read whole when it fits a screen: cut to the
    lines most like the question, the `setTimeout` that unlocks the form fell under `...`."""
    answer = _answer(
        embedder,
        "What JS stops a second submit but never leaves the form stuck?",
        "double-submit.md",
        GUARD,
    )
    assert "preventDefault" in answer and "setTimeout" in answer and "2000" in answer, answer
    assert "\n...\n" not in answer, answer


KINDS = (
    "# Set operators\n\n"
    "A set operator combines the rows of several SELECT statements into one result. "
    "Both SELECT clauses need the same number of columns. "
    "The columns at each position need compatible types, not the same ones. "
    "The kinds are as follows. "
    "Oracle writes MINUS where MSSQL writes EXCEPT.\n\n"
    "- `UNION`: union; duplicate rows become one\n"
    "- `UNION ALL`: union; duplicate rows are all kept\n"
    "- `INTERSECT`: rows in both\n"
    "- `EXCEPT`: rows in the first only\n\n"
    "A set operator sorts nothing unless asked. ORDER BY goes after the last SELECT. "
    "Parentheses group the operators. Column names come from the first SELECT. "
    "Views may use them too.\n"
)


POSITIVE = (
    "# Positive numbers in TypeScript\n\n"
    "TypeScript's `number` type allows every number. "
    "To allow only positive values, without -1 or -2, you declare a type of your own. "
    "The Stack Overflow answer below explains it.\n\n"
    "https://stackoverflow.com/questions/21224922/non-negative-integer-in-typescript\n\n"
    "```typescript\n"
    "declare type PositiveNumber<N extends number> = number extends N\n"
    "\t? N\n"
    "\t: `${N}` extends `-${string}`\n"
    "\t\t? never\n"
    "\t\t: N;\n"
    "```\n\n"
    "It works on literals only. A variable typed `number` passes unchecked. "
    "Generic functions need the type parameter spelled out. The error reads as a type error. "
    "Editors show it at once. Tests need no change. Runtime checks are still wise. "
    "Libraries like zod check at runtime. The two go well together.\n"
)


@pytest.mark.parametrize(
    ("question", "path", "text", "lead_in", "follows"),
    [
        (  # "The kinds are as follows." with the list after it
            "What must the columns of two SELECT clauses have in common to combine them?",
            "sets.md",
            KINDS,
            "as follows",
            ["`UNION ALL`", "`EXCEPT`: rows"],
        ),
        (  # "The answer below explains it.", a link, then the type it points at
            "Can a TypeScript type reject negative numbers at compile time?",
            "positive.md",
            POSITIVE,
            "below explains it",
            ["PositiveNumber", "never"],
        ),
    ],
)
def test_a_sentence_that_introduces_what_follows_is_quoted_with_it(
    embedder: object, question: str, path: str, text: str, lead_in: str, follows: list[str]
) -> None:
    """A sentence that announces a list or a block, quoted without it, promises what the answer
    leaves out: the list right after it, or the block after one more unit (a link), comes too."""
    answer = _answer(embedder, question, path, text)
    assert lead_in in answer, answer
    assert all(f in answer for f in follows), answer


TMUX = (
    "# tmux\n\n"
    "> Terminal multiplexer.\n\n"
    "- Start a new named session:\n\n`tmux new -s {{name}}`\n\n"
    "- Detach from the current session (inside a tmux session):\n\n`<Ctrl b><d>`\n\n"
    "- Kill a session by target name:\n\n`tmux kill-session -t {{name}}`\n\n"
    "In Java the map is a `Map<String, List<Integer>>`; <abbr title='terminal'>TTY</abbr> "
    "is the device.\n"
)


def test_what_a_code_span_holds_is_quoted_as_written_not_read_as_html(embedder: object) -> None:
    """`<Ctrl b><d>` in backticks is the keys to press, not an HTML tag: quoted as an empty
    code span, the answer told a person to press nothing. Inline HTML in prose still reads as
    its text."""
    answer = _answer(embedder, "How do I detach from a tmux session?", "tmux.md", TMUX)
    assert "`<Ctrl b><d>`" in answer, answer
    assert "``" not in answer.replace("```", ""), answer
    java = _answer(embedder, "What type is the map in Java, and what is TTY?", "tmux.md", TMUX)
    assert "`Map<String, List<Integer>>`" in java, java
    assert "<abbr" not in java and "TTY" in java, java
    stray = "# Make\n\nIf a<b then run `make` and press <kbd>Ctrl</kbd> to stop it.\n"
    make = _answer(embedder, "When do I run make?", "make.md", stray)
    assert "a<b then run `make` and press Ctrl to stop" in make, make  # a `<` is not a tag
    table = (
        "# cd\n\n| argument | examples |\n| --- | --- |\n"
        "| `..` | `cd ..`<br>`cd ../Pictures`<ul><li>`cd ../../Downloads`</li></ul> |\n"
    )
    cd = _answer(embedder, "How do I go up to the parent folder with cd?", "cd.md", table)
    # a line or list break between spans, not one long span of the three run together
    assert "`cd ..` `cd ../Pictures` `cd ../../Downloads`" in cd, cd


JOURNAL = (
    "# journalctl\n\n> Query the systemd journal.\n\n"
    "- Show the latest lines and follow new messages:\n\n`journalctl -n 20 -f`\n\n"
    "- Show all error messages from the previous boot:\n\n`journalctl -b -1 -p 3`\n\n"
    "- Show all messages by a specific unit:\n\n`journalctl -u {{unit}}`\n\n"
    "- Show all messages by a specific process:\n\n`journalctl _PID={{pid}}`\n\n"
    "- Filter messages within a time range:\n\n`journalctl --since yesterday --until now`\n\n"
    "- Delete journal logs which are older than 2 days:\n\n`journalctl --vacuum-time 2d`\n"
)


def test_the_entry_asked_about_leads_a_menu_of_commands(embedder: object) -> None:
    """A cheat sheet's bullets are a menu, each its own command: the one asked about was
    quoted last of six. It now leads the list; the whole menu is still there, one list."""
    answer = _answer(
        embedder, "how do I throw away journal logs older than two days?", "j.md", JOURNAL
    )
    items = [line for line in answer.split("\n") if line.startswith("- ")]
    assert len(items) == 6 and "--vacuum-time 2d" in items[0], answer
    tokens = _md.parse(answer)
    assert len([t for t in tokens if t.type == "bullet_list_open"]) == 1, answer


CRLF = (
    "## 문제\n- `$'\\r': command not found`\n\n## 해결\n"
    "- 파일 내 `DOS` `UNIX` 의 개행 방식이 서로 달라서 생기는 문제\n"
    "  - 윈도우의 개행 문자 방식 `CR LF`\n"
    "  - 리눅스의 개행 문자 방식 `LF`\n"
    "- `Notepad++` 에서 편집\n"
    "  1. 편집 메뉴의 EOL 변환\n"
    "  2. `UNIX` 로 변경하기\n"
)


def test_a_nested_list_is_quoted_nested(embedder: object) -> None:
    """A sub-point quoted flush with its parent reads as one more sibling: the note's nesting
    is kept, each child at its parent's text column, so every editor's preview nests it."""
    answer = _answer(embedder, "윈도우에서 만든 쉘 스크립트가 \\r 때문에 안 돌아요", "sh.md", CRLF)
    assert "\n  - 윈도우의 개행 문자 방식 `CR LF`" in answer, answer
    assert "\n  1. 편집 메뉴의 EOL 변환" in answer, answer
    nested = [t for t in _md.parse(answer) if t.type.endswith("list_open") and t.level > 0]
    assert len(nested) == 2, answer
    setup = "# Setup\n\n- Setup\n  - Install deps\n- Install\n"
    ev = Evidence(1, "s.md", ["Setup"], 1, 5, setup, "", 0.8)
    found = [(ev, unit) for unit in units(setup)]
    # "- Install" is its own line, not the longer sub-item that starts like it
    assert render(found, [0, 2], "") == "- Setup [#1]\n- Install [#1]"
