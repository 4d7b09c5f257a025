"""The repo map ranks files, and says how: `repoMap/get` through `tokend lsp --standalone`'s
server in the test's process (tests/in_process.py) on a real folder, judged against a tree
built so the right answer is known (the file that shares the focus's rare names and folder;
the file a task's words describe)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import RpcError
from tokend.adapters.tokenizers import load_encoding

HUB_USERS = 12


def o200k(text: str) -> int:
    return len(load_encoding("o200k_base").encode_ordinary(text))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A hub every file leans on for common names (`get`, `log`, `dict`), and one pair of
    files that belong together: pricing (the focus) and the discounts it applies."""
    root = tmp_path / "ws"
    (root / "app" / "core").mkdir(parents=True)
    (root / "app" / "orders").mkdir()
    (root / "app" / "net").mkdir()
    (root / "app" / "core" / "utils.py").write_text(
        "def get(key):\n    return key\n\n\ndef log(msg):\n    print(msg)\n\n\n"
        "def dict(items):\n    return items\n"
    )
    (root / "app" / "orders" / "discounts.py").write_text(
        "def apply_discount(total, code):\n    return total\n\n\n"
        "def discount_for_code(code):\n    return 0\n"
    )
    calls = "".join(f"    log(get({i}))\n    dict([])\n" for i in range(6))
    (root / "app" / "orders" / "pricing.py").write_text(
        "from app.core.utils import get, log, dict\n"
        "from app.orders.discounts import apply_discount\n\n\n"
        f"def price_order(order):\n{calls}    return apply_discount(order, 'x')\n"
    )
    for i in range(HUB_USERS):
        (root / "app" / "core" / f"user_{i}.py").write_text(
            f"def task_{i}():\n    log(get({i}))\n    return dict([])\n"
        )
    (root / "app" / "net" / "retry.py").write_text(
        "def compute_backoff_delay(attempt):\n    return 2 ** attempt\n\n\n"
        "def should_retry(status):\n    return status >= 500\n"
    )
    (root / "app" / "net" / "client.py").write_text(
        "class HttpClient:\n    def send(self, request):\n        return request\n"
    )
    return root


@pytest.fixture
async def server(tmp_path: Path):
    db = tmp_path / "tokend.sqlite3"
    home = tmp_path / "home"
    home.mkdir()
    client = await InProcessClient.start(
        tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}", HOME=str(home))
    )
    await client.initialize()
    yield client
    assert await client.shutdown() == 0


def heads(text: str) -> list[str]:
    """The paths heading the map's blocks (the map's own format: `path:` then `│line`s)."""
    return [line[:-1] for line in text.splitlines() if line.endswith(":") and line[0] != "│"]


async def ask_map(server: InProcessClient, tree: Path, **focus: object) -> dict:
    """A 400-token map of the tree for `focus` (files, identifiers, text), on a new session;
    never over budget by o200k's count of the text it returns."""
    sid = (
        await server.request("session/create", {"model": "gpt-4o", "workspaceUri": tree.as_uri()})
    )["sessionId"]
    ask = {"sessionId": sid, "budgetTokens": 400,
           "focus": {"files": [], "identifiers": [], **focus}}  # fmt: skip
    got = await server.request("repoMap/get", ask)
    assert got["tokens"] == o200k(got["text"]) <= 400
    assert await server.request("repoMap/get", ask) == got  # the same answer again
    return got


