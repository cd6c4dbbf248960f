// Pure logic of the extension: settings -> how the server is started and what it is told.
// Nothing here imports `vscode`, so it runs under `node --test` without an editor.

import * as os from "os";
import * as path from "path";

export type RunMode = "onType" | "onSave";

export interface Settings {
  enable: boolean;
  path: string[];
  interpreter: string[];
  args: string[];
  select: string[];
  ignore: string[];
  run: RunMode;
  fixOnSave: boolean;
  unsafeFixes: boolean;
  verify: boolean;
}

export const DEFAULTS: Settings = {
  enable: true,
  path: [],
  interpreter: [],
  args: [],
  select: [],
  ignore: [],
  run: "onType",
  fixOnSave: false,
  unsafeFixes: false,
  verify: false,
};

/** Reads one setting; `undefined` when it is not set. (vscode's WorkspaceConfiguration.get fits.) */
export type Getter = (key: string) => unknown;

function stringList(value: unknown, fallback: string[]): string[] {
  if (typeof value === "string") {
    return value.trim() ? [value] : fallback; // a lone string where a list is expected
  }
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) {
    return value.filter((v) => v.trim() !== "");
  }
  return fallback;
}

/** Settings with wrong types fall back to the defaults instead of starting a broken server. */
export function readSettings(get: Getter): Settings {
  const bool = (key: keyof Settings): boolean => {
    const value = get(key);
    return typeof value === "boolean" ? value : (DEFAULTS[key] as boolean);
  };
  const run = get("run");
  return {
    enable: bool("enable"),
    path: stringList(get("path"), DEFAULTS.path),
    interpreter: stringList(get("interpreter"), DEFAULTS.interpreter),
    args: stringList(get("args"), DEFAULTS.args),
    select: stringList(get("select"), DEFAULTS.select),
    ignore: stringList(get("ignore"), DEFAULTS.ignore),
    run: run === "onSave" || run === "onType" ? run : DEFAULTS.run,
    fixOnSave: bool("fixOnSave"),
    unsafeFixes: bool("unsafeFixes"),
    verify: bool("verify"),
  };
}

/** `~` and `${workspaceFolder}`/`${userHome}` in a configured path, as VS Code users write them. */
export function expandPath(value: string, workspaceFolder: string | undefined, home: string = os.homedir()): string {
  let out = value.replace(/\$\{userHome\}/g, home);
  if (workspaceFolder !== undefined) {
    out = out.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  }
  if (out === "~" || out.startsWith("~/") || out.startsWith("~\\")) {
    out = path.join(home, out.slice(1));
  }
  return out;
}

export interface Launch {
  command: string;
  args: string[];
  /** Where the command came from, for the output channel. */
  source: "path" | "interpreter" | "python-extension" | "PATH";
}

export interface Environment {
  workspaceFolder?: string;
  /** The interpreter selected in the Python extension, when it is installed. */
  selectedInterpreter?: string;
  exists: (file: string) => boolean;
  home?: string;
}

/**
 * How to start the server, first match wins (as ruff-vscode does):
 * 1. the first `torchlint.path` entry that exists: `<path> server ARGS`;
 * 2. `torchlint.interpreter`: `<python> [its args] -m torchlint server ARGS`;
 * 3. the Python extension's selected interpreter: `<python> -m torchlint server ARGS`;
 * 4. `torchlint server ARGS` from PATH.
 * Returns an error message when `torchlint.path` is set but none of its entries exists:
 * silently starting another torchlint than the one asked for would hide the mistake.
 */
export function resolveLaunch(settings: Settings, env: Environment): Launch | { error: string } {
  const serverArgs = ["server", ...settings.args];
  if (settings.path.length > 0) {
    const candidates = settings.path.map((p) => expandPath(p, env.workspaceFolder, env.home));
    const found = candidates.find((p) => env.exists(p));
    if (found === undefined) {
      return { error: `none of the torchlint.path entries exists: ${candidates.join(", ")}` };
    }
    return { command: found, args: serverArgs, source: "path" };
  }
  if (settings.interpreter.length > 0) {
    const [python, ...pythonArgs] = settings.interpreter.map((p, i) =>
      i === 0 ? expandPath(p, env.workspaceFolder, env.home) : p);
    return { command: python, args: [...pythonArgs, "-m", "torchlint", ...serverArgs], source: "interpreter" };
  }
  if (env.selectedInterpreter) {
    return { command: env.selectedInterpreter, args: ["-m", "torchlint", ...serverArgs], source: "python-extension" };
  }
  return { command: "torchlint", args: serverArgs, source: "PATH" };
}

/**
 * What the server is told at start (`initializationOptions`) and answers to
 * `workspace/configuration` for the `torchlint` section: ruff-vscode's shape, a `settings`
 * object. Only the settings the server acts on; how it is started stays on this side.
 */
export function serverSettings(settings: Settings): Record<string, unknown> {
  return {
    select: settings.select,
    ignore: settings.ignore,
    run: settings.run,
    fixOnSave: settings.fixOnSave,
    unsafeFixes: settings.unsafeFixes,
    verify: settings.verify,
  };
}

export function initializationOptions(settings: Settings): { settings: Record<string, unknown> } {
  return { settings: serverSettings(settings) };
}

/**
 * With `run: onSave`, findings published while a document has unsaved edits are held back
 * (the last ones shown stay): the server lints as you type, the editor shows it on save.
 */
export function acceptDiagnostics(run: RunMode, documentIsDirty: boolean): boolean {
  return run === "onType" || !documentIsDirty;
}

export const FIX_ALL_KIND = "source.fixAll.torchlint";

// Settings the client acts on by itself; a change to any other one restarts the server
// (which reads its settings at start).
const CLIENT_SIDE: ReadonlyArray<keyof Settings> = ["run", "fixOnSave"];

/** Whether a configuration change (`affects("select")`, ...) needs a server restart. */
export function needsRestart(affects: (key: string) => boolean): boolean {
  return (Object.keys(DEFAULTS) as Array<keyof Settings>).some((key) => !CLIENT_SIDE.includes(key) && affects(key));
}

const DOCS_BASE = "https://github.com/torchlint/torchlint/blob/main/rules_docs/";
const RULES_TABLE = "https://github.com/torchlint/torchlint#rules";
const RULE_CODE = /^TL\d{3}$/;

/**
 * The page of a rule's documentation. A diagnostic from the server carries the exact page
 * (`codeDescription.href`), which wins; a code and rule name give the page's file name
 * (`rules_docs/TL101-backward-under-no-grad.md`); a bare code gets the README's rule table.
 * `undefined` for what is not a torchlint code (another linter's diagnostic).
 */
export function ruleDocsUrl(code: string, href?: string, name?: string): string | undefined {
  const upper = code.trim().toUpperCase();
  if (!RULE_CODE.test(upper)) {
    return undefined;
  }
  if (href && href.startsWith(DOCS_BASE)) {
    return href;
  }
  if (name && /^[a-z0-9-]+$/.test(name)) {
    return `${DOCS_BASE}${upper}-${name}.md`;
  }
  return RULES_TABLE;
}

/** The Python-language documents and notebook cells the client sends to the server. */
export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "untitled", language: "python" },
  // Notebook cells: the server announces notebook sync, so the client sends the notebook
  // and its Python cells together (the cells are linted as one program).
  { scheme: "vscode-notebook-cell", language: "python" },
  { notebook: "*", language: "python" },
];
