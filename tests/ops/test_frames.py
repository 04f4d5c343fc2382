"""Frames read from a non-blocking pipe: whatever the pipe hands over at a time, the whole
frames come out in order, once each, and a frame cut short waits for the rest."""

from __future__ import annotations

from handler_kit.ops.audit.process import encode_frame, take_frames

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