async def test_files_come_in_rank_order_with_scores(server: InProcessClient, tree: Path):
    sid = (
        await server.request("session/create", {"model": "gpt-4o", "workspaceUri": tree.as_uri()})
    )["sessionId"]
    got = await server.request(
        "repoMap/get",
        {"sessionId": sid, "budgetTokens": 400,
         "focus": {"files": ["app/orders/pricing.py"], "identifiers": []}},
    )  # fmt: skip
    files = got["files"]
    assert files[0]["path"] == "app/orders/discounts.py"  # rare names, same folder: not the hub
    scores = [f["score"] for f in files]
    assert all(isinstance(s, float) and s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert sorted(f["path"] for f in files) == sorted(heads(got["text"]))
    assert "app/orders/pricing.py" not in heads(got["text"])  # the focus is not shown
    assert got["tokens"] == o200k(got["text"]) <= 400

    task = await server.request(
        "repoMap/get",
        {"sessionId": sid, "budgetTokens": 400,
         "focus": {"files": [], "identifiers": [],
                   "text": "The backoff delay grows too fast between retries"}},
    )  # fmt: skip
    assert task["files"][0]["path"] == "app/net/retry.py"
    assert task["tokens"] == o200k(task["text"]) <= 400
    again = await server.request(
        "repoMap/get",
        {"sessionId": sid, "budgetTokens": 400,
         "focus": {"files": [], "identifiers": [],
                   "text": "The backoff delay grows too fast between retries"}},
    )  # fmt: skip
    assert again == task
    with pytest.raises(RpcError) as refused:  # a focus text that is not a string
        await server.request(
            "repoMap/get", {"sessionId": sid, "focus": {"files": [], "identifiers": [], "text": 5}}
        )
    assert refused.value.code == -32602


async def test_a_task_text_reaches_what_files_use_and_lends_the_graph(
    server: InProcessClient, tree: Path
):
    """A task's words that a file has only in the names it calls (`recv_into_buffer`, an
    external library's) find that file; and the file it leans on (`decode_frame`'s definer,
    none of the task's words in it) comes next, through the graph the best hit personalizes,
    ahead of every file the task says nothing of."""
    (tree / "app" / "wire").mkdir()
    (tree / "app" / "wire" / "codec.py").write_text("def decode_frame(data):\n    return data\n")
    (tree / "app" / "net" / "sockets.py").write_text(
        "from netlib import recv_into_buffer, read_chunk_header\n"
        "from app.wire.codec import decode_frame\n\n\n"
        "def pump(sock):\n    read_chunk_header(sock)\n"
        "    return decode_frame(recv_into_buffer(sock))\n"
    )
    task = await ask_map(server, tree, text="Reading into the buffer drops the last chunk")
    paths = [f["path"] for f in task["files"]]
    assert paths[:2] == ["app/net/sockets.py", "app/wire/codec.py"]


async def test_a_task_text_reaches_what_a_file_says_in_its_comments(
    server: InProcessClient, tree: Path
):
    """A task's words that a file has only in its docstring and comments (no name, no path
    holds them) find that file first."""
    (tree / "app" / "net" / "pace.py").write_text(
        '"""Keeps uploads under the bandwidth ceiling the user configured."""\n\n\n'
        "def pace(sender):\n    # waits between packets\n    return sender\n"
    )
    task = await ask_map(server, tree, text="Uploads ignore the configured bandwidth ceiling")
    assert task["files"][0]["path"] == "app/net/pace.py"


async def test_a_file_focus_finds_the_file_that_says_what_it_says(
    server: InProcessClient, tree: Path
):
    """The focus file and the file that belongs with it share no name, no folder and no
    import, only what they say (docstrings, comments): that file comes first, ahead of the hub
    every other file leans on (the graph's best, which the focus does not use): the graph's
    rank no longer outweighs what files say."""
    (tree / "app" / "jobs").mkdir()
    (tree / "app" / "jobs" / "uploader.py").write_text(
        '"""Sends uploads in chunks, throttled under the bandwidth ceiling."""\n\n\n'
        "def send_chunks(job):\n    # the throttle waits once the ceiling is reached\n"
        "    return job\n"
    )
    (tree / "app" / "net" / "pace.py").write_text(
        '"""Keeps uploads under the bandwidth ceiling the user configured."""\n\n\n'
        "def pace(sender):\n    # throttle between packets\n    return sender\n"
    )
    got = await ask_map(server, tree, files=["app/jobs/uploader.py"])
    paths = [f["path"] for f in got["files"]]
    assert paths[0] == "app/net/pace.py"


async def test_a_file_focus_finds_the_file_that_calls_it(server: InProcessClient, tree: Path):
    """Twelve shapes in the focus's folder define `area` as it does; the one file that imports
    the focus and calls it (another folder, no word of it rare) comes first: the graph's edge
    into the focus is evidence the folder and the shared name are not."""
    (tree / "shapes").mkdir()
    (tree / "report").mkdir()
    (tree / "shapes" / "__init__.py").write_text("")
    (tree / "shapes" / "circle.py").write_text("def area(r):\n    return 3 * r * r\n")
    for i in range(12):
        (tree / "shapes" / f"shape_{i}.py").write_text(f"def area(x):\n    return x * {i}\n")
    (tree / "report" / "summary.py").write_text(
        "from shapes.circle import area\n\n\ndef total(r):\n    return area(r)\n"
    )
    got = await ask_map(server, tree, files=["shapes/circle.py"])
    assert got["files"][0]["path"] == "report/summary.py"


async def test_a_file_focus_ranks_shared_names_above_its_own_folder(
    server: InProcessClient, tree: Path
):
    """A report in another folder calls three of the focus's helpers, a sibling one of them;
    neither is linked to the focus. The report comes first of the two: the folder tree no
    longer weighs in a file focus's rank (bench.repomap_fit: on six tuning repositories its
    best weight was 0), where it pulled the sibling ahead before."""
    (tree / "lib").mkdir()
    (tree / "billing").mkdir()
    (tree / "reports").mkdir()
    (tree / "lib" / "money.py").write_text(
        "".join(f"def {n}(x):\n    return x\n\n\n" for n in
                ("tax_rate_for", "currency_round", "line_subtotal", "format_amount"))
    )  # fmt: skip
    (tree / "billing" / "invoice.py").write_text(
        "from lib.money import currency_round, format_amount, line_subtotal, tax_rate_for\n\n\n"
        "def render_invoice(lines):\n"
        "    total = currency_round(sum(line_subtotal(x) * tax_rate_for(x) for x in lines))\n"
        "    return format_amount(total)\n"
    )
    (tree / "reports" / "quarterly.py").write_text(
        "from lib.money import currency_round, line_subtotal, tax_rate_for\n\n\n"
        "def quarter_total(rows):\n"
        "    return currency_round(sum(line_subtotal(r) * tax_rate_for(r) for r in rows))\n"
    )
    (tree / "billing" / "reminder.py").write_text(
        "from lib.money import format_amount\n\n\ndef remind(due):\n    return format_amount(due)\n"
    )
    for i in range(8):
        (tree / "billing" / f"step_{i}.py").write_text(f"def step_{i}():\n    return {i}\n")
    got = await ask_map(server, tree, files=["billing/invoice.py"])
    paths = [f["path"] for f in got["files"]]
    assert paths[0] == "lib/money.py"  # what the focus imports and calls
    assert paths.index("reports/quarterly.py") < paths.index("billing/reminder.py")


async def test_fitting_a_map_writes_no_trial_to_the_count_cache(tmp_path: Path):
    """A map of 2,048 tokens is fitted by counting a dozen trial maps, each a text of kilobytes
    nobody counts again: none of them lands in the store's count cache (the SQLite file, read
    here), and the map is still within budget by o200k's count."""
    root = tmp_path / "big"
    for i in range(300):
        folder = root / f"pkg_{i % 12}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module_{i}.py").write_text(
            f"def compute_value_{i}(first_argument, second_argument):\n    return {i}\n\n\n"
            f"class Handler{i}:\n    def handle_request_{i}(self, request):\n"
            f"        return compute_value_{(i + 1) % 300}(request, {i})\n"
        )
    db = tmp_path / "tokend.sqlite3"
    home = tmp_path / "home"
    home.mkdir()
    env = tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}", HOME=str(home))
    client = await InProcessClient.start(tmp_path, env=env)
    await client.initialize()
    try:
        sid = (await client.request("session/create",
                                    {"model": "gpt-4o", "workspaceUri": root.as_uri()}))["sessionId"]  # fmt: skip
        before = _cached_counts(db)
        got = await client.request("repoMap/get", {
            "sessionId": sid, "budgetTokens": 2048,
            "focus": {"files": ["pkg_3/module_3.py"], "identifiers": []}})  # fmt: skip
        assert got["tokens"] == o200k(got["text"]) <= 2048
        assert len(got["text"]) > 4096  # long enough that a counted text would be kept
        assert _cached_counts(db) == before
    finally:
        assert await client.shutdown() == 0


