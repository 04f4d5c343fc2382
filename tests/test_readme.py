"""The README's Python examples run as written (a README example that rots is a bug)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks(section: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"<!-- section:{section} -->(.*?)<!-- /section:{section} -->", text, re.S)
    assert match, f"README has no {section} section"
    return re.findall(r"```python\n(.*?)```", match.group(1), re.S)


def test_handlers_section_examples_run() -> None:
    blocks = python_blocks("handlers")
    assert len(blocks) >= 2
    namespace: dict[str, object] = {"__name__": "readme_example"}
    # the first block defines an app; the test-client block imports the example module's
    # app, so run it against the README's own app instead
    exec(compile(blocks[0], "README:handlers[0]", "exec"), namespace)
    client_block = blocks[1].replace("from example_servers.refund_gate import app\n", "")
    exec(compile(client_block, "README:handlers[1]", "exec"), namespace)
