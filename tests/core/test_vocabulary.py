"""The records the layers share (Handler, Invocation, Answer; merge's Failure and Merged) are
plain slotted classes, written out instead of made by ``dataclasses`` (whose generated methods
are compiled at import, in every command hook's start-up): each behaves as the dataclass it
replaced, checked here against that very dataclass, kept as the reference."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from handler_kit import HookEvent, PreToolUse, context, deny
from handler_kit.core._fast_coroutines import never_suspends
from handler_kit.core.matchers import compile_matcher
from handler_kit.core.merge import Failure, Merged
from handler_kit.core.vocabulary import (
    DEFAULT_TIMEOUT,
    Answer,
    Handler,
    Invocation,
    Status,
    server_deadline,
)


@dataclass(slots=True, eq=False)
class ReferenceHandler:
    name: str
    event: str
    func: Any
    matcher: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    fail_closed: bool = False
    stop_loop_guard: bool = True
    idempotent: bool = False
    description: str = ""
    is_async: bool = field(init=False)
    deadline: float = field(init=False)
    matches: Callable[[str | None], bool] = field(init=False, repr=False)
    awaits_nothing: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.is_async = inspect.iscoroutinefunction(self.func)
        self.deadline = server_deadline(self.timeout)
        self.matches = compile_matcher(self.matcher)
        self.awaits_nothing = self.is_async and never_suspends(self.func)


@dataclass(slots=True)
class ReferenceInvocation:
    handler: Any
    status: Status
    output: Any = None
    error: str | None = None
    latency_ms: float = 0.0


@dataclass(slots=True)
class ReferenceAnswer:
    event: HookEvent
    output: dict[str, Any]
    invocations: list[Any]


@dataclass(slots=True)
class ReferenceFailure:
    fail_closed: bool = False
    notice: str | None = None


@dataclass(slots=True)
class ReferenceMerged:
    event: str
    decision: str | None = None
    reason: str | None = None
    contexts: list[str] = field(default_factory=list)
    updated_input: dict[str, Any] | None = None
    continue_: bool | None = None
    stop_reason: str | None = None
    system_messages: list[str] = field(default_factory=list)
    suppress_output: bool | None = None
    specific: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


PAIRS = [
    (Handler, ReferenceHandler),
    (Invocation, ReferenceInvocation),
    (Answer, ReferenceAnswer),
    (Failure, ReferenceFailure),
    (Merged, ReferenceMerged),
]


def gate(event: PreToolUse) -> None:
    return None


async def async_gate(event: PreToolUse) -> None:
    return None


def shown(cls: type, reference: type, obj: Any) -> str:
    """The repr of ``obj`` under the reference's name: the reprs compare field by field."""
    return repr(obj).replace(reference.__qualname__, cls.__qualname__, 1)


@pytest.mark.parametrize(("cls", "reference"), PAIRS, ids=lambda c: c.__name__)
def test_the_same_class_shape_as_the_dataclass(cls: type, reference: type) -> None:
    assert not dataclasses.is_dataclass(cls)  # nothing generated, nothing compiled at import
    assert cls.__match_args__ == reference.__match_args__  # type: ignore[attr-defined]
    assert set(cls.__slots__) == set(reference.__slots__)  # type: ignore[attr-defined]
    assert (cls.__hash__ is None) is (reference.__hash__ is None)
    ours = inspect.signature(cls).parameters
    theirs = inspect.signature(reference).parameters
    assert list(ours) == list(theirs)
    for name, parameter in theirs.items():
        assert ours[name].kind == parameter.kind, name
        if repr(parameter.default) == "<factory>":  # None stands for "a new one" (see below)
            assert ours[name].default is None, name
        else:
            assert ours[name].default == parameter.default, name