def _cached_counts(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM token_cache").fetchone()[0])


def test_the_membership_sieve_agrees_with_numpy(monkeypatch: pytest.MonkeyPatch):
    """BM25's membership test (buckets of low bits, then a search), a block at a time, finds
    the positions np.isin flags: keys (uint64) and groups (int32, with -1 for no group)."""
    import numpy as np

    from tokend.core.repomap import sieve

    monkeypatch.setattr(sieve, "SIEVE_BLOCK", 1000)  # many blocks, cut anywhere
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**63, 10_007, dtype=np.uint64)
    query = np.unique(np.concatenate([keys[::97], rng.integers(0, 2**63, 50, dtype=np.uint64)]))
    groups = rng.integers(-1, 5000, 10_007).astype(np.int32)
    wanted = np.unique(groups[:40])
    member = sieve.member
    assert np.array_equal(member(keys, query), np.flatnonzero(np.isin(keys, query)))
    assert np.array_equal(member(groups, wanted), np.flatnonzero(np.isin(groups, wanted)))
    assert not len(member(keys, query[:0]))


def test_fitting_a_map_reads_about_the_files_it_shows():
    """4,000 candidates, one definition per file (the kernel's case): fitting 1,024 tokens
    reads the lines of about twice the files the map shows (plus the few tried after), not
    half the candidates as a plain bisection did."""
    from tokend.core.repomap.render import EXTRA_CANDIDATES, RankedDefinition, fit_map

    ranked = [RankedDefinition(f"drivers/part_{i:04d}.c", 0) for i in range(4000)]
    read: set[str] = set()

    def text_of(path: str, line: int) -> str:
        read.add(path)
        return f"int probe_{path[-7:-2]}(struct device *dev);"

    fitted = fit_map(ranked, 1024, o200k, text_of)
    assert 0 < fitted.tokens == o200k(fitted.text) <= 1024
    shown = len(fitted.files)
    assert shown > 20
    assert len(read) <= 2 * shown + EXTRA_CANDIDATES + 1


