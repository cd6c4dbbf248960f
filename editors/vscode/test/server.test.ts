// The extension's side of the protocol against the real `torchlint server`: started the way
// resolveLaunch starts it for a selected interpreter, given the extension's
// initializationOptions, it publishes diagnostics for a file and for a notebook cell, with
// documentation links that ruleDocsUrl accepts. Skipped when no Python here has torchlint
// with its `lsp` extra (CI runs it inside the test venv).

import { strict as assert } from "assert";
import { ChildProcess, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { after, before, describe, it } from "node:test";
import {
  createProtocolConnection,
  DidOpenNotebookDocumentNotification,
  DidOpenTextDocumentNotification,
  ExitNotification,
  InitializedNotification,
  InitializeRequest,
  ProtocolConnection,
  PublishDiagnosticsNotification,
  PublishDiagnosticsParams,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-languageserver-protocol/node";
import { DEFAULTS, initializationOptions, resolveLaunch, ruleDocsUrl } from "../src/settings";

const BAD = "import torch\n\nwith torch.no_grad():\n    loss = model(x).sum()\n    loss.backward()\n";

function pythonWithServer(): string | undefined {
  for (const python of [process.env.TORCHLINT_TEST_PYTHON, "python3", "python"]) {
    if (python && spawnSync(python, ["-c", "import torchlint, pygls"], { stdio: "ignore" }).status === 0) {
      return python;
    }
  }
  return undefined;
}

const python = pythonWithServer();

describe("torchlint server, as the extension starts it", { skip: python ? false : "no Python with torchlint[lsp]" }, () => {
  let server: ChildProcess;
  let connection: ProtocolConnection;
  let workspace: string;
  const published = new Map<string, PublishDiagnosticsParams>();
  const waiters: Array<() => void> = [];

  function diagnosticsFor(uri: string): Promise<PublishDiagnosticsParams> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no diagnostics for ${uri}`)), 30000);
      const check = (): boolean => {
        const found = published.get(uri);
        if (found && found.diagnostics.length > 0) {
          clearTimeout(timer);
          resolve(found);
          return true;
        }
        return false;
      };
      if (!check()) {
        waiters.push(() => void check());
      }
    });
  }

  before(async () => {
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), "torchlint-vscode-"));
    const launch = resolveLaunch(DEFAULTS, { selectedInterpreter: python, exists: () => false });
    assert.ok(!("error" in launch));
    assert.equal(launch.source, "python-extension");
    server = spawn(launch.command, launch.args, { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
    connection = createProtocolConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
    connection.onNotification(PublishDiagnosticsNotification.type, (params) => {
      published.set(params.uri, params);
      waiters.splice(0).forEach((w) => w());
    });
    connection.listen();
    const result = await connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: `file://${workspace}`,
      workspaceFolders: [{ uri: `file://${workspace}`, name: "ws" }],
      capabilities: {
        textDocument: { publishDiagnostics: { codeDescriptionSupport: true } },
        notebookDocument: { synchronization: {} },
      },
      initializationOptions: initializationOptions(DEFAULTS),
    });
    assert.ok(result.capabilities.notebookDocumentSync, "the server syncs notebooks");
    await connection.sendNotification(InitializedNotification.type, {});
  });

  after(() => {
    server?.kill();
    fs.rmSync(workspace, { recursive: true, force: true });
  });

  it("publishes findings with links to the rule docs", async () => {
    const uri = `file://${workspace}/train.py`;
    await connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId: "python", version: 1, text: BAD },
    });
    const { diagnostics } = await diagnosticsFor(uri);
    const tl101 = diagnostics.find((d) => d.code === "TL101");
    assert.ok(tl101, JSON.stringify(diagnostics));
    assert.equal(tl101.source, "torchlint");
    assert.equal(tl101.range.start.line, 4);
    const href = tl101.codeDescription?.href;
    assert.ok(href && ruleDocsUrl("TL101", href) === href, `docs link ${href}`);
  });

  it("lints a notebook's Python cells", async () => {
    const notebook = `file://${workspace}/train.ipynb`;
    const cell = `vscode-notebook-cell://${workspace}/train.ipynb#W0sZmlsZQ%3D%3D`;
    await connection.sendNotification(DidOpenNotebookDocumentNotification.type, {
      notebookDocument: { uri: notebook, notebookType: "jupyter-notebook", version: 1, cells: [{ kind: 2, document: cell }] },
      cellTextDocuments: [{ uri: cell, languageId: "python", version: 1, text: BAD }],
    });
    const { diagnostics } = await diagnosticsFor(cell);
    assert.ok(diagnostics.some((d) => d.code === "TL101" && d.range.start.line === 4), JSON.stringify(diagnostics));
  });

  // Last: VS Code reports a server that exits non-zero after shutdown as crashed.
  it("exits 0 after shutdown and exit", async () => {
    const exited = new Promise<number | null>((resolve) => server.once("exit", (code) => resolve(code)));
    await connection.sendRequest(ShutdownRequest.type);
    await connection.sendNotification(ExitNotification.type);
    assert.equal(await exited, 0);
    connection.dispose();
  });
});