def test_a_handler_is_built_and_shown_as_before() -> None:
    for args, options in [
        (("refund_gate", "PreToolUse", gate), {}),
        (("refund_gate", "PreToolUse", async_gate), {"matcher": "^issue_refund$|orders_.*"}),
        (
            ("audit", "PostToolUse", gate, "Bash|Write", 1.5, True, False, True, "doc"),
            {},
        ),
    ]:
        ours, theirs = Handler(*args, **options), ReferenceHandler(*args, **options)
        assert repr(ours) == shown(Handler, ReferenceHandler, theirs)
        for name in (*ReferenceHandler.__match_args__, "is_async", "deadline"):
            assert getattr(ours, name) == getattr(theirs, name), name
        for value in ("issue_refund", "orders_refund", "Bash", None):
            assert ours.matches(value) is theirs.matches(value)
        # compared by identity, hashable, as the eq=False dataclass
        assert ours == ours and ours != Handler(*args, **options)
        assert {ours: 1}[ours] == 1
    with pytest.raises(AttributeError):
        Handler("x", "Stop", gate).other = 1  # type: ignore[attr-defined]


def test_records_compare_and_show_as_before() -> None:
    handler = Handler("refund_gate", "PreToolUse", gate)
    event = PreToolUse(tool_name="issue_refund")
    for args in [
        (handler, Status.OK),
        (handler, Status.ERROR, None, "boom", 2.5),
        (handler, Status.FAIL_CLOSED, deny("no"), None, float("nan")),
    ]:
        ours, theirs = Invocation(*args), ReferenceInvocation(*args)
        assert repr(ours) == shown(Invocation, ReferenceInvocation, theirs)
        assert (ours == Invocation(*args)) is (theirs == ReferenceInvocation(*args))
        assert ours != Invocation(handler, Status.TIMEOUT)
        assert ours != theirs  # another class: not equal, as between dataclasses
    invocations = [Invocation(handler, Status.OK, context("x"))]
    answer = Answer(event, {"continue": True}, invocations)
    reference = ReferenceAnswer(event, {"continue": True}, invocations)
    assert repr(answer) == shown(Answer, ReferenceAnswer, reference)
    assert answer == Answer(event, {"continue": True}, list(invocations))
    assert answer != Answer(event, {}, invocations)
    for unhashable in (answer, invocations[0], Failure(), Merged("Stop")):
        with pytest.raises(TypeError):
            hash(unhashable)


@pytest.mark.parametrize(
    "args",
    [
        (),
        (True,),
        (True, "gate failed"),
    ],
)
def test_failure_as_before(args: tuple[Any, ...]) -> None:
    ours, theirs = Failure(*args), ReferenceFailure(*args)
    assert repr(ours) == shown(Failure, ReferenceFailure, theirs)
    assert ours == Failure(*args) and ours != Failure(not ours.fail_closed)


def test_merged_as_before() -> None:
    ours, theirs = Merged("PreToolUse"), ReferenceMerged("PreToolUse")
    assert repr(ours) == shown(Merged, ReferenceMerged, theirs)
    # each gets new lists and dicts, as with a default_factory
    assert ours.contexts is not Merged("PreToolUse").contexts
    assert ours.specific is not Merged("PreToolUse").specific
    full = {
        "decision": "deny",
        "reason": "no",
        "contexts": ["a", "b"],
        "updated_input": {"x": 1},
        "continue_": False,
        "stop_reason": "stop",
        "system_messages": ["m"],
        "suppress_output": True,
        "specific": {"k": "v"},
        "extra": {"e": 1},
    }
    ours, theirs = Merged("PreToolUse", **full), ReferenceMerged("PreToolUse", **full)
    assert repr(ours) == shown(Merged, ReferenceMerged, theirs)
    assert ours == Merged("PreToolUse", **full)
    for name in full:
        changed = {**full, name: None}
        assert (ours == Merged("PreToolUse", **changed)) is (
            theirs == ReferenceMerged("PreToolUse", **changed)
        ), name
    match ours:
        case Merged("PreToolUse", "deny", reason):
            assert reason == "no"
        case _:
            raise AssertionError("__match_args__")