async def test_a_file_focus_finds_the_file_that_names_its_rare_compound(
    server: InProcessClient, tree: Path
):
    """The focus and the file that belongs with it name one setting in their docstrings only
    (`staging_bucket_prefix`: no code refers to it); six other files say its words apart, twice
    each, in their comments. What a file says keeps each compound identifier whole, and a
    file focus reads its rarest shared words: the one file that names the setting comes first
    (where its words alone, said more often elsewhere, put it behind the six)."""
    (tree / "app" / "jobs").mkdir()
    (tree / "app" / "jobs" / "export.py").write_text(
        '"""Writes each export under staging_bucket_prefix, then renames it."""\n\n\n'
        "def export_rows(rows):\n    return rows\n"
    )
    (tree / "app" / "net" / "storage.py").write_text(
        '"""Lists the objects below staging_bucket_prefix."""\n\n\n'
        "def list_objects(client):\n    return client\n"
    )
    for i in range(6):
        said = "    # a staging bucket keeps one prefix\n" * 2
        (tree / "app" / "core" / f"area_{i}.py").write_text(
            f"def area_{i}(x):\n{said}    return x\n"
        )
    got = await ask_map(server, tree, files=["app/jobs/export.py"])
    assert got["files"][0]["path"] == "app/net/storage.py"


def _filler_words(count: int) -> list[str]:
    """`count` distinct lowercase words of 4 letters (no digits: each is one word of its own)."""
    letters = "bcdfghjkmnpqrstvwxz"
    return [
        "q" + letters[i // 361 % 19] + letters[i // 19 % 19] + letters[i % 19] for i in range(count)
    ]


async def test_a_task_text_reaches_a_word_a_long_file_says_once(
    server: InProcessClient, tree: Path
):
    """A long file's docstring says 300 other words twice each, and in one comment the word a
    task asks about (`zephyrine`) once: what a file says keeps its 384 most frequent words, so
    the word is kept and the task finds the file first (with 256 a file, the word fell below
    the cut and no signal had evidence for the file: the graph's hub came first)."""
    doc = " ".join(w for w in _filler_words(300) for _ in range(2))
    (tree / "app" / "net" / "glossary.py").write_text(
        f'"""{doc}"""\n\n\n'
        "def lookup(term):\n    # the zephyrine cipher is looked up here too\n    return term\n"
    )
    task = await ask_map(server, tree, text="Decoding a zephyrine message fails")
    assert task["files"][0]["path"] == "app/net/glossary.py"
    assert task["files"][0]["score"] > 0
