"""``make run`` (``python -m example_servers.run``) and the bearer token in what it prints.

Its output goes where the process's output goes: a terminal, or a container's log. A token it
generated is a throw-away, printed so the curl works as pasted; a token the user set in
``HANDLER_KIT_TOKENS`` may be a production one, and never appears in the output.
"""

from __future__ import annotations

import re
import shlex
import sys

import httpx

from tests.support.payloads import REFUND_DENY
from tests.support.processes import clean_env, free_port, process

USER_SET = "user-set-production-token-6c1f0e2a9b"
SECOND = "second-user-set-token-0d7e41"
USER_TOKEN = "<your HANDLER_KIT_TOKENS token>"
START_TIMEOUT = 60.0


def curl_words(printed: str) -> list[str]:
    """The words of the curl command ``make run`` printed, continuation lines joined."""
    start = printed.index("curl ")
    lines = []
    for line in printed[start:].splitlines():
        lines.append(line.strip().removesuffix("\\").strip())
        if not line.rstrip().endswith("\\"):
            break
    return shlex.split(" ".join(lines))


def send_as_printed(words: list[str], token: str) -> httpx.Response:
    """The printed curl's request, with ``token`` where the placeholder (if any) is."""
    headers = dict(w.split(": ", 1) for i, w in enumerate(words) if i and words[i - 1] == "-H")
    headers["Authorization"] = headers["Authorization"].replace(USER_TOKEN, token)
    url = next(w for w in words if w.startswith("http"))
    return httpx.post(url, content=words[words.index("-d") + 1], headers=headers, timeout=10)


def test_a_user_set_token_is_never_printed():
    port = free_port()
    env = clean_env(HOST="127.0.0.1", PORT=str(port), HANDLER_KIT_TOKENS=f"{USER_SET},{SECOND}")
    with process([sys.executable, "-m", "example_servers.run"], env) as served:
        url = f"http://127.0.0.1:{port}"
        served.wait_healthy(url, timeout=START_TIMEOUT)
        words = curl_words(served.output())
        assert f"Authorization: Bearer {USER_TOKEN}" in words
        # the curl works once the user puts their token in
        answer = send_as_printed(words, USER_SET)
        assert answer.status_code == 200 and answer.json() == REFUND_DENY
        printed = served.output()
        assert USER_SET not in printed and SECOND not in printed
        assert f"Bearer token: {USER_TOKEN}" in printed


def test_a_generated_token_is_printed_and_works():
    port = free_port()
    env = clean_env(HOST="127.0.0.1", PORT=str(port))
    with process([sys.executable, "-m", "example_servers.run"], env) as served:
        url = f"http://127.0.0.1:{port}"
        served.wait_healthy(url, timeout=START_TIMEOUT)
        printed = served.output()
        token = re.search(r"Bearer token: (\S+)", printed).group(1)
        assert len(token) >= 16 and USER_TOKEN not in printed
        words = curl_words(printed)
        assert f"Authorization: Bearer {token}" in words
        answer = send_as_printed(words, token)
        assert answer.status_code == 200 and answer.json() == REFUND_DENY
