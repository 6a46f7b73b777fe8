"""The units the index embeds and the extractive answerer quotes: whole, clean, and the right one.

Pinned because a user reads them verbatim: a sentence cut at "e.g.", a fence marker, a table
cell without its column, or the sentence next to the fact are what made answers unreadable.
"""

from __future__ import annotations

import msgspec
import pytest

from kebab import units as units_mod
from kebab.embed.use import UniversalSentenceEncoder
from kebab.llm import Evidence
from kebab.llm.extractive import Extractive
from kebab.rag import outcome
from kebab.rag.citations import self_declared_lack
from kebab.text import is_korean
from kebab.units import is_navigation, units


def test_sentences_are_never_cut_at_abbreviations_or_inside_brackets() -> None:
    text = (
        "Use a filter (e.g. `done before tomorrow`) to hide tasks. Version 2.1 added it, "
        "i.e. in February 2022. Then it ships."
    )
    assert units(text) == [
        "Use a filter (e.g. `done before tomorrow`) to hide tasks.",
        "Version 2.1 added it, i.e. in February 2022.",
        "Then it ships.",
    ]


def test_a_code_block_is_one_unit_with_the_line_that_introduces_it() -> None:
    text = "> [!example]\n> Completed twice:\n> ```text\n> - [x] walk the dog\n>   - again\n> ```\n"
    assert units(text) == ["Completed twice:\n```text\n- [x] walk the dog\n  - again\n```"]


def test_an_indented_code_block_is_a_block_and_a_list_items_indented_paragraph_is_not() -> None:
    """CommonMark's other code block: four spaces after a blank line. Personal notes write
    shell sessions this way; read as prose, `$ pip install` and its output became sentences."""
    text = (
        "Install it like this:\n\n    $ pip install -e '.[test]'\n    Successfully installed\n\n"
        "    $ pytest\n\nThen it works. Lock it down with this line:\n\n    AllowUsers *@100.64.0.0/10"
        "\n\n- one step\n\n    still the step, not code\n"
    )
    assert units(text) == [
        "Install it like this:\n```\n$ pip install -e '.[test]'\nSuccessfully installed\n\n"
        "$ pytest\n```",
        "Then it works.",
        # one word and an address: a shape alone, but the sentence before says it is the point
        "Lock it down with this line:\n```\nAllowUsers *@100.64.0.0/10\n```",
        "- one step",
        "still the step, not code",
    ]
    # a passage (a section cut at a token target) may begin with one
    assert units("    $ make build\n    $ make test\n\nDone.") == [
        "```\n$ make build\n$ make test\n```",
        "Done.",
    ]


def test_a_block_that_only_gives_a_file_its_shape_is_not_a_unit() -> None:
    text = (
        "Runs nightly.\n\n```ini\n[Timer]\nOnCalendar=*-*-* 02:30:00\n```\n\n"
        "```nginx\nserver {\n  location / {\n    proxy_pass http://127.0.0.1:3000;\n  }\n}\n```"
        "\n\n```json\n{\n}\n```"
    )
    assert units(text) == [
        "Runs nightly.",
        "```ini\n[Timer]\nOnCalendar=*-*-* 02:30:00\n```",
        "```nginx\nserver {\n  location / {\n    proxy_pass http://127.0.0.1:3000;\n  }\n}\n```",
    ]


def test_a_one_word_command_a_sentence_points_at_is_a_unit() -> None:
    """The sentence "만약 SWAP을 비활성화하려면 아래와 같은 명령을 사용한다." then `swapoff -a`: the block
    has one word of two letters, so it was taken for a file's shape and dropped, and the
    answer ended on the sentence promising the command."""
    text = "비활성화하려면 아래와 같은 명령을 사용한다.\n\n```shell\nswapoff -a\n```"
    assert units(text) == [
        "비활성화하려면 아래와 같은 명령을 사용한다.",
        "```shell\nswapoff -a\n```",
    ]
    assert units("Done.\n\n```sh\nls -la\n```")[-1] == "```sh\nls -la\n```"  # a command


