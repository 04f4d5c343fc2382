"""Outputs: every helper renders the exact Claude Code JSON of the event it is returned from;
every captured output round-trips; what an event cannot carry is an OutputError."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from handler_kit import Output, OutputError, allow, ask, block, context, deny, halt, rewrite
from handler_kit.core.outputs import (
    CONTEXT_EVENTS,
    CONTEXT_LIMIT,
    SPECIFIC_FIELDS,
    TRUNCATION_MARKER,
    cap_context,
    normalize,
    parse_handler_output,
    parse_output,
)
from tests.support.payloads import PAYLOADS, load, output_files


def hso(event: str, **fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, **fields}}


# -- helpers render the exact JSON per event ----------------------------------------------

RENDERED = [
    (
        "PreToolUse",
        deny("Refunds over $500 need a human approver."),
        hso(
            "PreToolUse",
            permissionDecision="deny",
            permissionDecisionReason="Refunds over $500 need a human approver.",
        ),
    ),
    ("PreToolUse", allow(), hso("PreToolUse", permissionDecision="allow")),
    (
        "PreToolUse",
        allow("fine", updated_input={"a": 1}),
        hso(
            "PreToolUse",
            permissionDecision="allow",
            permissionDecisionReason="fine",
            updatedInput={"a": 1},
        ),
    ),
    (
        "PreToolUse",
        ask("confirm?"),
        hso("PreToolUse", permissionDecision="ask", permissionDecisionReason="confirm?"),
    ),
    (
        "PreToolUse",
        ask(updated_input={"cmd": "ls -la"}),
        hso("PreToolUse", permissionDecision="ask", updatedInput={"cmd": "ls -la"}),
    ),
    (
        "PreToolUse",
        rewrite({"order_id": "4821", "amount": 640, "requested_by": "U1"}),
        hso(
            "PreToolUse",
            permissionDecision="allow",
            updatedInput={"order_id": "4821", "amount": 640, "requested_by": "U1"},
        ),
    ),
    ("PreToolUse", context("env: prod"), hso("PreToolUse", additionalContext="env: prod")),
    (
        "PermissionRequest",
        deny("Blocked by repository policy."),
        hso(
            "PermissionRequest",
            decision={"behavior": "deny", "message": "Blocked by repository policy."},
        ),
    ),
    (
        "PermissionRequest",
        rewrite({"command": "npm run lint"}),
        hso(
            "PermissionRequest",
            decision={"behavior": "allow", "updatedInput": {"command": "npm run lint"}},
        ),
    ),
    (
        "UserPromptSubmit",
        block("This channel is for billing questions only."),
        {"decision": "block", "reason": "This channel is for billing questions only."},
    ),
    (
        "UserPromptSubmit",
        context("Dana is on the Enterprise plan."),
        hso("UserPromptSubmit", additionalContext="Dana is on the Enterprise plan."),
    ),
    (
        "Stop",
        block("The reply does not cite the ticket number."),
        {"decision": "block", "reason": "The reply does not cite the ticket number."},
    ),
    ("Stop", context("run the tests"), hso("Stop", additionalContext="run the tests")),
    ("SubagentStop", block("again"), {"decision": "block", "reason": "again"}),
    ("PostToolUse", block("review it"), {"decision": "block", "reason": "review it"}),
    ("PostToolUse", context("audited"), hso("PostToolUse", additionalContext="audited")),
    (
        "SessionStart",
        context("Returns within 30 days."),
        hso("SessionStart", additionalContext="Returns within 30 days."),
    ),
    ("Setup", context("deps installed"), hso("Setup", additionalContext="deps installed")),
    ("SubagentStart", context("be careful"), hso("SubagentStart", additionalContext="be careful")),
    ("ConfigChange", block("admin only"), {"decision": "block", "reason": "admin only"}),
    ("Stop", halt("Build failed"), {"continue": False, "stopReason": "Build failed"}),
    ("PreToolUse", halt(), {"continue": False}),
    ("Notification", halt("bye"), {"continue": False, "stopReason": "bye"}),
    ("SessionStart", Output(), {}),
]


@pytest.mark.parametrize(
    ("event", "output", "expected"),
    RENDERED,
    ids=[f"{event}-{i}" for i, (event, _, _) in enumerate(RENDERED)],
)
def test_helper_renders_exact_claude_code_json(event, output, expected):
    rendered = output.render(event)
    assert rendered == expected
    if "hookSpecificOutput" in rendered:
        assert rendered["hookSpecificOutput"]["hookEventName"] == event
    # and reading it back gives the same answer
    assert parse_output(event, rendered).render(event) == expected


def test_block_is_top_level_and_context_nested_together():
    out = Output(decision="block", reason="no", context="why")
    assert out.render("UserPromptSubmit") == {
        "decision": "block",
        "reason": "no",
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "why"},
    }


# -- a helper the event cannot carry -------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "output", "message"),
    [
        ("SessionStart", deny("no"), "SessionStart cannot carry a permission decision"),
        ("Stop", allow(), "Stop cannot carry a permission decision"),
        ("UserPromptSubmit", ask("?"), "cannot carry a permission decision"),
        ("PostToolUse", rewrite({"a": 1}), "cannot carry a permission decision"),
        ("PreToolUse", block("no"), "use deny()"),
        ("PermissionRequest", block("no"), "use deny()"),
        ("SessionStart", block("no"), "SessionStart cannot carry a block"),
        ("Notification", block("no"), "cannot carry a block"),
        ("PermissionRequest", ask("?"), "PermissionRequest cannot carry 'ask'"),
        ("PostToolUse", Output(updated_input={"a": 1}), "updated_input"),
        ("Stop", Output(updated_input={"a": 1}), "updated_input"),
        ("Notification", context("x"), "Notification cannot carry additional context"),
        ("SessionEnd", context("x"), "cannot carry additional context"),
        ("PreToolUse", Output(decision="maybe"), "not a PreToolUse permission decision"),
    ],
)
def test_output_the_event_cannot_carry_raises(event, output, message):
    with pytest.raises(OutputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        output.render(event)
    with pytest.raises(OutputError):
        normalize(event, output)


def test_helper_arguments_are_checked():
    with pytest.raises(TypeError):
        deny("")
    with pytest.raises(TypeError):
        block(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        rewrite(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        allow(updated_input=["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        context(5)  # type: ignore[arg-type]


# -- normalisation of return values --------------------------------------------------------


def test_normalize_return_values():
    assert normalize("PreToolUse", None).render("PreToolUse") == {}
    assert normalize("SessionStart", "").render("SessionStart") == {}
    assert normalize("SessionStart", "policy").render("SessionStart") == hso(
        "SessionStart", additionalContext="policy"
    )
    as_dict = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}
    assert normalize("PreToolUse", as_dict).render("PreToolUse") == as_dict
    # a dict may omit hookEventName: the render sets it
    loose = {"hookSpecificOutput": {"additionalContext": "x"}}
    assert normalize("PostToolUse", loose).render("PostToolUse") == hso(
        "PostToolUse", additionalContext="x"
    )
    assert normalize("Stop", {}).render("Stop") == {}


NOT_RETURNED = "a handler returns None, a str, a helper's output or a dict, not "


@pytest.mark.parametrize(
    ("event", "value", "message"),
    [
        ("PreToolUse", 42, NOT_RETURNED + "int"),
        ("PreToolUse", ["deny"], NOT_RETURNED + "list"),
        ("PreToolUse", True, NOT_RETURNED + "bool"),
        (
            "Notification",
            "text on an event that reads no context",
            "Notification cannot carry additional context",
        ),
        (
            "PreToolUse",
            {"hookSpecificOutput": {"hookEventName": "Stop"}},
            "hookSpecificOutput.hookEventName is 'Stop', expected 'PreToolUse'",
        ),
        (
            "PreToolUse",
            {"hookSpecificOutput": {"permissionDecision": "block"}},
            "permissionDecision 'block' is not one of allow/deny/ask/defer",
        ),
        ("PreToolUse", {"decision": "maybe"}, "unknown decision 'maybe'"),
        ("Stop", {"decision": "deny"}, "unknown decision 'deny'"),
        ("Stop", {"hookSpecificOutput": "not an object"}, "hookSpecificOutput must be an object"),
        ("Stop", {"continue": "no"}, "continue must be bool"),
        ("Stop", {"reason": 5, "decision": "block"}, "reason must be str"),
        ("Stop", {"reason": True, "decision": "block"}, "reason must be str"),
        ("Stop", {"decision": 1}, "decision must be str"),
        ("Stop", {"systemMessage": 3}, "systemMessage must be str"),
        (
            "SessionStart",
            {"hookSpecificOutput": {"additionalContext": ["a"]}},
            "additionalContext must be str",
        ),
        (
            "PreToolUse",
            {"hookSpecificOutput": {"permissionDecisionReason": 1}},
            "permissionDecisionReason must be str",
        ),
        (
            "PreToolUse",
            {"hookSpecificOutput": {"updatedInput": "rm -rf /"}},
            "updatedInput must be an object",
        ),
        (
            "PermissionRequest",
            {"hookSpecificOutput": {"decision": {"behavior": "ask"}}},
            "decision.behavior 'ask' is not allow or deny",
        ),
        (
            "SessionStart",
            {"decision": "block", "reason": "a block SessionStart cannot carry"},
            "SessionStart cannot carry a block",
        ),
    ],
)
def test_bad_return_values_raise_output_error(event, value, message):
    with pytest.raises(OutputError) as info:
        normalize(event, value)
    assert str(info.value) == message


def test_parse_output_reads_only_an_object():
    with pytest.raises(OutputError) as info:
        parse_output("Stop", ["block"])
    assert str(info.value) == "output must be a JSON object"


@pytest.mark.parametrize(
    ("event", "value", "expected"),
    [
        # a reason without a decision is kept as it came, among the keys not read
        ("Stop", {"reason": "r"}, Output(extra={"reason": "r"})),
        # the top-level spellings PreToolUse still honours, the current ones among them
        ("PreToolUse", {"decision": "allow"}, Output(decision="allow")),
        ("PreToolUse", {"decision": "deny", "reason": "no"}, Output(decision="deny", reason="no")),
        ("PreToolUse", {"decision": "approve"}, Output(decision="allow")),
        ("PreToolUse", {"decision": "block", "reason": "no"}, Output(decision="deny", reason="no")),
        # "approve" elsewhere is an old no-op
        ("Stop", {"decision": "approve"}, Output()),
    ],
)
def test_top_level_decisions_are_read_as_the_runtime_reads_them(event, value, expected):
    assert parse_output(event, value) == expected


def test_another_servers_output_keeps_the_specific_fields_it_does_not_read():
    """A field of PreToolUse's hookSpecificOutput that handler-kit does not know (a runtime's
    newer one, from the server a forwarder asks) is passed on as it came, beside the ones it
    reads."""
    data = {"hookSpecificOutput": {"permissionDecision": "allow", "futureField": {"n": 1}}}
    out = parse_output("PreToolUse", data)
    assert (out.decision, out.specific) == ("allow", {"futureField": {"n": 1}})
    assert out.render("PreToolUse") == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "futureField": {"n": 1},
        }
    }


def test_a_given_hook_event_name_replaces_the_events_in_its_place():
    out = Output(context="c", specific={"hookEventName": "Renamed"})
    assert out.render("UserPromptSubmit") == {
        "hookSpecificOutput": {"hookEventName": "Renamed", "additionalContext": "c"}
    }
    # given alone, it is sent alone: the handler asked for the object
    for name in ("Renamed", "UserPromptSubmit"):
        assert Output(specific={"hookEventName": name}).render("UserPromptSubmit") == {
            "hookSpecificOutput": {"hookEventName": name}
        }


# -- 10,000-character cap ------------------------------------------------------------------


def test_context_cap_with_visible_marker():
    exact = "x" * CONTEXT_LIMIT
    assert cap_context(exact) == exact
    long = "y" * (CONTEXT_LIMIT + 1)
    capped = cap_context(long)
    assert len(capped) == CONTEXT_LIMIT
    assert capped.endswith(TRUNCATION_MARKER)
    assert "truncated" in TRUNCATION_MARKER
    rendered = context("z" * 50_000).render("UserPromptSubmit")
    text = rendered["hookSpecificOutput"]["additionalContext"]
    assert len(text) == CONTEXT_LIMIT
    assert text.startswith("z" * 1000) and text.endswith(TRUNCATION_MARKER)


# -- the captured outputs round-trip -------------------------------------------------------

# The event of each file, from its name (or its hookEventName); files written for several
# events are listed with each event they are documented for.
EVENT_OF = {
    "configchange": ["ConfigChange"],
    "elicitation": ["Elicitation"],
    "elicitationresult": ["ElicitationResult"],
    "permissiondenied": ["PermissionDenied"],
    "permissionrequest": ["PermissionRequest"],
    "posttoolbatch": ["PostToolBatch"],
    "posttooluse": ["PostToolUse"],
    "pretooluse": ["PreToolUse"],
    "sessionstart": ["SessionStart"],
    "setup": ["Setup"],
    "stop": ["Stop"],
    "subagentstart": ["SubagentStart"],
    "userpromptexpansion": ["UserPromptExpansion"],
    "userpromptsubmit": ["UserPromptSubmit"],
}
# Files whose name carries no event, with the events their source documents them for.
NAMELESS = {
    # universal continue:false + stopReason: accepted on every event
    "claude_docs_continue_false_3.json": ["Stop", "PreToolUse", "UserPromptSubmit"],
    # "top-level decision: block (UserPromptSubmit/PostToolUse/Stop/...)"
    "claude_docs_toplevel_decision_block_4.json": ["UserPromptSubmit", "PostToolUse", "Stop"],
    # Codex Interrupt (no Claude Code counterpart): only systemMessage; universal
    "codex_docs_interrupt_systemmessage_30.json": ["Stop", "Notification"],
    # returned "by every non-SessionStart hook"
    "wild_claudemem_continue_suppress_21.json": ["PreToolUse", "PostToolUse", "Stop"],
    # a test-blocker hook: continue:false together with decision:block
    "wild_decider_continue_false_and_block_20.json": ["Stop", "UserPromptSubmit"],
}
# Files whose round trip is not the identity, and what it is instead (legacy spellings are
# read, and written back in the current spelling).
REWRITTEN = {
    # Codex's older PreToolUse shape: top-level block is deny; written in today's spelling.
    ("codex_docs_pretooluse_legacy_block_25.json", "PreToolUse"): hso(
        "PreToolUse",
        permissionDecision="deny",
        permissionDecisionReason="Destructive command blocked by hook.",
    ),
    # A PermissionRequest hook printing the legacy PreToolUse {"decision": "approve"}: read as
    # allow (what the hook meant); written in the PermissionRequest schema. The reason has no
    # field of its own on an allow, so it rides along as decision.message.
    ("wild_jacky_permissionrequest_legacy_approve_22.json", "PermissionRequest"): hso(
        "PermissionRequest", decision={"behavior": "allow", "message": "Read-only operation"}
    ),
}


def _events_of(path: Path) -> list[str]:
    if path.name in NAMELESS:
        return NAMELESS[path.name]
    data = load(path)
    named = (data.get("hookSpecificOutput") or {}).get("hookEventName")
    parts = path.stem.split("_")
    from_name = [e for key, events in EVENT_OF.items() if key in parts for e in events]
    assert from_name, f"cannot tell the event of {path.name}: add it to NAMELESS"
    if named is not None:
        assert from_name == [named], path.name
    return from_name


OUTPUT_CASES = [
    pytest.param(path, event, id=f"{path.name}-{event}")
    for path in output_files()
    for event in _events_of(path)
]


@pytest.mark.parametrize(("path", "event"), OUTPUT_CASES)
def test_corpus_output_round_trips(path, event):
    data = load(path)
    output = parse_output(event, data)
    rendered = output.render(event)
    assert rendered == REWRITTEN.get((path.name, event), data)
    # rendering is stable: the rendered JSON reads back to the same answer
    assert parse_output(event, rendered).render(event) == rendered
    # and a handler returning the captured dict gets the same answer
    assert normalize(event, data).render(event) == rendered


def test_corpus_outputs_mixing_shapes_keep_both():
    """Files that combine shapes: assert what is sensible for each part."""
    assert output_files(), f"no corpus at {PAYLOADS}"
    folder = PAYLOADS / "outputs"
    # continue:false + decision:block on Stop: both are kept (continue:false takes precedence
    # in the runtime, and the block's reason still says why).
    decider = load(folder / "wild_decider_continue_false_and_block_20.json")
    mixed = parse_output("Stop", decider)
    assert mixed.continue_ is False and mixed.decision == "block"
    assert mixed.stop_reason.startswith("🛑") and mixed.reason.startswith("This is a test hook")
    # On PreToolUse the same file is a deny (legacy top-level block) plus continue:false.
    legacy = parse_output("PreToolUse", decider)
    assert legacy.decision == "deny" and legacy.continue_ is False
    # every universal field at once, with a block: all kept verbatim, empty stopReason too
    stop = parse_output("Stop", load(folder / "wild_secustor_stop_all_universal_fields_19.json"))
    assert (stop.continue_, stop.stop_reason, stop.suppress_output) == (True, "", False)
    assert stop.decision == "block"
    # block + context + sessionTitle on UserPromptSubmit: block top level, the rest nested
    ups = parse_output(
        "UserPromptSubmit", load(folder / "claude_docs_userpromptsubmit_block_context_7.json")
    )
    assert ups.decision == "block" and ups.context == "My additional context here"
    assert ups.specific == {"sessionTitle": "My session title"}
    # an empty additionalContext stays an (empty) context, not "no output"
    empty = parse_output(
        "SessionStart", load(folder / "wild_sessionhub_sessionstart_empty_context_32.json")
    )
    assert empty.context == "" and not empty.is_empty
    # the legacy block is refused where the event has no block at all
    with pytest.raises(OutputError):
        normalize("SessionStart", load(folder / "claude_docs_toplevel_decision_block_4.json"))


# -- a handler's dict is checked against its event's output schema -----------------------------

TOP_LEVEL_LIST = (
    "; the top level has continue, decision, hookSpecificOutput, reason, stopReason, "
    "suppressOutput, systemMessage, terminalSequence"
)

# event, dict a handler returns, the key the error names and what it says about it
BAD_DICTS = [
    (
        "PreToolUse",
        {"permissionDecision": "deny", "permissionDecisionReason": "no"},
        "'permissionDecision' belongs in hookSpecificOutput, not at the top level",
    ),
    (
        "PreToolUse",
        hso("PreToolUse", permissionDecison="deny"),
        "PreToolUse's hookSpecificOutput has no field 'permissionDecison' "
        "(did you mean 'hookSpecificOutput.permissionDecision'?); it has hookEventName, "
        "additionalContext, permissionDecision, permissionDecisionReason, updatedInput",
    ),
    (
        "UserPromptSubmit",
        {"additionalContext": "Dana is on the Enterprise plan."},
        "'additionalContext' belongs in hookSpecificOutput, not at the top level",
    ),
    (
        "Notification",
        {"additionalContext": "x"},
        "unknown top-level field 'additionalContext' (a hookSpecificOutput field of other events)",
    ),
    (
        "Stop",
        {"decison": "block", "reason": "again"},
        "unknown top-level field 'decison' (did you mean 'decision'?)" + TOP_LEVEL_LIST,
    ),
    ("Stop", {"zzqq": 1}, "unknown top-level field 'zzqq'" + TOP_LEVEL_LIST),
    # a known key first does not end the check of the keys after it
    ("Stop", {"continue": True, "zzqq": 1}, "unknown top-level field 'zzqq'" + TOP_LEVEL_LIST),
    ("Stop", {"Continue": False}, "unknown top-level field 'Continue' (did you mean 'continue'?)"),
    ("Stop", hso("Stop", decision="block"), "hookSpecificOutput.decision belongs at the top level"),
    (
        "PreToolUse",
        hso("PreToolUse", updatedToolOutput={}),
        "PreToolUse's hookSpecificOutput has no field 'updatedToolOutput' "
        "(a hookSpecificOutput field of other events)",
    ),
    (
        "SessionEnd",
        hso("SessionEnd", additionalContext="x"),
        "SessionEnd's hookSpecificOutput has no field 'additionalContext'",
    ),
    (
        "PermissionRequest",
        hso("PermissionRequest", decision={"behavior": "deny", "mesage": "no"}),
        "hookSpecificOutput.decision has no field 'mesage' (did you mean 'message'?); it has "
        "behavior, interrupt, message, updatedInput, updatedPermissions",
    ),
]


@pytest.mark.parametrize(("event", "value", "message"), BAD_DICTS)
def test_a_dict_with_an_unknown_or_misplaced_key_is_an_output_error(event, value, message):
    with pytest.raises(OutputError) as info:
        normalize(event, value)
    assert message in str(info.value)
    with pytest.raises(OutputError):
        parse_handler_output(event, value)


def test_parse_output_stays_lenient_for_answers_read_from_other_servers():
    """What a runtime reads from another server keeps unknown keys: only a handler's own
    return value is strict."""
    for event, value, _ in BAD_DICTS:
        parse_output(event, value)  # no error
    loose = parse_output("PreToolUse", {"permissionDecision": "deny", "weird": 1})
    assert loose.decision is None and loose.extra == {"permissionDecision": "deny", "weird": 1}


@pytest.mark.parametrize(
    ("event", "value"),
    [
        ("Stop", {"continue": False, "stopReason": "s", "suppressOutput": True}),
        ("Stop", {"systemMessage": "m", "terminalSequence": "\x07", "decision": "block"}),
        ("SessionStart", hso("SessionStart", additionalContext="c", sessionTitle="t")),
        (
            "SessionStart",
            hso("SessionStart", initialUserMessage="m", watchPaths=[], reloadSkills=True),
        ),
        ("UserPromptSubmit", hso("UserPromptSubmit", suppressOriginalPrompt=True)),
        ("PostToolUse", hso("PostToolUse", updatedToolOutput={}, classifierContext="c")),
        ("PostToolUse", hso("PostToolUse", updatedMCPToolOutput=[])),
        ("PermissionDenied", hso("PermissionDenied", retry=True)),
        ("WorktreeCreate", hso("WorktreeCreate", worktreePath="/tmp/w")),
        ("Elicitation", hso("Elicitation", action="accept", content={})),
        ("MessageDisplay", hso("MessageDisplay", displayContent="x")),
        ("FileChanged", hso("FileChanged", watchPaths=["a"])),
        ("CwdChanged", hso("CwdChanged", watchPaths=["a"])),
        (
            "PermissionRequest",
            hso(
                "PermissionRequest",
                decision={"behavior": "deny", "message": "m", "interrupt": True},
            ),
        ),
        ("SessionEnd", {"hookSpecificOutput": {"hookEventName": "SessionEnd"}}),
        ("FutureEvent", {"anything": 1}),  # an event handler-kit does not know: not checked
    ],
)
def test_every_field_of_the_schema_is_accepted(event, value):
    normalize(event, value)


def test_the_schema_agrees_with_what_helpers_write():
    """The events whose hookSpecificOutput carries additionalContext are the ones context()
    may be returned from."""
    with_context = {e for e, fields in SPECIFIC_FIELDS.items() if "additionalContext" in fields}
    assert with_context == CONTEXT_EVENTS


def test_each_helper_called_while_a_test_runs_gives_its_exact_answer():
    # called in the test's body, not in a parametrize list evaluated at collection: the
    # mutation run picks a function's tests by the calls each test makes while it runs
    hook = {"hookEventName": "PreToolUse"}
    assert deny("no").render("PreToolUse") == {
        "hookSpecificOutput": {
            **hook,
            "permissionDecision": "deny",
            "permissionDecisionReason": "no",
        }
    }
    assert ask("sure?", updated_input={"a": 1}).render("PreToolUse") == {
        "hookSpecificOutput": {
            **hook,
            "permissionDecision": "ask",
            "permissionDecisionReason": "sure?",
            "updatedInput": {"a": 1},
        }
    }
    assert rewrite({"a": 1}, "why").render("PreToolUse") == {
        "hookSpecificOutput": {
            **hook,
            "permissionDecision": "allow",
            "permissionDecisionReason": "why",
            "updatedInput": {"a": 1},
        }
    }
    assert block("stop").render("Stop") == {"decision": "block", "reason": "stop"}
    assert halt("budget").render("Stop") == {"continue": False, "stopReason": "budget"}
    for helper, argument, message in (
        (deny, "", "a reason must be a non-empty string"),
        (deny, None, "a reason must be a non-empty string"),
        (block, "", "a reason must be a non-empty string"),
        (block, None, "a reason must be a non-empty string"),
        (rewrite, None, "rewrite() needs the full replacement input object"),
        (context, None, "context() takes a string"),
        (rewrite, ["a"], "updated_input must be a dict holding the whole tool input"),
    ):
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            helper(argument)


def test_an_output_shows_the_fields_it_sets():
    assert repr(deny("no")) == "Output(decision='deny', reason='no')"
    assert repr(halt("b")) == "Output(continue_=False, stop_reason='b')"


def test_outputs_are_equal_when_every_field_is():
    assert deny("no") == Output("deny", "no")
    assert deny("no") != deny("yes")
    assert halt("b") != halt("c")
    assert rewrite({"a": 1}) != rewrite({"a": 2})
    assert deny("no") != "deny"
    assert Output.__eq__(deny("no"), "deny") is NotImplemented


# -- PermissionRequest's decision object -----------------------------------------------------

KEEP = {"updatedPermissions": [{"type": "setMode", "mode": "default"}], "interrupt": True}


def test_a_permission_verdict_is_read_with_the_keys_beside_it() -> None:
    given = {"behavior": "deny", "message": "no", **KEEP}
    out = parse_handler_output("PermissionRequest", hso("PermissionRequest", decision=given))
    assert (out.decision, out.reason, out.updated_input) == ("deny", "no", None)
    assert out.specific == {"decision": KEEP}
    assert out.render("PermissionRequest") == hso("PermissionRequest", decision=given)
    rewritten = {"behavior": "allow", "updatedInput": {"command": "ls"}}
    out = parse_handler_output("PermissionRequest", hso("PermissionRequest", decision=rewritten))
    assert (out.decision, out.reason, out.updated_input) == ("allow", None, {"command": "ls"})
    # nothing kept beside it: a deny merged after this allow must not bring its rewrite back
    assert out.specific is None
    assert out.render("PermissionRequest") == hso("PermissionRequest", decision=rewritten)


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (
            "allow",
            'hookSpecificOutput.decision must be an object: {"behavior": "allow"} or '
            '{"behavior": "deny", "message": ...}',
        ),
        ({"behavior": "ask"}, "decision.behavior 'ask' is not allow or deny"),
        ({"behavior": "deny", "message": 5}, "decision.message must be str"),
        ({"behavior": "allow", "updatedInput": "ls"}, "decision.updatedInput must be an object"),
    ],
)
def test_a_bad_permission_verdict_says_what_is_wrong(decision: Any, message: str) -> None:
    with pytest.raises(OutputError) as info:
        normalize("PermissionRequest", {"hookSpecificOutput": {"decision": decision}})
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ("PreToolUse", "PreToolUse cannot carry a block (use deny())"),
        ("PermissionRequest", "PermissionRequest cannot carry a block (use deny())"),
        ("SessionStart", "SessionStart cannot carry a block"),
    ],
)
def test_a_block_an_event_cannot_carry_names_the_helper_it_can(event: str, message: str) -> None:
    # the tool-permission events deny rather than block: the message says which helper to use
    with pytest.raises(OutputError) as raised:
        block("no").check(event)
    assert str(raised.value) == message
