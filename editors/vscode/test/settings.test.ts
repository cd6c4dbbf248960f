// Unit tests of the extension's pure logic (settings.ts), run with `node --test`.

import { strict as assert } from "assert";
import { describe, it } from "node:test";
import {
  acceptDiagnostics,
  DEFAULTS,
  DOCUMENT_SELECTOR,
  expandPath,
  initializationOptions,
  needsRestart,
  readSettings,
  resolveLaunch,
  ruleDocsUrl,
  Settings,
} from "../src/settings";

const settings = (over: Partial<Settings>): Settings => ({ ...DEFAULTS, ...over });
const nothingExists = { exists: () => false };

describe("readSettings", () => {
  it("returns the defaults when nothing is set", () => {
    assert.deepEqual(readSettings(() => undefined), DEFAULTS);
  });

  it("reads every setting", () => {
    const values: Record<string, unknown> = {
      enable: false, path: ["/opt/bin/torchlint"], interpreter: ["/usr/bin/python3"], args: ["--verbose"],
      select: ["TL1", "TL201"], ignore: ["TL501"], run: "onSave", fixOnSave: true, unsafeFixes: true, verify: true,
    };
    assert.deepEqual(readSettings((key) => values[key]), values);
  });

  it("falls back on wrong types instead of passing them to the server", () => {
    const values: Record<string, unknown> = {
      enable: "yes", path: [1, 2], select: "TL1", ignore: { TL501: true }, run: "always", fixOnSave: 1,
    };
    const read = readSettings((key) => values[key]);
    assert.equal(read.enable, true);
    assert.deepEqual(read.path, []);
    assert.deepEqual(read.select, ["TL1"]); // a lone string is one code
    assert.deepEqual(read.ignore, []);
    assert.equal(read.run, "onType");
    assert.equal(read.fixOnSave, false);
  });

  it("drops empty entries", () => {
    assert.deepEqual(readSettings((key) => (key === "args" ? ["", " ", "--x"] : undefined)).args, ["--x"]);
  });
});

describe("resolveLaunch", () => {
  it("runs torchlint from PATH when nothing is configured and no interpreter is selected", () => {
    assert.deepEqual(resolveLaunch(DEFAULTS, nothingExists), { command: "torchlint", args: ["server"], source: "PATH" });
  });

  it("uses the Python extension's selected interpreter", () => {
    const launch = resolveLaunch(settings({ args: ["--log-level", "debug"] }),
      { ...nothingExists, selectedInterpreter: "/home/u/.venv/bin/python" });
    assert.deepEqual(launch, {
      command: "/home/u/.venv/bin/python",
      args: ["-m", "torchlint", "server", "--log-level", "debug"],
      source: "python-extension",
    });
  });

  it("prefers torchlint.interpreter over the selected one, keeping its arguments", () => {
    const launch = resolveLaunch(settings({ interpreter: ["${workspaceFolder}/.venv/bin/python", "-X", "utf8"] }),
      { ...nothingExists, workspaceFolder: "/ws", selectedInterpreter: "/usr/bin/python3" });
    assert.deepEqual(launch, {
      command: "/ws/.venv/bin/python", args: ["-X", "utf8", "-m", "torchlint", "server"], source: "interpreter",
    });
  });

  it("takes the first torchlint.path entry that exists, before any interpreter", () => {
    const launch = resolveLaunch(settings({ path: ["~/missing/torchlint", "~/bin/torchlint"], args: ["-v"] }),
      { exists: (p) => p === "/home/u/bin/torchlint", home: "/home/u", selectedInterpreter: "/usr/bin/python3" });
    assert.deepEqual(launch, { command: "/home/u/bin/torchlint", args: ["server", "-v"], source: "path" });
  });

  it("is an error, not a silent fallback, when no torchlint.path entry exists", () => {
    const launch = resolveLaunch(settings({ path: ["/nope/torchlint"] }),
      { ...nothingExists, selectedInterpreter: "/usr/bin/python3" });
    assert.ok("error" in launch);
    assert.match(launch.error, /\/nope\/torchlint/);
  });
});

describe("expandPath", () => {
  it("expands ~, ${userHome} and ${workspaceFolder}", () => {
    assert.equal(expandPath("~/x", undefined, "/h"), "/h/x");
    assert.equal(expandPath("~", undefined, "/h"), "/h");
    assert.equal(expandPath("${userHome}/y", undefined, "/h"), "/h/y");
    assert.equal(expandPath("${workspaceFolder}/.venv/bin/torchlint", "/ws", "/h"), "/ws/.venv/bin/torchlint");
  });

  it("leaves ~user and unknown folders alone", () => {
    assert.equal(expandPath("~other/x", undefined, "/h"), "~other/x");
    assert.equal(expandPath("${workspaceFolder}/x", undefined, "/h"), "${workspaceFolder}/x");
  });
});

