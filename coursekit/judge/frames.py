"""The frames that carry the wire's messages (coursekit.judge.wire), one framing for both ends:
an 8-byte little-endian length, then that many bytes of JSON, at most MAX_FRAME."""
from __future__ import annotations

import json
import os
import struct

MAX_FRAME = 1 << 29  # 512 MiB: a reply larger than this is refused, not read

HEADER = struct.Struct("<Q")  # a frame: its length as 8 bytes, little-endian, then the JSON


class FrameTooLarge(ValueError):
    """A frame announced more than MAX_FRAME bytes: refused before it is read."""


def frame(message: dict) -> bytes:
    payload = json.dumps(message).encode()
    return HEADER.pack(len(payload)) + payload


def frame_size(header: bytes) -> int:
    """The length a frame's header announces; FrameTooLarge past MAX_FRAME."""
    (size,) = HEADER.unpack(header)
    if size > MAX_FRAME:
        raise FrameTooLarge("a frame larger than the channel allows")
    return size


def unframe(payload: bytes) -> dict:
    return json.loads(payload)


def write_frame(fd: int, message: dict) -> None:
    view = memoryview(frame(message))
    while view:
        view = view[os.write(fd, view):]


def read_exactly(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict:
    return unframe(read_exactly(fd, frame_size(read_exactly(fd, HEADER.size))))
