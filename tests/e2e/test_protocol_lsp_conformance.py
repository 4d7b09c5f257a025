"""LSP conformance, as clients tokend did not write see it: pytest-lsp's client with its VS Code
and Neovim capability presets, over `tokend lsp --standalone` and over the forwarder `tokend lsp`
(which starts a daemon), as real processes over real pipes.

Oracles are what the client received (replies, $/progress, window/logMessage), what the server
wrote on stderr (an editor's error log) and the daemon's log file, never tokend's own code.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES

from tests.conftest import tokend_env
from tests.daemon.abuse import live_pids

# A short base: the forwarder's daemon puts its unix socket under XDG_RUNTIME_DIR.
_HOME = Path(tempfile.mkdtemp(prefix="tkc-"))
(_HOME / "run").mkdir(mode=0o700)
_ENV = tokend_env(
    TOKEND_DATABASE_URL=f"sqlite:///{_HOME}/tokend.sqlite3",
    XDG_RUNTIME_DIR=str(_HOME / "run"),
    XDG_DATA_HOME=str(_HOME / "data"),
    XDG_CONFIG_HOME=str(_HOME / "config"),
    XDG_STATE_HOME=str(_HOME / "state"),
    XDG_CACHE_HOME=str(_HOME / "cache"),
)
_ENV.pop("TOKEND_DAEMON_CMD", None)
SERVERS = {"standalone": ["lsp", "--standalone"], "forwarder": ["lsp"]}
PRESETS = {"vscode": "visual-studio-code", "neovim": "neovim"}
SERVER_NOT_INITIALIZED, INVALID_REQUEST = -32002, -32600


@pytest.fixture(scope="module", autouse=True)
def _home():
    yield
    for pid in live_pids("tokend", str(_HOME)):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(_HOME, ignore_errors=True)


@dataclass
class Editor:
    """One pytest-lsp client on one server process, with what it saw."""

    client: LanguageClient
    server: str
    preset: str
    stderr: Path
    events: list[tuple[str, Any]] = field(default_factory=list)
    refuse_progress: bool = False
    initialized: bool = False
    log_start: dict[Path, int] = field(default_factory=lambda: _log_sizes())

    @property
    def capabilities(self) -> types.ClientCapabilities:
        return client_capabilities(PRESETS[self.preset])

    async def initialize(self, folders: list[Path] | None = None) -> types.InitializeResult:
        params = types.InitializeParams(
            capabilities=self.capabilities,
            client_info=types.ClientInfo(name=f"pytest-lsp {self.preset}"),
            workspace_folders=[
                types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders or []
            ]
            or None,
            root_uri=folders[0].as_uri() if folders else None,
        )
        result = await self.client.initialize_session(params)
        self.initialized = True
        return result

    async def request(self, method: str, params: Any = None, timeout: float = 60) -> Any:
        sent = self.client.protocol.send_request_async(method, params)
        return await asyncio.wait_for(sent, timeout)

    def error_output(self) -> str:
        """What an editor shows as the server's errors: its stderr, and (forwarder) the
        daemon's log lines at WARNING or above."""
        text = self.stderr.read_text(errors="replace")
        if self.server == "forwarder":  # the daemon serves the whole module: this test's part
            for log in sorted(_log_sizes()):
                with open(log, "rb") as file:
                    file.seek(self.log_start.get(log, 0))
                    lines = file.read().decode(errors="replace").splitlines(keepends=True)
                text += "".join(
                    line
                    for line in lines
                    if " WARNING " in line or " ERROR " in line or "Traceback" in line
                )
        return text


def _log_sizes() -> dict[Path, int]:
    """The daemon's log files and their sizes now."""
    return {log: log.stat().st_size for log in (_HOME / "state" / "tokend").glob("*.log*")}