describe("initializationOptions", () => {
  it("sends the server's settings, never how it was started", () => {
    const options = initializationOptions(settings({ select: ["TL1"], ignore: ["TL102"], path: ["/secret/torchlint"] }));
    assert.deepEqual(options, {
      settings: { select: ["TL1"], ignore: ["TL102"], run: "onType", fixOnSave: false, unsafeFixes: false, verify: false },
    });
  });

  it("keeps --verify off unless asked", () => {
    assert.equal(initializationOptions(DEFAULTS).settings.verify, false);
  });
});

describe("acceptDiagnostics", () => {
  it("shows findings while typing in onType mode", () => {
    assert.equal(acceptDiagnostics("onType", true), true);
  });

  it("holds findings of unsaved edits back in onSave mode", () => {
    assert.equal(acceptDiagnostics("onSave", true), false);
    assert.equal(acceptDiagnostics("onSave", false), true);
  });
});

describe("needsRestart", () => {
  const only = (changed: string) => (key: string) => key === changed;

  it("restarts for what the server reads at start and how it is started", () => {
    for (const key of ["select", "ignore", "path", "interpreter", "args", "enable", "unsafeFixes", "verify"]) {
      assert.equal(needsRestart(only(key)), true, key);
    }
  });

  it("does not restart for what the client does itself", () => {
    assert.equal(needsRestart(only("run")), false);
    assert.equal(needsRestart(only("fixOnSave")), false);
    assert.equal(needsRestart(only("trace.server")), false);
  });

  it("restarts when a client-side and a server setting change together", () => {
    assert.equal(needsRestart((key) => key === "run" || key === "select"), true);
  });
});

describe("ruleDocsUrl", () => {
  const base = "https://github.com/torchlint/torchlint/blob/main/rules_docs/";

  it("uses the diagnostic's own page", () => {
    assert.equal(ruleDocsUrl("TL101", `${base}TL101-backward-under-no-grad.md`), `${base}TL101-backward-under-no-grad.md`);
  });

  it("builds the page from code and name", () => {
    assert.equal(ruleDocsUrl("tl202", undefined, "discarded-conversion"), `${base}TL202-discarded-conversion.md`);
  });

  it("falls back to the rule table, and refuses other linters' codes and foreign links", () => {
    assert.equal(ruleDocsUrl("TL301"), "https://github.com/torchlint/torchlint#rules");
    assert.equal(ruleDocsUrl("TL301", "https://evil.example/x"), "https://github.com/torchlint/torchlint#rules");
    assert.equal(ruleDocsUrl("E501"), undefined);
  });
});

describe("DOCUMENT_SELECTOR", () => {
  it("covers Python files, untitled buffers and notebook cells", () => {
    const schemes = DOCUMENT_SELECTOR.map((f) => ("scheme" in f ? f.scheme : undefined));
    assert.deepEqual(schemes.filter(Boolean), ["file", "untitled", "vscode-notebook-cell"]);
    assert.ok(DOCUMENT_SELECTOR.every((f) => f.language === "python"));
  });
});

describe("package.json", () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const manifest = require("../../package.json");
  const contributed = Object.keys(manifest.contributes.configuration.properties);

  it("contributes exactly the settings the extension reads (plus the client's trace)", () => {
    const read = Object.keys(DEFAULTS).map((key) => `torchlint.${key}`);
    assert.deepEqual([...contributed].sort(), [...read, "torchlint.trace.server"].sort());
  });

  it("declares the same defaults as the code", () => {
    for (const [key, value] of Object.entries(DEFAULTS)) {
      assert.deepEqual(manifest.contributes.configuration.properties[`torchlint.${key}`].default, value, key);
    }
  });

  it("keeps what starts a process out of untrusted workspaces' settings", () => {
    assert.deepEqual(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.sort(),
      ["torchlint.args", "torchlint.interpreter", "torchlint.path", "torchlint.verify"]);
  });

  it("registers every command the extension implements", () => {
    const commands = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(commands, ["torchlint.fixAll", "torchlint.restart", "torchlint.showRuleDocs"]);
  });
});