def test_the_answer_quotes_the_command_its_sentence_points_at(
    embedder: UniversalSentenceEncoder,
) -> None:
    passage = _ev(
        1,
        "리눅스 SWAP 메모리 지정",
        "SWAP 파일을 만든 뒤 재부팅해도 유지되도록 /etc/fstab 에 추가한다.\n\n"
        "만약 SWAP 공간을 비활성화 하려는 경우 아래와 같은 명령을 사용한다.\n\n"
        "```shell\nswapoff -a\n```\n",
    )
    answer = Extractive(embedder).answer("리눅스에서 스왑 끄는 명령어가 뭐였지?", [passage])
    assert "비활성화 하려는 경우" in answer and "swapoff -a" in answer, answer


def test_a_line_leading_into_an_included_file_leads_into_nothing_after_it() -> None:
    """The line "이를 `/api/v1/openapi.json`에서 제공하도록 설정하려면:" then `{* app.py *}`: the
    sentence after the include was joined to it and read as how to serve it there."""
    text = (
        "예를 들어, `/api/v1/openapi.json`에서 제공하도록 설정하려면:\n\n"
        "{* ../../docs_src/metadata/tutorial002_py310.py hl[3] *}\n\n"
        "OpenAPI 스키마를 완전히 비활성화하려면 `openapi_url=None`으로 설정합니다."
    )
    assert units(text) == [
        "예를 들어, `/api/v1/openapi.json`에서 제공하도록 설정하려면:",
        "OpenAPI 스키마를 완전히 비활성화하려면 `openapi_url=None`으로 설정합니다.",
    ]


def test_a_pointing_sentence_keeps_a_command_not_a_files_shape() -> None:
    """A review's cases: "We use nginx" is no pointer, so a block of only `}` stays out; an
    include in a list item keeps the prose after it prose, not code."""
    assert units("We use nginx as the proxy.\n\n```nginx\n}\n```") == ["We use nginx as the proxy."]
    item = "1. Create a file `main.py`:\n\n    {* ../../docs_src/app.py *}\n\n    Then run it."
    assert units(item) == ["1. Create a file `main.py`:", "Then run it."]
    assert units("```bash\necho ${!BASH*}\n```") == ["```bash\necho ${!BASH*}\n```"]


def test_table_rows_read_with_their_header() -> None:
    text = "| Abbreviation | Expanded Text |\n| --- | --- |\n| `tm` | `tomorrow` |\n"
    assert units(text) == ["Abbreviation: `tm`; Expanded Text: `tomorrow`"]


def test_comments_includes_block_markers_and_bare_links_are_not_quotable() -> None:
    text = (
        "<!-- placeholder to force blank line -->\nRun the server.\n\n"
        "{* ../../docs_src/app/tutorial001.py hl[3] *}\n\n- [[Dates]]\n- [Filters](filters.md)\n\n"
        "/// tip | 팁\n\nUse `--reload` while developing.\n\n///\n\n"
        "> More information: <https://example.com/tar>.\n"
    )
    assert units(text) == ["Run the server.", "Use `--reload` while developing."]


def test_template_tags_and_includes_in_code_are_the_code() -> None:
    """In prose, `{% for %}` is a site template's directive and `{* file *}` a file's place;
    in a code block or span they are what a Django or Jekyll note shows, and quoting the code
    without them (`<form>` and `</form>` with nothing between) teaches the wrong thing."""
    text = (
        "Add `{% csrf_token %}` to every form.\n\n{% for x in y %}\n\n"
        "```html\n<form>\n  {% csrf_token %}\n</form>\n```\n\n"
        "```Python\n{!> ../../docs_src/a.py!}\n```\n\n"
        "| arg | use |\n| --- | --- |\n| `..` | `cd ..`<br>`cd ../x` |\n"
    )
    assert units(text) == [
        "Add `{% csrf_token %}` to every form.",
        "```html\n<form>\n  {% csrf_token %}\n</form>\n```",
        "arg: `..`; use: `cd ..`<br>`cd ../x`",
    ]


