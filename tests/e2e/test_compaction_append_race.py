"""1,000 appends from two clients racing an automatic compaction on a real `tokend serve`
(bench/append_race.py, the benchmark's run, judged without timing). The summary is written by
a model behind a local OpenAI-shaped server that answers after a second, so the compaction
stays open while both clients keep appending. Oracles: the message ids each client was
answered and the text each wrote, against every message the daemon lists afterwards; the
narrative the model server answered."""

from __future__ import annotations

from bench.append_race import race

from tests.model_servers import ModelServer


def test_appends_racing_an_automatic_compaction_are_all_kept_once_in_order():
    server = ModelServer("openai", slow_seconds=1.0).start()
    try:
        config = (
            '[summarizer]\nchain = ["openai", "extractive"]\n'
            f'openai_base_url = "{server.base_url}"\nopenai_model = "slow"\ntimeout_s = 60\n'
        )
        result = race(1_000, config)
    finally:
        server.stop()
    assert result.appends == 1_000
    assert result.compactions, "the appends never crossed the threshold: no race happened"
    assert server.requests, "the compaction never asked the model"
    assert result.overlapped > 0, "no append was answered while a compaction ran"
    assert (result.lost, result.duplicated, result.out_of_order) == (0, 0, 0)
    assert result.live_problems == []
    assert result.summarized > 0  # the compaction took race messages out, marked, not lost
    details = [a["detail"] for c in result.compactions for a in c["actions"]]
    assert any("openai:slow: used" in d for d in details)
