// Finding the tokend executable: the configured path, else the workspace's .venv, else PATH.
// No `vscode` import.
import * as fs from "fs";
import * as path from "path";

export const INSTALL_HINT =
  "tokend was not found. Install it with `pipx install tokend` (or `pip install tokend` in this " +
  "workspace's .venv), or set `tokend.path` to the executable.";

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function findTokend(configured: string, workspaceFolders: string[], pathEnv: string): string | undefined {
  const windows = process.platform === "win32";
  const names = windows ? ["tokend.exe", "tokend.cmd"] : ["tokend"];
  if (configured) {
    return executable(configured) ? configured : undefined;
  }
  for (const folder of workspaceFolders) {
    for (const name of names) {
      const candidate = path.join(folder, ".venv", windows ? "Scripts" : "bin", name);
      if (executable(candidate)) {
        return candidate;
      }
    }
  }
  for (const dir of pathEnv.split(path.delimiter).filter(Boolean)) {
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (executable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}
