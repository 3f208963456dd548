"""The grader's end of the wire: two named pipes to the kernel, and a stand-in for the learner's
function that sends each call through them (coursekit.judge.wire is the other end, and the format
of what travels)."""
from __future__ import annotations

import os
import select
import shutil
import tempfile
import threading
from pathlib import Path

from coursekit.judge import codec, frames, messages, wire

POLL_S = 0.2  # how often a waiting call looks whether the kernel's cell has ended


class KernelStopped(BaseException):
    """The kernel's cell ended without answering a call (a BaseException: learner-error handlers
    in the checkers must not turn it into a hint about the learner's function)."""

    def __init__(self, hint: str):
        super().__init__(hint)
        self.hint = hint


class Channel:
    """Two named pipes in a private folder: requests to the kernel, replies from it. This side
    opens both read-write, so neither open blocks, whatever the kernel does."""

    def __init__(self, parent: Path | None = None):
        self.folder = Path(tempfile.mkdtemp(prefix="judge-", dir=parent))
        self.requests, self.replies = self.folder / "requests", self.folder / "replies"
        os.mkfifo(self.requests, 0o600)
        os.mkfifo(self.replies, 0o600)
        self.wfd = os.open(self.requests, os.O_RDWR)
        self.rfd = os.open(self.replies, os.O_RDWR)
        self.ended = threading.Event()  # set when the kernel's cell has finished
        self.stopped_hint = messages.LOST_CONTACT

    def close(self):
        os.close(self.wfd)
        os.close(self.rfd)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _wait(self, fd: int, write: bool) -> None:
        while True:
            ready = select.select([], [fd], [], POLL_S)[1] if write else select.select([fd], [], [], POLL_S)[0]
            if ready:
                return
            if self.ended.is_set():
                raise KernelStopped(self.stopped_hint)

    def send(self, message: dict) -> None:
        payload = frames.frame(message)
        view = memoryview(payload)
        while view:
            self._wait(self.wfd, write=True)
            view = view[os.write(self.wfd, view[:65536]):]

    def receive(self) -> dict:
        self._wait(self.rfd, write=False)
        try:
            size = frames.frame_size(self._read(frames.HEADER.size))
        except frames.FrameTooLarge:
            raise KernelStopped(messages.TOO_MUCH_DATA) from None
        return frames.unframe(self._read(size))

    def _read(self, n: int) -> bytes:
        chunks = []
        while n:
            self._wait(self.rfd, write=False)
            chunk = os.read(self.rfd, min(n, 1 << 20))
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)


class RemoteFunction:
    """Calls the learner's function in the kernel, like a local call: same return value, same
    in-place changes to the arguments, same exception type and message."""

    def __init__(self, channel: Channel, name: str):
        self.channel, self.__name__ = channel, name

    def __call__(self, *args, **kwargs):
        values, failed = self.many([(args, kwargs)])
        if failed is not None:
            raise failed[1]
        return values[0]

    def many(self, calls: list, events: bool = False) -> tuple[list, tuple | None]:
        """The calls [(args, kwargs), ...] in order, in one exchange with the kernel: what a loop of
        local calls returns, with each call's in-place changes made to its own arguments and the
        shared generators advanced. With `events`, a shared model that records what it is fed
        (specdec.toy.CachedBigramModel) holds, after each call, what the kernel's copy was fed in
        it. Returns (values, None), or (values before the failing call, (its index, its exception))."""
        calls = [(tuple(args), dict(kwargs)) for args, kwargs in calls]
        try:
            message, shared = wire.encode_calls(calls, events)
        except TypeError as exc:
            raise RuntimeError(f"checker bug: cannot send {exc} to the kernel") from None
        self.channel.send(message)
        reply = self.channel.receive()
        values = []
        try:
            items = reply["many"]
            if not isinstance(items, list) or len(items) > len(calls):
                raise ValueError("one reply per call")
            for (args, kwargs), item in zip(calls, items):
                for index, events in item.get("events", []):  # what a recording toy model was fed
                    shared[int(index)].events = codec.decode(events) if events is not None else None
                value, failure = _unpack(item, args, kwargs)
                if failure is not None:
                    return values, (len(values), failure)
                values.append(value)
            if len(values) < len(calls):
                raise ValueError("one reply per call")
            for local, after in zip(shared, reply["shared"]):
                if after is not None:
                    codec.update_in_place(local, codec.decode(after))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:  # a malformed reply: the kernel's own doing
            raise KernelStopped(messages.unreadable_reply(exc)) from None
        return values, None


def _unpack(reply: dict, args, kwargs):
    """(value, None) or (None, the learner's exception) from one call's reply; the call's in-place
    changes made to the local arguments. A malformed reply raises KeyError, TypeError, ValueError
    or AttributeError, which `many` turns into a hint."""
    if "error" in reply:
        name, text = (str(x)[:2000] for x in reply["error"])
        return None, _exception(name, text)
    for local, after in zip(args, reply.get("args", ())):  # absent: the call changed no argument
        if after is not None:
            codec.update_in_place(local, codec.decode(after))
    for key, after in reply.get("kwargs", {}).items():
        if key in kwargs and after is not None:
            codec.update_in_place(kwargs[key], codec.decode(after))
    if "opaque" in reply:
        return type(str(reply["opaque"])[:100], (), {})(), None
    return codec.decode(reply["ok"]), None


def _exception(name: str, text: str) -> BaseException:
    """The learner's exception, rebuilt: a builtin type when it is one (so the checkers' handling
    of ZeroDivisionError, NotImplementedError, exit() ... applies), else a stand-in of that name."""
    import builtins

    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and (issubclass(kind, Exception) or kind is SystemExit):
        try:
            return kind(text)
        except Exception:  # noqa: BLE001 - a builtin with another signature
            pass
    return type(name if name.isidentifier() else "Exception", (Exception,), {})(text)

