"""JavaScript regular expressions, read with JavaScript's meaning and run by Python's ``re``.

Claude Code and Posit test a matcher with ``new RegExp(matcher).test(value)``: no flags, so
the non-Unicode grammar with the web-compatibility rules (ECMAScript Annex B). Python's ``re``
reads much of the same text differently: ``$`` also matches before a final newline,
``\\d``/``\\w``/``\\s`` and ``\\b`` are Unicode-aware, ``.`` stops only at ``\\n``, ``{`` and
``]`` are not always literals, a backreference to a group that did not take part fails instead
of matching nothing.
And it accepts text JavaScript rejects (``(?i)``, ``(?P<name>...)``, ``a*+``, ``(?>...)``) or
reads as something else (``\\A`` and ``\\Z`` are a literal ``A`` and ``Z`` there).

:func:`translate` rewrites a JavaScript pattern into a Python pattern that matches the same
strings (compiled with ``re.ASCII``), and raises :class:`JsRegexError` for a pattern JavaScript
rejects, or one whose JavaScript meaning is almost certainly not what its author meant (a
Python-only construct, an escaped letter that JavaScript reads as the bare letter).
"""

from __future__ import annotations

import re

# JavaScript's \s: WhiteSpace and LineTerminator, as the body of a Python character class.
_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
# JavaScript's . matches anything but a line terminator.
_DOT = "[^\\n\\r\\u2028\\u2029]"
# Patterns, compiled on first use (by re's own cache): most matchers need none of them, and
# compiling is a measurable share of a command hook's start-up.
_QUANTIFIER = r"\{([0-9]+)(,([0-9]*))?\}"
_HEX2 = r"[0-9A-Fa-f]{2}"
_HEX4 = r"[0-9A-Fa-f]{4}"
_CONTROL = {"f": "\x0c", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}
_DIGITS = "0123456789"
# Escaped letters JavaScript reads as the letter itself, with what the author likely meant.
_LETTER_HINTS = {
    "A": "Python's start of input; use ^",
    "Z": "Python's end of input; use $",
    "z": "an end of input in other engines; use $",
    "G": "a match anchor in other engines",
    "K": "a match reset in other engines",
    "Q": "a quoting escape in other engines; escape each character instead",
    "h": "horizontal space in other engines; use [ \\t]",
    "R": "a line break in other engines; use (?:\\r\\n|[\\n\\r])",
    "N": "a named character in Python",
    "a": "a bell character in Python; use \\x07",
    "e": "an escape character in other engines; use \\x1b",
    "U": "a long Unicode escape in Python",
}


class JsRegexError(ValueError):
    """A matcher JavaScript rejects, or one that means something else there than it seems."""


def translate(pattern: str) -> str:
    """The Python pattern (for ``re.compile(..., re.ASCII)``) matching what ``pattern`` matches
    as a flagless JavaScript ``RegExp``; raises :class:`JsRegexError`."""
    return _Translator(pattern).run()


