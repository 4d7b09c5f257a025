// make test-editors: the packaged .vsix in real VS Code (code-server), driven by Debian's chromium
// through playwright-core, against a real tokend daemon. Everything lives in one temporary folder
// (XDG dirs, the daemon's socket and store, code-server's user data and extensions, chromium's
// profile), so the user's own VS Code and tokend data are never touched.
//
// An agent (a second client: `tokend lsp` over vscode-jsonrpc) creates the workspace's session and
// appends to it; the status-bar item must show the gauge of the agent's own `budget/snapshot`
// (formatted here, not by the extension's gauge.ts), follow it as it grows, and after a click on
// the item and "Compact now" in the quick pick, show the compacted session.
//
// Run by scripts/test-editors, which installs what this needs and passes it in the environment:
//   TOKEND_E2E_NODE_MODULES  node_modules holding code-server and playwright-core
//   TOKEND_E2E_VSIX          the packaged extension
//   TOKEND_E2E_TOKEND        the tokend executable (the repository's venv)
//   TOKEND_E2E_SCREENSHOTS   where the screenshots go
//   TOKEND_E2E_CHROMIUM      chromium (default /usr/bin/chromium)
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const WAIT_MS = 90_000;
const here = path.dirname(fileURLToPath(import.meta.url));
const need = (name) => {
  const value = process.env[name];
  assert.ok(value, `${name} is not set: run this through scripts/test-editors`);
  return value;
};
const modules = need("TOKEND_E2E_NODE_MODULES");
const vsix = need("TOKEND_E2E_VSIX");
const tokend = need("TOKEND_E2E_TOKEND");
const screenshots = need("TOKEND_E2E_SCREENSHOTS");
const chromiumPath = process.env.TOKEND_E2E_CHROMIUM || "/usr/bin/chromium";
const { chromium } = createRequire(path.join(modules, "x.js"))("playwright-core");
const rpc = createRequire(path.join(here, "..", "node_modules", "x.js"))("vscode-jsonrpc/node");
const codeServer = path.join(modules, "code-server", "out", "node", "entry.js");
// src/test/tooltip.ts, compiled by `npm run package`
const { tooltipProblems } = createRequire(import.meta.url)("../out/test/tooltip.js");

const started = []; // every process this driver started, killed (by process group) at the end
const step = (what) => console.log(`test-editors: ${what}`);

// One private folder for everything; short, since unix socket paths are ~104 bytes at most.
const base = fs.mkdtempSync(path.join(os.tmpdir(), "tke-"));
const dirs = Object.fromEntries(
  ["run", "state", "data", "config", "cache", "home", "ws", "user-data", "extensions", "chromium"].map((d) => [
    d,
    path.join(base, d),
  ]),
);
for (const d of Object.values(dirs)) {
  fs.mkdirSync(d, { mode: 0o700 });
}
const env = {
  ...process.env,
  HOME: dirs.home,
  XDG_RUNTIME_DIR: dirs.run,
  XDG_STATE_HOME: dirs.state,
  XDG_DATA_HOME: dirs.data,
  XDG_CONFIG_HOME: dirs.config,
  XDG_CACHE_HOME: dirs.cache,
  TOKEND_DATABASE_URL: `sqlite:///${path.join(base, "tokend.sqlite3")}`,
};
delete env.TOKEND_DAEMON_CMD;

function launch(command, args, name) {
  const log = fs.openSync(path.join(base, `${name}.log`), "a");
  const child = spawn(command, args, { env, stdio: ["ignore", log, log], detached: true });
  started.push(child);
  return child;
}

const logOf = (name) => fs.readFileSync(path.join(base, `${name}.log`), "utf8");

async function until(what, probe, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The gauge as the status bar must show it, from the agent's own snapshot (codicon aside). */
function expectedGauge(s) {
  const k = (n) => (n >= 1_000_000 ? `${+(n / 1e6).toFixed(1)}M` : n >= 1000 ? `${Math.round(n / 1000)}k` : `${n}`);
  return `${s.estimated ? "~" : ""}${k(s.usedTokens)}/${k(s.contextWindow)} · ${Math.round(s.usedPercentage)}%`;
}

/** The agent: a second client of the same daemon, through `tokend lsp` as any editor runs it. */
async function agentConnection(workspaceUri) {
  const child = spawn(tokend, ["lsp"], { env, stdio: ["pipe", "pipe", "inherit"], detached: true });
  started.push(child);
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout),
    new rpc.StreamMessageWriter(child.stdin),
  );
  connection.listen();
  await connection.sendRequest("initialize", {
    processId: process.pid,
    capabilities: {},
    clientInfo: { name: "test-editors agent" },
    workspaceFolders: [{ uri: workspaceUri, name: "ws" }],
    initializationOptions: { session: "" },
  });
  await connection.sendNotification("initialized", {});
  return connection;
}

