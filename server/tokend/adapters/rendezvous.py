"""Where a client finds the user's daemon, and the frames it speaks, with the standard library only.

`tokend statusline` and `tokend status` run in shell prompts and Claude Code's status line, where
every millisecond of start-up shows: this module imports nothing beyond os and stat (socket and
json when a function needs them), and `quick_connect` and `loads` serve a one-shot client with
the C modules under socket and json (`_socket`, `_json`: importing socket.py and json costs
~2 ms and ~3 ms of enum, selectors and re), so a client that asks the running daemon costs
little more than the interpreter's own start. The daemon's side of the same places (creating the
runtime folder, its locks, the TCP token) is daemon/paths.py, which builds on these names.

    $XDG_RUNTIME_DIR/tokend/daemon.sock      (else <tempdir>/tokend-<uid>/daemon.sock)
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Any, BinaryIO

APP = "tokend"
DEFAULT_SOCKET = "daemon.sock"


class UnsafePathError(RuntimeError):
    """A runtime file is not ours or is accessible to others; the message says what to do."""


class FrameError(Exception):
    """A frame that cannot be read: the peer closed, or what it sent is not a JSON object."""


class PeerClosed(FrameError):
    """The daemon closed the connection (it stopped, or it is restarting)."""


def runtime_location() -> str:
    """The user's runtime folder for tokend (the daemon's socket, locks and token), whether
    or not it exists yet: $XDG_RUNTIME_DIR/tokend, else <tempdir>/tokend-<uid>."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return os.path.join(xdg, APP)
    import tempfile  # only without XDG_RUNTIME_DIR: it costs a few milliseconds to import

    return os.path.join(tempfile.gettempdir(), f"{APP}-{os.getuid()}")


def check_socket_owner(path: str | os.PathLike[str]) -> None:
    """Raise UnsafePathError unless `path` is a socket owned by us (clients call this first)."""
    info = os.lstat(path)
    if not stat.S_ISSOCK(info.st_mode):
        raise UnsafePathError(f"{os.fspath(path)} is not a socket; remove it")
    if info.st_uid != os.getuid():
        raise UnsafePathError(
            f"{os.fspath(path)} belongs to uid {info.st_uid}, not to you; refusing to connect"
        )


def check_private_folder(path: str) -> None:
    """Raise UnsafePathError unless `path` is a folder of ours that nobody else may enter
    (FileNotFoundError when it does not exist). A client only reads: the daemon makes it."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePathError(f"{path} is not a directory; remove it")
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise UnsafePathError(
            f"{path} is not private to you (uid {info.st_uid}, mode "
            f"{stat.S_IMODE(info.st_mode):o}); remove it or set XDG_RUNTIME_DIR to a private one"
        )


def connect_unix(path: str | os.PathLike[str], timeout: float | None = None) -> socket.socket:
    """Connect to a daemon socket after checking that it is a socket we own."""
    import socket

    check_socket_owner(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(os.fspath(path))
        sock.settimeout(None)
    except BaseException:
        sock.close()
        raise
    return sock


def connect_default(timeout: float | None = None) -> socket.socket:
    """A connection to the user's default daemon, checking the runtime folder is private
    first. Raises FileNotFoundError or ConnectionRefusedError when no daemon listens."""
    folder = runtime_location()
    check_private_folder(folder)
    return connect_unix(os.path.join(folder, DEFAULT_SOCKET), timeout)


def quick_connect(timeout: float) -> Any:
    """A connection to the user's default daemon as a bare `_socket.socket` (connect, sendall,
    recv, close: what a one-shot client needs; socket.socket builds on it), checked as
    connect_default checks it, with `timeout` on every operation. Raises as connect_default."""
    folder = runtime_location()
    check_private_folder(folder)
    path = os.path.join(folder, DEFAULT_SOCKET)
    check_socket_owner(path)
    try:
        import _socket as module
    except ImportError:  # not CPython: the socket module has the same calls
        import socket as module  # type: ignore[no-redef]
    sock = module.socket(module.AF_UNIX, module.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    return sock


_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": -float("inf")}


class _Decoding:
    """What the C scanner under json.JSONDecoder reads from its decoder: json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def loads(text: str) -> Any:
    """json.loads(text) through the C scanner json itself uses (`_json.make_scanner`), without
    importing json and re; ValueError for text that is not one JSON value."""
    try:
        from _json import make_scanner
    except ImportError:  # not CPython: json has it all
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        scanner: Any = make_scanner
        value, end = scanner(_Decoding)(text, start)
    except (StopIteration, SystemError):
        # Text that is not JSON: the scanner's message needs json.decoder, which it looks up
        # in sys.modules without importing it (SystemError then); json says what is wrong.
        import json

        return json.loads(text)
    if text[end:].strip(" \t\n\r"):
        raise ValueError(f"extra data after the JSON value at {end}")
    return value


def frame(body: dict[str, Any]) -> bytes:
    """A JSON-RPC message with its LSP header."""
    import json

    return frame_bytes(json.dumps(body).encode())


def frame_bytes(data: bytes) -> bytes:
    """A JSON-RPC message already written as JSON, with its LSP header."""
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def frames(sock: Any) -> Any:
    """The bodies (bytes) of the LSP frames read from `sock` (recv), until it closes."""
    buffer = b""
    while True:
        head = buffer.find(b"\r\n\r\n")
        if head >= 0:
            length = -1
            for field in buffer[:head].split(b"\r\n"):
                name, _, value = field.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length < 0:
                raise ConnectionResetError(0, "a reply without Content-Length")
            end = head + 4 + length
            if len(buffer) >= end:
                yield buffer[head + 4 : end]
                buffer = buffer[end:]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            return
        buffer += chunk


def dumps(value: Any) -> str:
    """json.dumps(value) (its defaults: ASCII, `, ` and `: `) through the C encoder json itself
    uses (`_json.make_encoder`), without importing json; for JSON values (dict, list, str,
    int, float, bool, None)."""
    try:
        from _json import encode_basestring_ascii, make_encoder
    except ImportError:  # not CPython
        import json

        return json.dumps(value)

    def refuse(other: Any) -> Any:
        raise TypeError(f"Object of type {type(other).__name__} is not JSON serializable")

    encoder: Any = make_encoder
    chunks = encoder({}, refuse, encode_basestring_ascii, None, ": ", ", ", False, False, True)
    return "".join(chunks(value, 0))


def read_frame(stream: BinaryIO) -> dict[str, Any]:
    """The next message of `stream` (LSP framing). Raises FrameError when the peer closed or
    sent something else than a JSON object, TimeoutError/OSError as the socket does."""
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value)
            except ValueError:
                raise FrameError(f"bad Content-Length {value.strip()[:20]!r}") from None
    if not line:
        raise PeerClosed("the daemon closed the connection")
    import json

    try:
        body = json.loads(stream.read(length))
    except ValueError as exc:
        raise FrameError(f"unreadable reply from the daemon ({exc})") from None
    if not isinstance(body, dict):
        raise FrameError("unreadable reply from the daemon (not a JSON object)")
    return body