def test_an_admonitions_and_a_content_tabs_body_is_prose_and_code_not_one_code_block() -> None:
    """mkdocs-material indents a `!!! tip` or `=== "Tab"` body four spaces. Read as CommonMark,
    its second paragraph was an indented code block, and its fenced block one fence inside
    another: answers quoted prose as code and showed the fence lines."""
    text = (
        "!!! tip\n    Set it in `~/.bash_profile`.\n\n    Then reload it:\n\n"
        "    ```sh\n    source .bash_profile\n    ```\n\n"
        '=== "SciPy"\n\n    ```python\n    from scipy.stats import bernoulli\n    ```\n\n'
        "Title\n===\n\n    an indented code block\n\n"
        "Use the project's interpreter.[^1]\n\n[^1]: `.venv` and the like\n\n"
        '```markdown\n!!! note "Heads up"\n    Indent the body four spaces.\n```\n\n'
        "??? no idea why this fails\n\n    $ make all\n"
    )
    assert units(text) == [
        "Set it in `~/.bash_profile`.",
        "Then reload it:\n```sh\nsource .bash_profile\n```",
        "SciPy:\n```python\nfrom scipy.stats import bernoulli\n```",
        "Title ===",
        "```\nan indented code block\n```",
        "Use the project's interpreter.[^1]",  # its footnote is an aside, not a unit
        '```markdown\n!!! note "Heads up"\n    Indent the body four spaces.\n```',  # code
        "```\n$ make all\n```",  # under a line that only starts like an admonition: code
    ]


def test_a_list_of_links_is_navigation_and_prose_is_not() -> None:
    index = "# Index\n\n- [[Backups]]\n- [[Restore]]\n- [[Redis]]\n- [[Nginx]]\n"
    assert is_navigation(index)
    assert not is_navigation("# Backups\n\nThe backup runs at 02:30.\nSee [[Restore]].\n")


def test_an_index_whose_entries_carry_a_short_gloss_is_navigation_too(
    embedder: UniversalSentenceEncoder,
) -> None:
    """`[[backup]]: nightly restic backups` names where the answer is; it is not the answer."""
    index = (
        "# Index\n\n- [[backup]]: nightly restic backups of nas01\n"
        "- [Postgres](ops/postgres.md) — the database on nas01\n- [[nginx]]: reverse proxy\n"
    )
    assert is_navigation(index)
    facts = (
        "# Ports\n\n- [[postgres]] listens on port 5433 because an old 14 cluster holds 5432\n"
        "- [[nginx]] serves ports 80 and 443 and passes the rest to the app on port 3000\n"
        "- [[redis]] is not installed on nas01 at all; the app uses the hosted one\n"
    )
    assert not is_navigation(facts)  # a link that starts a statement is not an index entry
    answer = Extractive(embedder).answer(
        "When do the nightly backups of nas01 run?",
        [_ev(1, "Index", index), _ev(2, "Schedule", "The nightly backup runs at 02:30.")],
    )
    assert answer == "The nightly backup runs at 02:30. [#2]"


def _ev(marker: int, heading: str, text: str) -> Evidence:
    return Evidence(marker, "n.md", [heading], 1, 10, text)


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("What is the default max_age for CORS?", "600"),
        ("Which version added the done date?", "1.4.0"),
        ("Which emoji marks a due date?", "📅"),
    ],
)
def test_the_answer_quotes_the_unit_holding_the_asked_for_token(
    embedder: UniversalSentenceEncoder, question: str, fact: str
) -> None:
    passage = _ev(
        1,
        "Options",
        "`max_length` limits the length of a string and is often set to 50.\n\n"
        "`max_age` sets how long browsers cache CORS responses. Defaults to `600`.\n\n"
        "The done date was added in version 1.4.0 of the plugin.\n\n"
        "Due dates are marked with the 📅 emoji, start dates with 🛫.\n",
    )
    answer = Extractive(embedder).answer(question, [passage])
    assert fact in answer.splitlines()[0] or any(fact in line for line in answer.splitlines()), (
        answer
    )


