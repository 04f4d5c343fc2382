"""Frames read from a non-blocking pipe: whatever the pipe hands over at a time, the whole
frames come out in order, once each, and a frame cut short waits for the rest."""

from __future__ import annotations

import enum
from datetime import date

import pytest

from handler_kit.ops.audit.process import LENGTH, encode_frame, take_frames

MESSAGES = [[(1, "agree", {"a": 1})], ("batch", [b"x" * 70_000]), [], {"last": None}]


def test_frames_come_out_whole_whatever_the_reads_were() -> None:
    stream = b"".join(encode_frame(message) for message in MESSAGES)
    for size in (1, 2, 3, 5, 4096, 65_536, len(stream)):
        buffer, taken = bytearray(), []
        for start in range(0, len(stream), size):
            buffer += stream[start : start + size]
            taken += take_frames(buffer)
        assert taken == MESSAGES, size
        assert buffer == bytearray()


def test_a_frame_cut_short_stays_in_the_buffer() -> None:
    whole = encode_frame(["first"])
    cut = encode_frame(["second"])
    buffer = bytearray(whole + cut[:-1])
    assert take_frames(buffer) == [["first"]]
    assert bytes(buffer) == cut[:-1]
    assert take_frames(buffer) == []
    buffer += cut[-1:]
    assert take_frames(buffer) == [["second"]]
    assert buffer == bytearray()


class Colour(enum.StrEnum):
    RED = "red"


def test_a_message_holding_other_types_comes_out_as_it_went_in() -> None:
    # a handler's output may hold any value (an enum member, a date): the frame says how it
    # is written, and the message comes out with the same types
    message = ("batch", [("evt_1", {"updatedInput": {"colour": Colour.RED}}, date(2026, 12, 2))])
    buffer = bytearray(encode_frame(message))
    [taken] = take_frames(buffer)
    assert taken == message
    assert type(taken[1][0][1]["updatedInput"]["colour"]) is Colour
    assert type(taken[1][0][2]) is date


def test_bytes_that_are_not_a_frame_are_refused() -> None:
    # not the writer's bytes (a candidate writing to the pipe itself): an error, never a message
    with pytest.raises(ValueError, match="not a frame"):
        take_frames(bytearray(LENGTH.pack(3) + b"zzz"))
    # a frame's message cut short inside: an error too
    whole = encode_frame(("batch", [("evt_1", "webhook", 1.5, None)]))
    cut = bytearray(LENGTH.pack(len(whole) - LENGTH.size - 3) + whole[LENGTH.size : -3])
    with pytest.raises((EOFError, ValueError)):
        take_frames(cut)
