"""A follow-up that changes the subject gets its own answer, not the previous one again (issue
27, item 7): its own words lead, and the thread fills in only what it leaves out (`them` is the
tasks, the service is sshd), over the real index and the embedded answerer."""

from __future__ import annotations

import pytest

from conftest import MakeWorkspace
from kebab.rag.asked import left_out
from llm_server import ask

SORTING = """# Sorting tasks

## Sort by due date

Add `sort by due` to a tasks query to list the tasks with the earliest due date first.
Tasks without a due date are listed last.

## Sort by priority

Add `sort by priority` to a tasks query to list the highest priority tasks first.
Use `sort by priority reverse` to put the lowest priority first.
"""
SSHD = """# Linux `sshd` 설정

리눅스 SSH 서버의 설정은 `/etc/ssh/sshd_config` 파일에 있다.

```shell
$ sudo vim /etc/ssh/sshd_config
```

## 접속 유지

```shell
TCPKeepAlive no
ClientAliveInterval 10
```

## 재시작

변경사항을 적용하려면 `sshd` 서비스를 재시작해야 한다.

```shell
$ sudo systemctl restart sshd
```
"""
# Other notes' commands, about starting and restarting other services.
XRDP = """# Xrdp 연결 설정

## 서비스 시작 구성

시스템 재시작 때마다 Xrdp 서비스를 시작하려면 다음 명령을 사용한다.

```shell
$ sudo systemctl enable xrdp
```
"""
TELNET = """# Telnet 연결 설정 (Xinetd)

## Xinetd 서비스 시작

아래 명령어를 통해 Telnet 서버를 시작할 수 있다.

```shell
$ sudo systemctl restart xinetd
```
"""


async def test_a_follow_up_about_another_attribute_is_answered_about_it(
    make_ws: MakeWorkspace,
) -> None:
    ws = make_ws(notes={"tasks/sorting.md": SORTING})
    first = await ask(ws, "How do I sort tasks by due date?")
    assert first.outcome == "answered" and "sort by due" in first.answer, first.answer
    follow = await ask(ws, "and how do I sort them by priority?", conversation=first.conversation)
    assert follow.outcome == "answered", follow.answer
    assert "sort by priority" in follow.answer and "sort by due" not in follow.answer


async def test_a_korean_follow_up_about_restarting_is_answered_about_the_same_service(
    make_ws: MakeWorkspace,
) -> None:
    ws = make_ws(notes={"linux/sshd.md": SSHD, "linux/xrdp.md": XRDP, "linux/telnet.md": TELNET})
    first = await ask(ws, "sshd 접속 유지 설정은 어떻게 해?")
    assert first.outcome == "answered" and "TCPKeepAlive" in first.answer, first.answer
    follow = await ask(ws, "서비스 재시작은 어떻게 해?", conversation=first.conversation)
    assert follow.outcome == "answered", follow.answer
    assert "systemctl restart sshd" in follow.answer, follow.answer
    assert "TCPKeepAlive" not in follow.answer  # not the previous answer again
    assert {c.path for c in follow.citations} == {"linux/sshd.md"}  # nor another note's


@pytest.mark.parametrize(
    ("previous", "follow_up", "filled"),
    [
        ("How do I sort tasks by due date?", "and how do I sort them by priority?", "tasks"),
        ("How do I sort tasks by due date?", "and by priority?", "sort tasks"),
        ("sshd 설정 파일은 어디에 있어?", "그럼 서비스 재시작은 어떻게 해?", "sshd"),
        ("Which port does Postgres listen on?", "and Redis?", "port listen"),
        (
            "What time does the nightly backup job run?",
            "and which systemd unit starts it?",
            "time nightly backup job run",
        ),
    ],
)
def test_the_thread_fills_in_only_what_the_follow_up_leaves_out(
    previous: str, follow_up: str, filled: str
) -> None:
    assert left_out(follow_up, previous) == filled