def test_a_how_many_question_quotes_the_unit_with_a_number_of_that_thing(
    embedder: UniversalSentenceEncoder,
) -> None:
    intro = _ev(1, "김치찌개", "자취할 때부터 계속 끓여 온 돼지고기 김치찌개. 2인분 기준.")
    steps = _ev(
        2,
        "끓이기",
        "1. 쌀뜨물 500ml와 김칫국물을 넣는다.\n"
        "2. 센 불에서 끓어오르면 중약불로 줄여 **15분** 끓인다.\n",
    )
    answer = Extractive(embedder).answer("김치찌개는 중약불로 몇 분 끓여야 해?", [intro, steps])
    # the steps lead; the intro, nearly as likely to answer among two passages, may follow
    lead = answer.split("\n\n")[0]
    assert "15분" in lead and lead.endswith("[#2]") and "2인분" not in lead, answer


def test_korean_questions_are_korean_with_identifiers_in_them() -> None:
    assert is_korean("CORSMiddleware allow_credentials 설정하려면?")
    assert is_korean("Redis 포트는?")
    assert not is_korean("How do I set allow_credentials in CORSMiddleware?")
    assert not is_korean("The 김치찌개 note lists the ingredients and the steps in order.")


def test_the_answer_does_not_splice_in_a_weaker_sentence_from_another_note(
    embedder: UniversalSentenceEncoder,
) -> None:
    backup = _ev(1, "Backups", "The nightly backup runs at 02:30 every day.")
    index = _ev(2, "Index", "- [[Backups]]\n- [[Restore]]\n- [[Nightly jobs]]\n")
    other = _ev(3, "Cooking", "Simmer the stew for ten minutes every night.")
    answer = Extractive(embedder).answer(
        "When does the nightly backup run?", [backup, index, other]
    )
    assert answer == "The nightly backup runs at 02:30 every day. [#1]"


@pytest.mark.parametrize(
    ("question", "answered"),
    [
        # the asker's own values are not names the notes must hold
        ("Can I give a task a due time like 14:00 on 2024.09.17?", True),
        # a long quoted message is recalled, not copied: the note words it its own way
        ("Why does changing the status say 'Cannot set status: line is not a task'?", True),
        # one name among several is context; the passage answers the question
        (
            "My on_event handler stopped running after I gave FastAPI a lifespan under Uvicorn.",
            True,
        ),
        # the question is about names the evidence lacks: refused
        ("How do I set pool_size and max_overflow for the engine?", False),
        ("What port does Redis use?", False),
    ],
)
def test_only_names_the_question_is_about_count_against_answering(
    embedder: UniversalSentenceEncoder, question: str, answered: bool
) -> None:
    """The answerer always quotes its best; the names it lacks are a figure `rag.outcome`
    weighs, and a question about names the evidence lacks is never `answered`."""
    evidence = [
        _ev(1, "Dates", "A task's due date is a day: Tasks does not support a due time."),
        _ev(2, "Status", "Changing the status only works on lines that are tasks."),
        _ev(
            3,
            "Lifespan",
            "When you pass a lifespan to FastAPI, the startup and shutdown event handlers are "
            "no longer called, under Uvicorn or any other server.",
        ),
        _ev(4, "Engine", "The engine holds the database connections; the server port is 8000."),
    ]
    chosen = Extractive(embedder).select(question, evidence)
    assert "[#" in chosen.text
    if answered:
        assert chosen.features["names_missing"] < 0.5, chosen.features
    else:
        assert chosen.features["names_missing"] >= 0.5, chosen.features
        assert outcome.after_quoting(chosen.features) == "closest", chosen.text


@pytest.mark.parametrize(
    "text",
    [
        "The session cookie carries no information about the user [#1].",
        "The text does not include a header row, so the first line is data [#1].",
        "'파일을 찾을 수 없음' 오류는 경로가 잘못되었을 때 납니다 [#1].",
        "Tasks does not support times in due dates [#1].",
        "이 설정은 재시작 없이 적용되지 않습니다 [#1].",
    ],
)
def test_factual_negatives_are_not_refusals(text: str) -> None:
    assert not self_declared_lack(text)


