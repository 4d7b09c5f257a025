"""Repeated warnings are rate-limited in the daemon's log, and never dropped silently."""

from __future__ import annotations

import logging

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient, frame
from tokend.daemon import paths
from tokend.daemon.log_limit import RepeatLimit


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(msg: str, level: int = logging.WARNING, *args: object) -> logging.LogRecord:
    return logging.LogRecord("tokend.x", level, __file__, 1, msg, args, None)


def test_a_burst_passes_then_the_rest_is_counted_and_reported_after_the_window() -> None:
    clock = _Clock()
    limit = RepeatLimit(burst=3, window_s=10, clock=clock)
    passed = [
        limit.filter(_record("connection %s: bad frame", logging.WARNING, i)) for i in range(50)
    ]
    assert passed == [True] * 3 + [False] * 47
    assert limit.filter(_record("another warning")) is True  # a different kind has its own burst
    assert (
        limit.filter(_record("connection %s: bad frame", logging.INFO, 1)) is True
    )  # below WARNING
    clock.now = 10.0
    after = _record("connection %s: bad frame", logging.WARNING, 51)
    assert limit.filter(after) is True
    assert "47 more like this were not logged" in after.getMessage()


def test_two_handlers_sharing_the_limit_decide_once_per_record() -> None:
    limit = RepeatLimit(burst=1, window_s=60, clock=_Clock())
    record = _record("same")
    assert limit.filter(record) is True and limit.filter(record) is True  # file, then stderr
    second = _record("same")
    assert limit.filter(second) is False and limit.filter(second) is False


def test_a_flood_of_malformed_frames_writes_a_few_lines_to_the_real_daemons_log(
    monkeypatch,
) -> None:
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        for _ in range(60):  # each connection's own log would let 3 malformed frames through
            client = LspClient.unix(paths.socket_path())
            assert "result" in client.initialize("flooder")
            client.send_raw(frame(b"{not json"))
            assert client.read_message(10)["method"] == "window/logMessage"  # it still hears
            client.close()
        good = LspClient.unix(paths.socket_path())
        assert "result" in good.initialize("after")
        assert "result" in good.request("daemon/status")
        lines = [line for line in daemons.log_text().splitlines() if "malformed message" in line]
        assert 1 <= len(lines) <= 6, len(lines)
        assert "counted, not logged" in lines[-1]