class _Translator:
    def __init__(self, source: str) -> None:
        self.src = source
        self.pos = 0
        self.out: list[str] = []
        self.count, self.names = _scan_groups(source)
        self.next_group = 1
        self.closed: set[int] = set()
        # the open groups: (capture number or 0, kind)
        self.stack: list[tuple[int, str]] = []
        self.can_repeat = False  # the last token is an atom a quantifier may follow
        self.repeated = False  # the last token is a quantifier

    def fail(self, message: str, at: int | None = None) -> JsRegexError:
        return JsRegexError(f"{message} (at position {self.pos if at is None else at})")

    def run(self) -> str:
        src = self.src
        while self.pos < len(src):
            char = src[self.pos]
            if char == "\\":
                self.escape()
            elif char == "[":
                self.atom(self.char_class())
            elif char == "(":
                self.open_group()
            elif char == ")":
                self.close_group()
            elif char == "|":
                self.emit("|", 1, repeatable=False)
            elif char in "*+?":
                self.quantifier(char, 1)
            elif char == "{":
                found = re.compile(_QUANTIFIER).match(src, self.pos)
                if found is None:  # not a quantifier: a literal brace, as in every browser
                    self.emit("\\{", 1)
                else:
                    low, high = found.group(1), found.group(3)
                    if found.group(2) and high and int(high) < int(low):
                        raise self.fail("numbers out of order in a {} quantifier")
                    self.quantifier(found.group(0), len(found.group(0)))
            elif char in "}]":
                self.emit("\\" + char, 1)
            elif char == ".":
                self.emit(_DOT, 1)
            elif char == "^":
                self.emit("^", 1, repeatable=False)
            elif char == "$":
                # end of input only: Python's $ also matches before a final newline
                self.emit("\\Z", 1, repeatable=False)
            else:
                self.emit(re.escape(char), 1)
        if self.stack:
            raise self.fail("unterminated group")
        return "".join(self.out)

    # -- tokens --------------------------------------------------------------------------

    def emit(self, text: str, width: int, *, repeatable: bool = True) -> None:
        self.out.append(text)
        self.pos += width
        self.can_repeat = repeatable
        self.repeated = False

    def atom(self, text: str) -> None:
        """Emit ``text`` for the source already consumed."""
        self.out.append(text)
        self.can_repeat = True
        self.repeated = False

    def quantifier(self, text: str, width: int) -> None:
        if not self.can_repeat:
            if self.repeated and text == "+":
                raise self.fail("a possessive quantifier (*+, ++, ?+) is Python-only")
            raise self.fail(f"nothing to repeat before {text!r}")
        self.out.append(text)
        self.pos += width
        if self.src.startswith("?", self.pos):  # lazy
            self.out.append("?")
            self.pos += 1
        self.can_repeat = False
        self.repeated = True

    def open_group(self) -> None:
        src, at = self.src, self.pos
        if not src.startswith("(?", at):
            self.stack.append((self.next_group, "capture"))
            self.next_group += 1
            self.emit("(", 1, repeatable=False)
            return
        rest = src[at + 2 : at + 4]
        for prefix, kind in ((":", "group"), ("=", "lookahead"), ("!", "lookahead")):
            if rest.startswith(prefix):
                self.stack.append((0, kind))
                self.emit("(?" + prefix, 2 + len(prefix), repeatable=False)
                return
        for prefix in ("<=", "<!"):
            if rest.startswith(prefix):
                self.stack.append((0, "lookbehind"))
                self.emit("(?" + prefix, 4, repeatable=False)
                return
        if rest.startswith("<"):
            end = src.find(">", at + 3)
            name = src[at + 3 : end] if end != -1 else ""
            if not _is_group_name(name):
                raise self.fail("invalid capture group name")
            # names matter only to \k<name> in the pattern itself, which is translated to the
            # group's number: a plain group keeps any JavaScript name Python could not spell
            self.stack.append((self.next_group, "capture"))
            self.next_group += 1
            self.emit("(", end + 1 - at, repeatable=False)
            return
        if rest.startswith("P"):
            raise self.fail(
                "(?P<name>...) and (?P=name) are Python's spelling; JavaScript writes "
                "(?<name>...) and \\k<name>"
            )
        if rest.startswith(">"):
            raise self.fail("an atomic group (?>...) has no JavaScript equivalent")
        if rest.startswith("#"):
            raise self.fail("a comment group (?#...) is Python-only")
        if rest.startswith("("):
            raise self.fail("a conditional group (?(...)...) is Python-only")
        if rest[:1].isalpha() or rest.startswith("-"):
            raise self.fail(
                "inline flags like (?i) are not JavaScript: a matcher has no flags and is "
                "case-sensitive (write [Rr]efund to accept both cases)"
            )
        raise self.fail("invalid group")

    def close_group(self) -> None:
        if not self.stack:
            raise self.fail("unmatched ')'")
        number, kind = self.stack.pop()
        if number:
            self.closed.add(number)
        # JavaScript repeats a lookahead (web compatibility) but never a lookbehind
        self.emit(")", 1, repeatable=kind != "lookbehind")

    def escape(self) -> None:
        src, at = self.src, self.pos
        if at + 1 >= len(src):
            raise self.fail("\\ at end of pattern")
        char = src[at + 1]
        if char in "dDwW":
            self.emit("\\" + char, 2)  # ASCII, as compiled with re.ASCII
        elif char == "s":
            self.emit(f"[{_SPACE}]", 2)
        elif char == "S":
            self.emit(f"[^{_SPACE}]", 2)
        elif char in "bB":
            self.emit("\\" + char, 2, repeatable=False)
        elif char in _DIGITS and char != "0":
            end = at + 1
            while end < len(src) and src[end] in _DIGITS:
                end += 1
            number = int(src[at + 1 : end])
            if number > self.count:
                raise self.fail(
                    f"\\{number} refers to no group (the pattern has {self.count}), so "
                    "JavaScript would read it as a character escape, not a backreference"
                )
            self.pos = end
            self.atom(self.backreference(number))
        elif char == "k" and self.names:
            end = src.find(">", at + 3) if src.startswith("<", at + 2) else -1
            name = src[at + 3 : end] if end != -1 else ""
            if name not in self.names:
                raise self.fail("\\k must be followed by <name> of a capture group")
            self.pos = end + 1
            self.atom(self.backreference(self.names[name]))
        else:
            text, width = self.character_escape(at)
            self.emit(re.escape(text), width)

    def backreference(self, number: int) -> str:
        # JavaScript: a group that has not captured (not taken part, not closed yet, or the
        # group the reference is in) matches the empty string; Python's \N would fail there
        if number in self.closed:
            return f"(?:(?({number})\\{number}))"
        return "(?:)"

    def character_escape(self, at: int) -> tuple[str, int]:
        """The one character ``\\x`` at ``at`` stands for, and the width of the escape."""
        src = self.src
        char = src[at + 1]
        if char in _CONTROL:
            return _CONTROL[char], 2
        if char == "0" and not (src[at + 2 : at + 3] and src[at + 2] in _DIGITS):
            return "\x00", 2
        if char == "c" and src[at + 2 : at + 3].isascii() and src[at + 2 : at + 3].isalpha():
            return chr(ord(src[at + 2]) % 32), 3
        if char == "x" and re.compile(_HEX2).match(src, at + 2):
            return chr(int(src[at + 2 : at + 4], 16)), 4
        if char == "u":
            if src.startswith("{", at + 2):
                raise self.fail("\\u{...} needs the u flag, which a matcher does not have", at)
            if re.compile(_HEX4).match(src, at + 2):
                code = int(src[at + 2 : at + 6], 16)
                low = src[at + 8 : at + 12] if src.startswith("\\u", at + 6) else ""
                if 0xD800 <= code < 0xDC00 and re.fullmatch(_HEX4, low):
                    pair = int(low, 16)
                    if 0xDC00 <= pair < 0xE000:  # one astral character, as JavaScript reads it
                        return chr(0x10000 + ((code - 0xD800) << 10) + (pair - 0xDC00)), 12
                return chr(code), 6
        if char in "pP":
            raise self.fail(
                f"\\{char}{{...}} needs the u flag, which a matcher does not have "
                f"(JavaScript reads a literal {char})",
                at,
            )
        if char in _DIGITS:
            raise self.fail("a legacy octal escape is not allowed here", at)
        if char.isascii() and char.isalpha():
            hint = _LETTER_HINTS.get(char, "probably not what was meant")
            raise self.fail(
                f"\\{char} is a literal {char!r} in JavaScript ({hint}); write {char} "
                "if that is what is meant",
                at,
            )
        return char, 2  # an escaped symbol: the symbol itself

    def char_class(self) -> str:
        """Translate ``[...]`` at the current position; returns the Python text."""
        src = self.src
        at = self.pos
        self.pos += 1
        negated = src.startswith("^", self.pos)
        if negated:
            self.pos += 1
        if src.startswith("]", self.pos):  # JavaScript: [] matches nothing, [^] anything
            self.pos += 1
            return "[\\s\\S]" if negated else "(?!)"
        parts: list[str] = []  # Python class-body pieces
        not_space = False  # the class holds \S, which a Python class body cannot hold
        while True:
            if self.pos >= len(src):
                raise self.fail("unterminated character class", at)
            if src[self.pos] == "]":
                self.pos += 1
                break
            first, first_text = self.class_atom()
            if (
                src.startswith("-", self.pos)
                and self.pos + 1 < len(src)
                and src[self.pos + 1] != "]"
            ):
                dash = self.pos
                self.pos += 1
                second, second_text = self.class_atom()
                if first is not None and second is not None:
                    if ord(second) < ord(first):
                        raise self.fail("range out of order in character class", dash)
                    parts.append(f"{re.escape(first)}-{re.escape(second)}")
                    continue
                # a class escape on either side: the '-' is a literal (web compatibility)
                for text in (first_text, "\\-", second_text):
                    if text == "\\S":
                        not_space = True
                    else:
                        parts.append(text)
                continue
            if first_text == "\\S":
                not_space = True
            else:
                parts.append(first_text)
        body = "".join(parts)
        if not not_space:
            return f"[{'^' if negated else ''}{body}]"
        if negated:  # not in body and not \S: the whitespace outside body
            return f"(?:(?![{body}])[{_SPACE}])" if body else f"[{_SPACE}]"
        return f"(?:[{body}]|[^{_SPACE}])" if body else f"[^{_SPACE}]"

    def class_atom(self) -> tuple[str | None, str]:
        """One member of a class: (its character or None for a class escape, Python text)."""
        src, at = self.src, self.pos
        char = src[at]
        if char != "\\":
            self.pos += 1
            return char, re.escape(char)
        if at + 1 >= len(src):
            raise self.fail("\\ at end of pattern")
        escaped = src[at + 1]
        if escaped in "dDwW":
            self.pos += 2
            return None, "\\" + escaped
        if escaped == "s":
            self.pos += 2
            return None, _SPACE
        if escaped == "S":
            self.pos += 2
            return None, "\\S"
        if escaped == "b":  # backspace, in a class
            self.pos += 2
            return "\x08", "\\x08"
        if escaped == "-":
            self.pos += 2
            return "-", "\\-"
        text, width = self.character_escape(at)
        self.pos += width
        return text, re.escape(text)


def _scan_groups(source: str) -> tuple[int, dict[str, int]]:
    """The number of capture groups of a JavaScript pattern and their names -> numbers."""
    count = 0
    names: dict[str, int] = {}
    at, in_class = 0, False
    while at < len(source):
        char = source[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            if not source.startswith("(?", at):
                count += 1
            elif source.startswith("(?<", at) and source[at + 3 : at + 4] not in ("=", "!"):
                count += 1
                end = source.find(">", at + 3)
                name = source[at + 3 : end] if end != -1 else ""
                if name in names:
                    raise JsRegexError(f"duplicate capture group name {name!r}")
                names[name] = count
        at += 1
    return count, names


def _is_group_name(name: str) -> bool:
    # a JavaScript IdentifierName: Python's identifiers, plus '$'
    return bool(name) and name.replace("$", "_").isidentifier()