def _factory(editor_box: list[Editor]) -> Any:
    """A pytest-lsp client whose window/workDoneProgress/create and $/progress handlers record
    what arrives, in order (and refuse the token when the test asks)."""

    async def create(client: LanguageClient, params: types.WorkDoneProgressCreateParams) -> None:
        editor = editor_box[0]
        editor.events.append(("create", params.token))
        await asyncio.sleep(0.3)  # a client that takes its time to answer
        editor.events.append(("created", params.token))
        if editor.refuse_progress:
            raise JsonRpcInternalError("this client does not show progress")

    def progress(client: LanguageClient, params: types.ProgressParams) -> None:
        value = params.value if isinstance(params.value, dict) else {}
        editor_box[0].events.append((value.get("kind", "?"), params.token))

    def build() -> LanguageClient:
        client = LanguageClient(converter_factory=default_converter)
        features = dict(DEFAULT_CLIENT_FEATURES)
        features[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = create
        features[types.PROGRESS] = progress
        for method, handler in features.items():
            client.feature(method)(handler)
        return client

    return build


@pytest_asyncio.fixture(params=[(s, p) for s in SERVERS for p in PRESETS], ids="-".join)
async def editor(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Editor]:
    server, preset = request.param
    stderr = tmp_path / "server.stderr"
    box: list[Editor] = []
    # The server's stderr goes to a file: what an editor would log as the server's errors.
    command = ["sh", "-c", 'exec "$0" -m tokend "$@" 2>>"$STDERR_FILE"', sys.executable]
    config = ClientServerConfig(
        server_command=[*command, *SERVERS[server]],
        server_env={**_ENV, "STDERR_FILE": str(stderr)},
        client_factory=_factory(box),
    )
    client = await config.start()
    box.append(Editor(client, server, preset, stderr))
    yield box[0]
    try:
        if box[0].initialized:
            await asyncio.wait_for(client.shutdown_session(), 30)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()  # never initialized (or stuck): nothing would end it
        await asyncio.wait_for(client.stop(), 30)


def _folder(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for rel, text in files.items():
        (folder / rel).write_text(text)
    return folder


async def test_before_initialize_requests_get_server_not_initialized(editor: Editor, tmp_path):
    folder = _folder(tmp_path, "early", {"a.py": "x = 1\n"})
    message = {"role": "user", "parts": [{"type": "text", "text": "hi"}]}
    early = [
        ("session/list", {}),
        ("budget/snapshot", {"sessionId": "01JD3M6Q1V8T9W2X4Y5Z6A7B8C"}),
        ("session/append", {"sessionId": "01JD3M6Q1V8T9W2X4Y5Z6A7B8C", "message": message}),
        ("context/assemble", {"sessionId": "01JD3M6Q1V8T9W2X4Y5Z6A7B8C"}),
        ("shutdown", None),
    ]
    editor.client.capabilities = editor.capabilities  # pytest-lsp checks replies against them
    for method, params in early:
        with pytest.raises(JsonRpcException) as refused:
            await editor.request(method, params)
        assert refused.value.code == SERVER_NOT_INITIALIZED, (method, refused.value)
    document = types.TextDocumentItem((folder / "a.py").as_uri(), "python", 1, "x = 2\n")
    editor.client.text_document_did_open(types.DidOpenTextDocumentParams(document))

    result = await editor.initialize([folder])  # the early shutdown did not end the connection
    assert result.capabilities.position_encoding in ("utf-16", "utf-8", "utf-32")
    again = types.InitializeParams(capabilities=editor.capabilities, process_id=os.getpid())
    with pytest.raises(JsonRpcException) as second:
        await editor.request("initialize", again)
    assert second.value.code == INVALID_REQUEST
    listed = await editor.request("session/list", {})
    assert listed.sessions == []
    assert "Traceback" not in editor.error_output() and "Error" not in editor.error_output()


async def test_capabilities_advertise_only_what_is_served(editor: Editor, tmp_path):
    result = await editor.initialize([_folder(tmp_path, "caps", {})])
    capabilities = result.capabilities
    assert capabilities.execute_command_provider is None
    assert capabilities.workspace is not None
    assert capabilities.workspace.file_operations is None
    folders = capabilities.workspace.workspace_folders
    assert folders is not None and folders.supported and folders.change_notifications


async def _dirty_figure(editor: Editor, folder: Path, rel: str) -> dict[str, Any]:
    figures = await editor.request(
        "workspace/fileTokens", {"workspaceUri": folder.as_uri(), "paths": [rel]}
    )
    [figure] = figures
    return {"dirty": figure["dirty"], "bytes": figure["bytes"]}


async def test_every_workspace_folder_is_served(editor: Editor, tmp_path):
    disk = "x = 1\n"
    a = _folder(tmp_path, "a", {"main.py": disk})
    b = _folder(tmp_path, "b", {"lib.py": disk})
    c = _folder(tmp_path, "c", {"extra.py": disk})
    await editor.initialize([a, b])
    buffer = "value = 'unsaved' * 40\n" * 20
    for folder, rel in ((b, "lib.py"), (a, "main.py")):
        item = types.TextDocumentItem((folder / rel).as_uri(), "python", 1, buffer)
        editor.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    assert await _dirty_figure(editor, b, "lib.py") == {"dirty": True, "bytes": len(buffer)}
    assert await _dirty_figure(editor, a, "main.py") == {"dirty": True, "bytes": len(buffer)}

    added = types.WorkspaceFoldersChangeEvent(
        added=[types.WorkspaceFolder(c.as_uri(), "c")], removed=[]
    )
    editor.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(added)
    )
    item = types.TextDocumentItem((c / "extra.py").as_uri(), "python", 1, buffer)
    editor.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    assert await _dirty_figure(editor, c, "extra.py") == {"dirty": True, "bytes": len(buffer)}


async def _until_kind(editor: Editor, kind: str, limit: float) -> None:
    """Waits until a progress event of `kind` has arrived (a condition, not a fixed sleep: a
    loaded machine sent the build's `end` more than half a second after the reply)."""
    deadline = asyncio.get_running_loop().time() + limit
    while not any(k == kind for k, _ in editor.events):
        assert asyncio.get_running_loop().time() < deadline, editor.events
        await asyncio.sleep(0.02)


async def test_index_progress_waits_for_the_token_and_one_token_per_build(editor, tmp_path):
    folder = _folder(tmp_path, "progress", {f"m{i}.py": f"x = {i}\n" for i in range(50)})
    await editor.initialize()  # no folder: the first fileTokens starts the build
    uri = folder.as_uri()
    await editor.request("workspace/fileTokens", {"workspaceUri": uri})
    await editor.request("workspace/fileTokens", {"workspaceUri": uri})
    await _until_kind(editor, "end", 30.0)  # the build's end may follow its reply under load
    await asyncio.sleep(0.5)  # a second token, were one made, would arrive by now
    creates = [token for kind, token in editor.events if kind == "create"]
    assert len(creates) == 1, editor.events
    [token] = creates
    on_token = [kind for kind, t in editor.events if t == token]
    assert on_token[:3] == ["create", "created", "begin"], on_token
    assert on_token[-1] == "end" and on_token.count("begin") == 1


async def test_a_refused_progress_token_is_never_used(editor: Editor, tmp_path):
    folder = _folder(tmp_path, "refused", {f"m{i}.py": f"x = {i}\n" for i in range(50)})
    editor.refuse_progress = True
    await editor.initialize()
    figures = await editor.request("workspace/fileTokens", {"workspaceUri": folder.as_uri()})
    assert len(figures) == 50
    await asyncio.sleep(0.5)
    kinds = [kind for kind, _ in editor.events]
    assert kinds == ["create", "created"], editor.events


async def test_did_change_configuration_rereads_settings_and_keeps_stderr_quiet(editor, tmp_path):
    folder = _folder(tmp_path, "settings", {})
    await editor.initialize([folder])
    params = {"model": "acme-local-7b", "workspaceUri": folder.as_uri()}
    with pytest.raises(JsonRpcException):
        await editor.request("session/create", params)  # not declared yet
    (folder / ".tokend.toml").write_text(
        '[models."acme-local-7b"]\ncontext_window = 32000\nmax_output_tokens = 4000\n'
    )
    settings = types.DidChangeConfigurationParams(settings={"tokend": {"verbose": True}})
    editor.client.workspace_did_change_configuration(settings)
    created = await editor.request("session/create", params)  # at once, not a second later
    assert created.version == 0
    logged = [m.message for m in editor.client.log_messages if m.type <= types.MessageType.Warning]
    assert logged == []
    assert editor.error_output() == ""