@pytest.mark.parametrize(
    "text",
    [
        "The notes do not contain enough evidence to answer this question.",
        "노트에 이 질문에 답할 근거가 부족합니다.",
        "The provided passages don't mention Todoist.",
        "There is no information about rate limiting in the notes.",
        "노트에서 관련 정보를 찾을 수 없습니다.",
        "제공된 자료에 관련 내용이 없습니다.",
    ],
)
def test_a_model_saying_its_evidence_is_lacking_is_a_refusal(text: str) -> None:
    assert self_declared_lack(text)


def test_a_korean_question_quotes_the_english_unit_holding_its_translated_words(
    embedder: UniversalSentenceEncoder,
) -> None:
    grouping = _ev(
        1,
        "Grouping",
        "Tasks in query results can be grouped by folder, by heading or by due date.",
    )
    sorting = _ev(2, "Sorting", "`sort by random` lists the tasks in a random order.")
    # search was surer of the first passage; the words of the second answer the question
    grouping, sorting = (
        msgspec.structs.replace(grouping, score=1.0),
        msgspec.structs.replace(sorting, score=0.0),
    )
    answer = Extractive(embedder).answer("할 일을 무작위 순서로 정렬하는 방법", [grouping, sorting])
    assert "`sort by random` lists the tasks in a random order. [#2]" in answer, answer


def test_an_answer_kebab_inserted_is_not_the_notes_own_writing() -> None:
    """Known by its footnotes: the whole answer goes, a code block it quotes included, and its
    definitions; the note's own words and numbering stay."""
    note = (
        "# Timers\n\nWhich systemd timer starts it?\n\nThe timer is:\n```ini\n[Timer]\n\n"
        "OnCalendar=*-*-* 02:30:00\n```\n[^kb-1]\n\nMy own words.[^1]\n\n[^1]: mine\n"
        '[^kb-1]: [Backups › Schedule](ops/backup.md#schedule "kb:0123456789ab") L12–L26\n'
    )
    own = units_mod.own_writing(note)
    assert len(own.split("\n")) == len(note.split("\n"))  # lines keep their numbers
    quotable = units_mod.units(own)
    assert quotable[0] == "My own words.[^1]" and not any("Timer" in u for u in quotable)
    assert units_mod.only_kebab_answers("## Asked\n\nWhen?\n\nAt 02:30.[^kb-2]\n")
    assert not units_mod.only_kebab_answers(note)


def test_an_image_with_an_attribute_list_states_nothing() -> None:
    """`![plot](./img/plot_Scaled.png){ loading=lazy }` was quoted as a line of an answer,
    twice: its styling read as words."""
    assert units_mod.is_wordless("![plot_rawdata](./img/plot_Scaled.png){ loading=lazy }")
    assert units_mod.is_wordless("- ![shot](a.png){ width=300 }")
    assert not units_mod.is_wordless("See ![shot](a.png){ loading=lazy } for the layout.")
    # links with a line break between them: a troubleshooting note's references, no answer
    assert units_mod.is_wordless("[참고자료](https://a.io/x) <br /> [참고자료22](https://b.io/y)")
    assert not units_mod.is_wordless("[참고자료](https://a.io/x) <br> 재부팅하면 된다")


def test_a_label_over_links_is_a_pointer_not_a_statement() -> None:
    """ "관련: [[deploy-process]]" was quoted as a line of an answer (a reader of the sample
    notes): a short label and links point elsewhere and state nothing."""
    assert units_mod.is_wordless("관련: [[deploy-process]]")
    assert units_mod.is_wordless("See also: [[backup]], [[postgres]]")
    assert units_mod.is_wordless("More information: [MDN guide](https://developer.mozilla.org/x)")
    assert not units_mod.is_wordless("See [[backup]] for the restore steps.")
    assert not units_mod.is_wordless("Note: restart [[nginx]] after editing.")
    assert not units_mod.is_wordless("Port: 5433")
    # a label that is no pointer states a fact by its link
    assert not units_mod.is_wordless("Owner: [[alice]]")
    assert not units_mod.is_wordless("Runs on: [[nas01]]")
    assert not units_mod.is_wordless("담당자: [[김철수]]")