async function main() {
  const t0 = Date.now();
  step(`working in ${base}`);

  // the daemon every client shares (the extension's `tokend lsp` finds it by XDG_RUNTIME_DIR)
  launch(tokend, ["serve", "--idle-timeout", "0"], "daemon");
  await until("tokend serve to be ready", () => logOf("daemon").includes("tokend: ready"));

  // the workspace: the extension finds tokend in its .venv, as in a project that installed it
  fs.mkdirSync(path.join(dirs.ws, ".venv", "bin"), { recursive: true });
  fs.symlinkSync(tokend, path.join(dirs.ws, ".venv", "bin", "tokend"));
  fs.writeFileSync(path.join(dirs.ws, "README.md"), "# app\n\nA workspace for tokend's editor test.\n");
  const workspaceUri = pathToFileURL(dirs.ws).href;

  const agent = await agentConnection(workspaceUri);
  const { sessionId } = await agent.sendRequest("session/create", {
    model: "gpt-4o",
    workspaceUri,
    contextWindow: 200_000,
    title: "make the build pass",
  });
  const append = (role, part, usage) =>
    agent.sendRequest("session/append", { sessionId, message: { role, parts: [part], ...(usage ? { usage } : {}) } });
  const snapshot = () => agent.sendRequest("budget/snapshot", { sessionId });
  await append("user", { type: "text", text: "make the build pass" });
  const first = await snapshot();

  // code-server: real VS Code, with its own user data and extensions, on 127.0.0.1
  const node = process.execPath;
  const userSettings = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "security.workspace.trust.enabled": false,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "update.mode": "none",
    "window.zoomLevel": 1,
    "chat.disableAIFeatures": true,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
  };
  fs.mkdirSync(path.join(dirs["user-data"], "User"), { recursive: true });
  fs.writeFileSync(path.join(dirs["user-data"], "User", "settings.json"), JSON.stringify(userSettings, null, 2));
  const common = [
    ...["--config", path.join(base, "code-server.yaml")],
    ...["--user-data-dir", dirs["user-data"], "--extensions-dir", dirs.extensions],
  ];
  const installed = spawnSync(node, [codeServer, ...common, "--install-extension", vsix], { env, encoding: "utf8" });
  assert.equal(installed.status, 0, `code-server --install-extension failed:\n${installed.stdout}${installed.stderr}`);
  assert.ok(
    fs.readdirSync(dirs.extensions).some((d) => d.startsWith("tokend.tokend-")),
    `the extension is not in code-server's extensions dir:\n${installed.stdout}`,
  );
  step("the .vsix installed into code-server");

  const port = await freePort();
  launch(
    node,
    [
      codeServer,
      ...common,
      "--bind-addr",
      `127.0.0.1:${port}`,
      "--auth",
      "none",
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--disable-getting-started-override",
      dirs.ws,
    ],
    "code-server",
  );
  await until("code-server to listen", () => /HTTP server listening on/.test(logOf("code-server")));
  step(`code-server on 127.0.0.1:${port} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);

  const context = await chromium.launchPersistentContext(dirs.chromium, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1280, height: 720 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.ws)}`);
    const item = page.locator('#workbench\\.parts\\.statusbar [id^="tokend.tokend"]').first();
    const shown = async () => ((await item.count()) ? (await item.innerText()).trim() : undefined);
    // VS Code marks an item with the warning or error background by a class: warning-kind, error-kind
    const kind = async () => /\b(warning|error)-kind\b/.exec((await item.getAttribute("class")) ?? "")?.[1] ?? "";
    const showsGauge = async (s) => {
      const want = expectedGauge(s);
      await until(`the status bar to show ${want}`, async () => (await shown()) === want).catch(async (e) => {
        await page.screenshot({ path: path.join(base, "failure.png") });
        throw new Error(`${e.message}; it shows ${JSON.stringify(await shown())} (failure.png in the kept folder)`);
      });
      return want;
    };

    step(`the gauge of the new session: ${await showsGauge(first)} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);

    // the agent works on: tool output piles up, and the editor's gauge follows it
    for (let i = 0; i < 8; i++) {
      await append("user", { type: "text", text: `step ${i}` });
      await append("assistant", { type: "toolCall", callId: `c${i}`, name: "bash", input: { cmd: "make" } });
      const output = `compiling unit ${i}: warning: deprecated flag in module ${i}\n`.repeat(800);
      await append("tool", { type: "toolResult", callId: `c${i}`, name: "bash", output });
    }
    // the provider's reply reports what the request used: the gauge is no longer an estimate
    const asked = await snapshot();
    const usage = { inputTokens: asked.usedTokens, outputTokens: 40 };
    await append("assistant", { type: "text", text: "The build passes now." }, usage);
    const grown = await snapshot();
    assert.equal(grown.estimated, false, "the provider's usage did not make the figure exact");
    assert.ok(grown.usedTokens > 60_000, `the session grew to ${grown.usedTokens} tokens only`);
    step(`after the agent's work: ${await showsGauge(grown)}`);

    // the tooltip: the breakdown
    await item.hover();
    const hover = page.locator(".monaco-hover, .workbench-hover").filter({ hasText: "Compacts at" }).first();
    await hover.waitFor({ state: "visible", timeout: WAIT_MS });
    const tooltip = await hover.innerText();
    assert.deepEqual(tooltipProblems(tooltip, grown), []); // the check `make test` runs on gauge.ts too
    await page.screenshot({ path: path.join(screenshots, "vscode-gauge.png") });
    step("the tooltip shows the breakdown (screenshot vscode-gauge.png)");
    await page.mouse.move(640, 300);
    assert.equal(await kind(), "", "a background below the warning stage");

    // past 70%: the warning background
    for (let i = 8; i < 12; i++) {
      await append("user", { type: "text", text: `step ${i}` });
      await append("assistant", { type: "toolCall", callId: `c${i}`, name: "bash", input: { cmd: "make test" } });
      const output = `test ${i}: FAILED expected 200, got 500 in handler ${i}\n`.repeat(900);
      await append("tool", { type: "toolResult", callId: `c${i}`, name: "bash", output });
    }
    const full = await snapshot();
    assert.ok(full.usedPercentage >= 70 && full.usedPercentage < 90, `${full.usedPercentage}%: not in the warning stage`);
    step(`past the warning stage: ${await showsGauge(full)}`);
    await until("the warning background", async () => (await kind()) === "warning").catch(async (e) => {
      throw new Error(`${e.message}; the item's classes: ${await item.getAttribute("class")}`);
    });
    await page.screenshot({ path: path.join(screenshots, "vscode-warning.png") });

    // click the item, pick Compact now
    await item.click();
    const quickPick = page.locator(".quick-input-widget");
    await quickPick.waitFor({ state: "visible", timeout: WAIT_MS });
    const compactRow = quickPick.locator(".monaco-list-row", { hasText: "Compact now" }).first();
    await compactRow.waitFor({ state: "visible", timeout: WAIT_MS });
    await page.waitForTimeout(500); // the quick pick's opening animation
    await page.screenshot({ path: path.join(screenshots, "vscode-menu.png") });
    await compactRow.click();
    const after = await until("the compaction", async () => {
      const s = await snapshot();
      return s.compactions >= 1 ? s : undefined;
    });
    assert.ok(after.usedTokens < full.usedTokens, `compaction left ${after.usedTokens} of ${full.usedTokens} tokens`);
    step(`after Compact now: ${await showsGauge(after)} (compactions: ${after.compactions})`);
    if (after.usedPercentage < 70) {
      await until("the warning background to go", async () => (await kind()) === "");
    }
    const toast = page.locator(".notifications-toasts").filter({ hasText: "tokend:" }).first();
    await toast.waitFor({ state: "visible", timeout: WAIT_MS });
    const reported = `${full.usedTokens.toLocaleString("en-US")} → ${after.usedTokens.toLocaleString("en-US")} tokens`;
    assert.ok((await toast.innerText()).includes(reported), `the notification does not say ${reported}`);
    const progress = page.locator(".notifications-toasts").filter({ hasText: "compacting the session" });
    await until("the progress notification to close", async () => (await progress.count()) === 0);
    await page.mouse.click(800, 200); // the editor area: the status-bar item's hover closes
    await until("the hover to close", async () => (await hover.count()) === 0 || !(await hover.isVisible()));
    await page.screenshot({ path: path.join(screenshots, "vscode-compacted.png") });
    step(`the editor reports the compaction (screenshot vscode-compacted.png); ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    await context.close();
    agent.dispose();
  }
}

function stopAll() {
  for (const child of started) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

let failed = false;
try {
  await main();
} catch (error) {
  failed = true;
  console.error(`test-editors: FAILED: ${error instanceof Error ? error.stack : error}`);
  for (const name of ["code-server", "daemon"]) {
    try {
      console.error(`--- ${name}.log (tail)\n${logOf(name).split("\n").slice(-30).join("\n")}`);
    } catch {
      // no log
    }
  }
} finally {
  stopAll();
  if (failed) {
    console.error(`test-editors: logs and screenshots kept in ${base}`);
  } else {
    fs.rmSync(base, { recursive: true, force: true });
  }
}
console.log(failed ? "0 passed, 1 failed" : "1 passed, 0 failed");
process.exit(failed ? 1 : 0);
