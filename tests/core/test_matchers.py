"""Matchers: the Claude Code / Runbear rule, exactly, compiled once at decoration, with
JavaScript's regular expressions; the spellings of an MCP tool's name; events without one."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handler_kit import MatcherError, compile_matcher, parse_event, tool_matcher
from handler_kit.core import matchers
from handler_kit.core.matchers import is_match_all
from handler_kit.core.names import MATCHERLESS_EVENTS

NAMES = [
    "issue_refund",
    "orders__refund",
    "refund",
    "issue_refund_v2",
    "send-message",
    "send_message",
    "mcp__context-server__lookup",
    "Bash",
    "",
]


@pytest.mark.parametrize("matcher", [None, "", "*", "  ", " * "])
def test_omitted_empty_or_star_match_everything(matcher):
    match = compile_matcher(matcher)
    assert is_match_all(matcher)
    assert all(match(name) for name in NAMES)
    assert match(None)


@pytest.mark.parametrize(
    ("matcher", "matched"),
    [
        ("refund", {"refund"}),  # the Runbear doc's own example: exactly refund
        ("issue_refund|orders__refund", {"issue_refund", "orders__refund"}),
        ("issue_refund,orders__refund", {"issue_refund", "orders__refund"}),
        (" issue_refund | orders__refund ", {"issue_refund", "orders__refund"}),
        ("issue_refund, refund", {"issue_refund", "refund"}),
        ("issue_refund\t|\nBash", {"issue_refund", "Bash"}),
        ("send-message", {"send-message"}),  # '-' keeps it a list: not a regex range
        ("mcp__context-server__lookup", {"mcp__context-server__lookup"}),
        ("Bash|send_message", {"Bash", "send_message"}),
    ],
)
def test_exact_name_lists(matcher, matched):
    match = compile_matcher(matcher)
    assert {name for name in NAMES if match(name)} == matched
    assert not match(None)
    assert not is_match_all(matcher)


@pytest.mark.parametrize(
    ("matcher", "matched"),
    [
        ("refund.*", {"issue_refund", "orders__refund", "refund", "issue_refund_v2"}),
        ("send[-_]message", {"send-message", "send_message"}),
        ("^mcp__context-server__", {"mcp__context-server__lookup"}),
        ("refund$", {"issue_refund", "orders__refund", "refund"}),
        ("^(issue_refund|Bash)$", {"issue_refund", "Bash"}),
        ("_v\\d", {"issue_refund_v2"}),
        ("B.sh", {"Bash"}),
    ],
)
def test_anything_else_is_an_unanchored_regex(matcher, matched):
    match = compile_matcher(matcher)
    assert {name for name in NAMES if match(name)} == matched
    assert not match(None)


def test_unanchored_means_search_not_match():
    match = compile_matcher("fund.")
    assert match("issue_refund_v2")  # found in the middle
    assert not match("issue_refund")  # nothing after "fund"


@pytest.mark.parametrize("bad", ["refund(", "[a-", "*refund", "a{2,1}", "(?P<x"])
def test_invalid_regex_fails_at_compile(bad):
    with pytest.raises(MatcherError, match="invalid matcher"):
        compile_matcher(bad)


def test_invalid_regex_fails_at_decoration_with_the_handlers_name(hooks):
    with pytest.raises(ValueError, match="refund_gate_v3") as info:

        @hooks.pre_tool_use(matcher="issue_refund(")
        def refund_gate_v3(event):
            return None

    assert "issue_refund(" in str(info.value)
    with pytest.raises(ValueError, match="custom-name"):

        @hooks.pre_tool_use(matcher="[unclosed", name="custom-name")
        def whatever(event):
            return None

    assert hooks.handlers == []  # nothing half-registered


def test_matchers_filter_handlers_per_event_field(hooks):
    """Tool events match tool_name; SessionStart its source; Notification its type."""

    @hooks.pre_tool_use(matcher="issue_refund|orders__refund")
    def gate(event):
        return None

    @hooks.pre_tool_use(matcher="mcp__.*")
    def mcp_only(event):
        return None

    @hooks.pre_tool_use()
    def every_tool(event):
        return None

    @hooks.session_start(matcher="startup|resume")
    def fresh(event):
        return "fresh"

    @hooks.notification(matcher="idle_prompt")
    def idle(event):
        return None

    def names(data):
        return [h.name for h in hooks.matching(parse_event(data))]

    assert names({"hook_event_name": "PreToolUse", "tool_name": "orders__refund"}) == [
        "gate",
        "every_tool",
    ]
    assert names({"hook_event_name": "PreToolUse", "tool_name": "mcp__orders__refund"}) == [
        "mcp_only",
        "every_tool",
    ]
    assert names({"hook_event_name": "PreToolUse"}) == ["every_tool"]
    assert names({"hook_event_name": "SessionStart", "source": "resume"}) == ["fresh"]
    assert names({"hook_event_name": "SessionStart", "source": "clear"}) == []
    assert names({"hook_event_name": "Notification", "notification_type": "idle_prompt"}) == [
        "idle"
    ]
    answer = asyncio.run(
        hooks.answer(parse_event({"hook_event_name": "SessionStart", "source": "compact"}))
    )
    assert answer.output == {} and answer.invocations == []


# -- one matcher for a server's tool, under every runtime's name ------------------------------

# server, tool -> names it must match, names it must never match (seed 000's naming rules:
# Anthropic agents <server>_<tool> with characters other than letters, digits and _ replaced;
# Claude Agent SDK agents mcp__<server>__<tool>, the server trimmed, runs collapsed, _2
# suffixes; the sandbox runtime <server>__<tool>; Claude Code's plugin servers
# mcp__plugin_<plugin>_<server>__<tool>).
SPELLINGS = [
    (
        "orders",
        "refund",
        [
            "orders_refund",  # Anthropic agents
            "orders__refund",  # the sandbox runtime
            "mcp__orders__refund",  # Claude Agent SDK agents, Claude Code, Posit
            "orders_2_refund",  # a renamed twin
            "mcp__orders_2__refund",
            "mcp__orders_13__refund",
            "mcp__plugin_shop_orders__refund",  # Claude Code, a plugin's server
            "mcp__plugin_fjord-tools_orders__refund",
            "mcp__plugin_shop_orders_2__refund",
        ],
        [
            "orders_refund_status",
            "orders_refunds",
            "mcp__orders__refund_status",
            "issue_refund",
            "refund",
            "xorders_refund",
            "mcp__orders__refund\n",
            "mcp__orders_x__refund",
            "mcp__plugin_shop_orders__refund_status",
            "mcp__plugin_shop_myorders__refund",
            "mcp__plugin__orders__refund",
            "plugin_shop_orders__refund",
            "orders_refund ",
            "ORDERS_REFUND",
        ],
    ),
    (
        "context-server",
        "lookup",
        [
            "context_server_lookup",  # the seed's own example
            "mcp__context-server__lookup",  # the seed's own example
            "context-server_lookup",  # Classic agents keep names as they are
            "context_server__lookup",
            "mcp__context-server_2__lookup",
            "mcp__plugin_kit_context-server__lookup",
        ],
        ["context_server_lookup_v2", "mcp__context_server__lookups", "context__server_lookup"],
    ),
    (
        "__crm__",  # trimmed of leading and trailing _ on Claude Agent SDK agents
        "send-message",
        ["mcp__crm__send-message", "mcp__crm_2__send-message", "__crm___send_message"],
        ["mcp____crm____send_message_x", "mcp__crm__send_message_x"],
    ),
    (
        " my crm..v2 ",  # trimmed, then each run of other characters collapsed to one _
        "find",
        ["mcp__my_crm_v2__find", "mcp__my_crm_v2_3__find", "_my_crm__v2__find"],
        ["mcp__my_crm__v2__find_all"],
    ),
    (
        "runbear",  # a Custom MCP integration named runbear becomes runbear_2
        "notes.search",
        ["mcp__runbear_2__notes.search", "runbear_notes_search", "mcp__runbear_2__notes_search"],
        ["mcp__runbear_2__notesxsearch", "runbear_notes_search_all"],
    ),
]


@pytest.mark.parametrize(
    ("server", "tool", "matched", "unmatched"), SPELLINGS, ids=[s[0] for s in SPELLINGS]
)
def test_tool_matcher_matches_every_runtime_spelling_and_nothing_else(
    server, tool, matched, unmatched
):
    matcher = tool_matcher(server, tool)
    assert matcher.startswith("^") and matcher.endswith("$")  # anchored, never a name list
    match = compile_matcher(matcher)
    assert [name for name in matched if not match(name)] == []
    assert [name for name in unmatched if match(name)] == []


def test_tool_matcher_is_a_decorator_matcher_and_joins_with_other_names(hooks):

    @hooks.pre_tool_use(matcher="^issue_refund$|" + tool_matcher("orders", "refund"))
    def gate(event):
        return None

    def runs(tool):
        event = parse_event({"hook_event_name": "PreToolUse", "tool_name": tool})
        return hooks.matching(event) == [hooks.by_name["gate"]]

    assert all(runs(t) for t in ("issue_refund", "orders_refund", "mcp__orders_2__refund"))
    assert not any(runs(t) for t in ("issue_refund_v2", "orders_refund_status", "orders"))


def test_tool_matcher_in_a_runbear_document_and_claude_code_settings(hooks):
    from handler_kit.claude_code.settings import claude_code_hooks
    from handler_kit.runbear.document import validate_document
    from handler_kit.runbear.generate import runbear_document

    matcher = tool_matcher("context-server", "lookup")

    @hooks.pre_tool_use(matcher=matcher, fail_closed=True)
    def gate(event):
        return None

    document = runbear_document(hooks, base_url="https://hooks.example.com").document
    assert document["hooks"]["PreToolUse"][0]["matcher"] == matcher
    validate_document(document)  # the matcher is a valid JavaScript regular expression
    settings = claude_code_hooks(hooks, "m:app", base_url="https://hooks.example.com")
    assert settings["PreToolUse"][0]["matcher"] == matcher


def test_tool_matcher_refuses_names_it_cannot_spell():
    with pytest.raises(ValueError, match="needs a tool name"):
        tool_matcher("orders", "")
    with pytest.raises(ValueError, match="no letter or digit"):
        tool_matcher(" __ ", "refund")
    with pytest.raises(TypeError):
        tool_matcher("orders", None)  # type: ignore[arg-type]


# -- matchers are JavaScript regular expressions ------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "matched", "unmatched"),
    [
        # named groups, JavaScript's spelling
        ("(?<srv>mcp__crm__)\\w+", ["mcp__crm__lookup"], ["mcp__crm__", "crm__lookup"]),
        ("(?<s>a)\\k<s>", ["aa"], ["ab"]),
        # $ is the end of the input, never before a final newline
        ("refund$", ["issue_refund"], ["issue_refund\n", "refund_v2"]),
        ("^Bash$", ["Bash"], ["Bash\n", "xBash"]),
        # \d, \w, \s and \b as JavaScript has them (no u flag): ASCII digits and word
        # characters, JavaScript's whitespace
        ("^\\d+$", ["2024"], ["٣", "²"]),
        ("^\\w+$", ["send_message2"], ["café", "send-message"]),
        ("a\\sb", ["a b", "a\u00a0b", "a\ufeffb"], ["a\u0085b", "a\x1cb"]),
        ("\\bé", ["xé"], []),  # é is not a word character: a boundary before it
        # . stops at every line terminator
        ("^a.c$", ["abc", "a\u0085c"], ["a\nc", "a\rc", "a\u2028c"]),
        # {,n} is not a quantifier: literal braces
        ("x{,3}", ["x{,3}"], ["xxx"]),
        # classes: an escape beside '-' makes it a literal; [] and [^]; \S in a class
        ("^[\\d-z]$", ["5", "-", "z"], ["a"]),
        ("x[]", [], ["x", "x]"]),
        ("^[^]$", ["\n", "a"], ["", "ab"]),
        ("^[^\\S\\n]$", [" ", "\u3000"], ["\n", "a", "\x85"]),
        # a backreference to a group that did not take part matches the empty string
        ("^(?:(a)|b)\\1c$", ["bc", "aac"], ["bac"]),
        ("^(a\\1)$", ["a"], ["aa"]),
        # a surrogate pair is the one character it spells
        ("^\\ud83d\\ude00$", ["\U0001f600"], []),
    ],
)
def test_javascript_semantics(matcher, matched, unmatched):
    match = compile_matcher(matcher)
    assert [value for value in matched if not match(value)] == []
    assert [value for value in unmatched if match(value)] == []


@pytest.mark.parametrize(
    ("matcher", "message"),
    [
        # Python-only
        ("(?i)refund", "inline flags like (?i) are not JavaScript"),
        ("(?i:refund)", "inline flags"),
        ("(?P<srv>mcp__crm__)\\w+", "(?P<name>...) and (?P=name) are Python's spelling"),
        ("(?P<a>x)(?P=a)", "Python's spelling"),
        ("refund\\Z", "\\Z is a literal 'Z' in JavaScript (Python's end of input; use $)"),
        ("\\Arefund", "\\A is a literal 'A' in JavaScript (Python's start of input; use ^)"),
        ("refund.*+", "a possessive quantifier (*+, ++, ?+) is Python-only"),
        ("a{2}+", "possessive"),
        ("(?>refund)", "an atomic group (?>...) has no JavaScript equivalent"),
        ("(?#note)refund", "a comment group (?#...) is Python-only"),
        ("(a)?(?(1)b|c)", "a conditional group (?(...)...) is Python-only"),
        # other engines' escapes JavaScript reads as a bare letter
        ("refund\\z", "\\z is a literal 'z'"),
        ("\\p{L}+", "\\p{...} needs the u flag"),
        ("\\u{41}", "\\u{...} needs the u flag"),
        ("\\e", "\\e is a literal 'e'"),
        ("a\\8", "\\8 refers to no group"),
        # JavaScript rejects these
        ("(?<x>a)(?<x>b)", "duplicate capture group name 'x'"),
        ("(?<x>a)\\k<y>", "\\k must be followed by <name> of a capture group"),
        ("(?<1x>a)", "invalid capture group name"),
        ("(?<=a)*b", "nothing to repeat"),
        ("a**", "nothing to repeat"),
        ("a{2,1}", "numbers out of order"),
        ("[z-a]", "range out of order"),
        ("refund(", "unterminated group"),
        ("refund)", "unmatched ')'"),
        ("[refund", "unterminated character class"),
        ("refund\\", "\\ at end of pattern"),
        # valid JavaScript that Python cannot run
        ("(?<=mcp__\\w+)refund", "no Python equivalent"),
    ],
)
def test_python_only_and_invalid_javascript_is_refused_with_a_reason(matcher, message):
    with pytest.raises(MatcherError) as info:
        compile_matcher(matcher)
    text = str(info.value)
    assert text.startswith(f"invalid matcher regular expression '{matcher}': ")
    assert message in text
    assert "\n" not in text


# Patterns and names for the comparison with JavaScript itself (where node is installed).
NODE_PATTERNS = [
    "(?<srv>mcp__crm__)\\w+",
    "refund$",
    "^a.c$",
    "a\\sb",
    "\\bfoo\\b",
    "x{2,3}",
    "x{,3}",
    "a{",
    "[\\d-z]",
    "[^\\S ]",
    "(?:(a)|b)\\1c",
    "(a\\1)",
    "[\\s\\S]",
    "\\u0041|\\x42|\\0|\\cJ|[\\b]",
    "é\\w",
    "\\W",
    "(?<=mcp__)crm",
    "(?<!x)y",
    "a*?b",
    "$^",
    "a(?!b)",
    "[.][^.]",
    "^(?:orders(?:_[0-9]+)?__?refund|mcp__orders(?:_[0-9]+)?__refund)$",
    "^(?:mcp__plugin_[A-Za-z0-9_-]+_orders(?:_[0-9]+)?__refund)$",
]
NODE_VALUES = [
    "mcp__crm__lookup",
    "refund",
    "refund\n",
    "abc",
    "a\nc",
    "a\u2028c",
    "a\u00a0b",
    "a\u0085b",
    "a b",
    "foo",
    "xfoo",
    "é",
    "éa",
    "xxx",
    "x{,3}",
    "a{",
    "-",
    "5",
    "z",
    "bc",
    "bac",
    "aac",
    "a",
    "A",
    "B",
    "\0",
    "\n",
    "\x08",
    "٣",
    "!",
    "y",
    "xy",
    "\ufeff",
    "aab",
    ".x",
    "",
    "orders_refund",
    "mcp__orders_2__refund",
    "orders_refund_status",
    "mcp__plugin_shop_orders__refund",
    "mcp__plugin__orders__refund",
]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_matchers_agree_with_javascript_itself():
    """Each matcher, on each name, as node's RegExp answers it."""
    script = (
        "const [ps, vs] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(ps.map(p => vs.map(v => new RegExp(p).test(v)))));"
    )
    done = subprocess.run(
        ["node", "-e", script],
        input=json.dumps([NODE_PATTERNS, NODE_VALUES]),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    disagreements = [
        (pattern, value, expected)
        for pattern, row in zip(NODE_PATTERNS, json.loads(done.stdout), strict=True)
        for value, expected in zip(NODE_VALUES, row, strict=True)
        if compile_matcher(pattern)(value) is not expected
    ]
    assert disagreements == []


# -- events with no matcher field ---------------------------------------------------------------


@pytest.mark.parametrize("event", sorted(MATCHERLESS_EVENTS))
def test_a_matcher_on_an_event_without_one_is_refused_at_decoration(event, hooks):
    with pytest.raises(ValueError) as info:
        hooks.on(event, matcher="startup")
    assert info.value.reason == (
        f"{event} has no matcher: the runtimes ignore a matcher there and run the handler on "
        f"every {event}; remove matcher='startup'"
    )
    # omitted, empty or * match everything, as the runtimes run the group: accepted
    for i, matcher in enumerate((None, "", "*")):
        hooks.on(event, matcher=matcher, name=f"h{i}")(lambda event: None)
    assert len(hooks.by_event[event]) == 3


def test_the_decorators_refuse_it_too(hooks):
    with pytest.raises(ValueError, match="UserPromptSubmit has no matcher"):
        hooks.user_prompt_submit(matcher="refund.*")
    with pytest.raises(ValueError, match="Stop has no matcher"):
        hooks.stop(matcher="end_turn")
    assert hooks.handlers == []


# -- SessionStart without a source --------------------------------------------------------------


def test_session_start_without_source_is_a_startup(hooks):
    """Runbear sends no source ("always startup"): matcher="startup" selects it."""

    @hooks.session_start(matcher="startup")
    def fresh(event):
        return "fresh"

    @hooks.session_start(matcher="resume|clear")
    def resumed(event):
        return "resumed"

    def names(data):
        return [h.name for h in hooks.matching(parse_event(data))]

    assert names({"hook_event_name": "SessionStart"}) == ["fresh"]
    assert names({"hook_event_name": "SessionStart", "source": None}) == ["fresh"]
    assert names({"hook_event_name": "SessionStart", "source": "clear"}) == ["resumed"]
    assert parse_event({"hook_event_name": "SessionStart"}).source is None  # not invented


# -- the character sets stand for the regular expressions they replaced -------------------------

# The one-character classes the matchers were written with; the module now uses sets of
# characters (no pattern to compile at import): the same answers on any text.
_REFERENCE_EXACT_LIST = re.compile(r"[A-Za-z0-9_\-\s|,]*")
_REFERENCE_SEPARATORS = re.compile(r"[|,]")
_REFERENCE_NOT_WORD = re.compile(r"[^A-Za-z0-9_]")
_REFERENCE_NOT_WORD_OR_DASH_RUN = re.compile(r"[^A-Za-z0-9-]+")
_REFERENCE_NOT_WORD_OR_DASH = re.compile(r"[^A-Za-z0-9_-]")
_REFERENCE_SPECIAL = re.compile(r"([\\^$.|?*+()\[\]{}/])")
# what names are made of, and what tests the edges: separators, Unicode spaces and digits,
# regex syntax, non-ASCII letters, surrogates
_TEXT = st.text(
    st.sampled_from(list("aZ09_-|, \t\n\x0b\x1c\xa0\u2003\u3000.$\\/()[]{}*+?^é\u0660"))
    | st.characters(),
    max_size=24,
)


def _reference_tool_matcher(server: str, tool: str) -> str:
    """tool_matcher as it was written with regular expressions."""

    def escape(name: str) -> str:
        return _REFERENCE_SPECIAL.sub(r"\\\1", name)

    sdk_server = _REFERENCE_NOT_WORD_OR_DASH_RUN.sub("_", server.strip()).strip("_")
    if not sdk_server:
        raise ValueError("no letter or digit")
    twin = "(?:_[0-9]+)?"
    word_server = escape(_REFERENCE_NOT_WORD.sub("_", server))
    spellings = [f"{word_server}{twin}__?{escape(_REFERENCE_NOT_WORD.sub('_', tool))}"]
    if _REFERENCE_NOT_WORD.search(server + tool):
        spellings.append(f"{escape(server)}_{escape(tool)}")
    spellings.append(f"mcp__{escape(sdk_server)}{twin}__{escape(tool)}")
    claude_code = (
        f"mcp__{escape(_REFERENCE_NOT_WORD_OR_DASH.sub('_', server))}{twin}"
        f"__{escape(_REFERENCE_NOT_WORD_OR_DASH.sub('_', tool))}"
    )
    if claude_code not in spellings:
        spellings.append(claude_code)
    spellings.append("mcp__plugin_[A-Za-z0-9_-]+_" + claude_code.removeprefix("mcp__"))
    return f"^(?:{'|'.join(spellings)})$"


@settings(max_examples=500, deadline=None, database=None)
@given(_TEXT, _TEXT)
def test_the_character_sets_answer_as_the_regular_expressions_did(server, tool):
    for text in (server, tool, server + tool):
        exact = all(c in matchers._EXACT_LIST or c.isspace() for c in text)
        assert exact is bool(_REFERENCE_EXACT_LIST.fullmatch(text))
        assert text.replace(",", "|").split("|") == _REFERENCE_SEPARATORS.split(text)
        assert matchers._escape(text) == _REFERENCE_SPECIAL.sub(r"\\\1", text)
        assert matchers._replaced(text, matchers._WORD) == _REFERENCE_NOT_WORD.sub("_", text)
        assert matchers._replaced(text, matchers._WORD_OR_DASH) == (
            _REFERENCE_NOT_WORD_OR_DASH.sub("_", text)
        )
        assert matchers._replaced(text, matchers._ALNUM_OR_DASH, collapse=True) == (
            _REFERENCE_NOT_WORD_OR_DASH_RUN.sub("_", text)
        )
    if not tool:
        return
    try:
        expected = _reference_tool_matcher(server, tool)
    except ValueError:
        with pytest.raises(ValueError, match="has no letter or digit"):
            tool_matcher(server, tool)
        return
    assert tool_matcher(server, tool) == expected


@settings(max_examples=500, deadline=None, database=None)
@given(_TEXT, st.lists(_TEXT, max_size=4))
def test_an_exact_list_is_read_as_before(matcher, values):
    """The exact-list path of compile_matcher against the regular expressions' reading."""
    if matcher.strip() in ("", "*") or not _REFERENCE_EXACT_LIST.fullmatch(matcher):
        return
    names = {n.strip() for n in _REFERENCE_SEPARATORS.split(matcher) if n.strip()}
    match = compile_matcher(matcher)
    for value in [*values, *names]:
        assert match(value) is (value in names)


def test_an_invalid_matcher_is_quoted_as_written_and_escaped_when_unprintable():
    with pytest.raises(MatcherError) as info:
        compile_matcher("refund(")
    assert str(info.value).startswith("invalid matcher regular expression 'refund(': ")
    with pytest.raises(MatcherError) as info:
        compile_matcher("refund(\n")
    assert str(info.value).startswith("invalid matcher regular expression 'refund(\\n': ")


def test_tool_matcher_says_what_it_needs():
    with pytest.raises(ValueError, match=r"^tool_matcher\(\) needs a tool name$"):
        tool_matcher("orders", "")
    message = r"^tool_matcher\(\) takes the server and the tool name as strings$"
    with pytest.raises(TypeError, match=message):
        tool_matcher("orders", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=message):
        tool_matcher(None, "refund")  # type: ignore[arg-type]
