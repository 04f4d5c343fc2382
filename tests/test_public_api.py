"""The public surface of ``handler_kit``: what it exports, what importing it costs, the one
list of event names every other list must agree with, and the old import paths that keep
working for one release."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import warnings

import pytest

import handler_kit
from handler_kit import HookApp
from handler_kit._compat import MOVED
from handler_kit.core._decorators import EventDecorators
from handler_kit.core.events import EVENT_MODELS, model_for
from handler_kit.core.names import EVENT_NAMES, MATCHERLESS_EVENTS, RUNBEAR_EVENTS

HEAVY = ("pydantic", "pydantic_core", "starlette", "uvicorn", "mcp", "httpx", "jwt")


def _loaded_after(code: str) -> list[str]:
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_importing_the_package_and_the_cli_loads_no_dependency() -> None:
    assert _loaded_after("import handler_kit") == []
    assert _loaded_after("import handler_kit.cli") == []
    assert _loaded_after("import handler_kit.config") == []


def test_a_name_loads_only_what_it_needs() -> None:
    assert _loaded_after("from handler_kit import HookApp") == ["pydantic", "pydantic_core"]


def test_exports_what_the_docs_use() -> None:
    for name in ("ServerConfig", "OperationsConfig", "AuditStore", "create_mcp_mount",
                 "create_asgi_app", "HookClient", "JWTAuth", "__version__"):  # fmt: skip
        assert name in handler_kit.__all__, name
        assert getattr(handler_kit, name) is not None
    assert re.fullmatch(r"\d+\.\d+\.\d+", handler_kit.__version__)
    assert sorted(dir(handler_kit)) == dir(handler_kit)
    assert set(handler_kit.__all__) <= set(dir(handler_kit))


def test_one_list_of_event_names() -> None:
    assert list(EVENT_MODELS) == list(EVENT_NAMES)
    assert set(RUNBEAR_EVENTS) <= set(EVENT_NAMES)
    assert {n for n in EVENT_NAMES if model_for(n).matcher_field is None} == MATCHERLESS_EVENTS
    for name in EVENT_NAMES:
        assert model_for(name).__name__ == name


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_one_decorator_per_event() -> None:
    """The per-event decorators of HookApp and the event list match one to one."""
    decorators = {
        attr
        for attr, value in vars(EventDecorators).items()
        if callable(value) and not attr.startswith("_")
    }
    assert decorators == {_snake(name) for name in EVENT_NAMES}
    assert issubclass(HookApp, EventDecorators)
    app = HookApp("decorators")
    for name in EVENT_NAMES:
        getattr(app, _snake(name))(name=f"h_{_snake(name)}")(lambda event: None)
    assert [h.event for h in app.handlers] == list(EVENT_NAMES)


def test_extending_an_app_leaves_it_as_it_was() -> None:
    app = HookApp("plain")

    @app.stop()
    def done(event: object) -> None:
        return None

    def observer(answer: object, transport: str, context: dict[str, object]) -> None:
        return None

    extended = app.extended(observers=[observer])
    assert extended.observers == (observer,) and app.observers == ()
    assert extended.handlers is app.handlers  # the same handlers, one registry


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_module_paths_forward_with_a_warning(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(f"{old} is deprecated")):
        module = importlib.import_module(old)
    public = [n for n in dir(new) if not n.startswith("_")]
    assert public, MOVED[old]
    for name in public:
        assert getattr(module, name) is getattr(new, name)


def test_old_server_names_forward_with_a_warning() -> None:
    import handler_kit.server
    from handler_kit.config import ServerConfig

    vars(handler_kit.server).pop("ServerConfig", None)
    with pytest.warns(DeprecationWarning, match="handler_kit.config"):
        from handler_kit.server import ServerConfig as old
    assert old is ServerConfig
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from handler_kit.server import create_asgi_app  # noqa: F401  (current: no warning)
