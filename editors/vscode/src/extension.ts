// VS Code glue: starts `torchlint server` (see settings.ts for how) and wires the settings
// that live on the client side (run on save, fix on save, the commands).

import * as fs from "fs";
import * as vscode from "vscode";
import {
  CodeAction,
  CodeActionRequest,
  Command,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { onInterpreterChange, selectedInterpreter } from "./python";
import {
  acceptDiagnostics,
  DOCUMENT_SELECTOR,
  FIX_ALL_KIND,
  initializationOptions,
  Launch,
  needsRestart,
  readSettings,
  resolveLaunch,
  ruleDocsUrl,
  serverSettings,
  Settings,
} from "./settings";

const SECTION = "torchlint";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;

function settingsFor(scope?: vscode.Uri): Settings {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  return readSettings((key) => config.get(key));
}

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

async function launch(settings: Settings): Promise<Launch | { error: string }> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  return resolveLaunch(settings, {
    workspaceFolder: folder?.uri.fsPath,
    selectedInterpreter: await selectedInterpreter(folder?.uri),
    exists: isFile,
  });
}

function findDocument(uri: vscode.Uri): vscode.TextDocument | undefined {
  const key = uri.toString();
  return vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
}

async function start(): Promise<void> {
  const settings = settingsFor();
  if (!settings.enable) {
    output.appendLine("torchlint.enable is off: the server is not started.");
    return;
  }
  const how = await launch(settings);
  if ("error" in how) {
    output.appendLine(`Not starting the torchlint server: ${how.error}`);
    void vscode.window.showErrorMessage(`torchlint: ${how.error}`);
    return;
  }
  output.appendLine(`Starting ${how.command} ${how.args.join(" ")} (from ${how.source})`);
  const folder = vscode.workspace.workspaceFolders?.[0];
  const serverOptions: ServerOptions = {
    command: how.command,
    args: how.args,
    options: { cwd: folder?.uri.fsPath },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: output,
    initializationOptions: initializationOptions(settings),
    synchronize: { configurationSection: SECTION },
    middleware: {
      handleDiagnostics(uri, diagnostics, next) {
        const document = findDocument(uri);
        if (acceptDiagnostics(settingsFor(uri).run, document?.isDirty ?? false)) {
          next(uri, diagnostics);
        }
      },
      workspace: {
        // The server asks for the `torchlint` section per file: answer with the same
        // settings object it got at start, read for that file's folder.
        async configuration(params, token, next) {
          const answers = await next(params, token);
          if (!Array.isArray(answers)) {
            return answers; // an error from the editor
          }
          return params.items.map((item, i) => item.section === SECTION
            ? serverSettings(settingsFor(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined))
            : answers[i]);
        },
      },
    },
  };
  client = new LanguageClient(SECTION, "torchlint", serverOptions, clientOptions);
  try {
    await client.start();
  } catch (error) {
    output.appendLine(`The torchlint server did not start: ${String(error)}`);
    void vscode.window.showErrorMessage(
      `torchlint: the server did not start (${String(error)}). Is torchlint installed with the lsp extra ` +
      "(`pip install \"torchlint[lsp]\"`) in the selected interpreter?");
  }
}

async function stop(): Promise<void> {
  const running = client;
  client = undefined;
  if (running !== undefined && running.state !== State.Stopped) {
    await running.stop();
  }
}

async function restart(): Promise<void> {
  await stop();
  await start();
}

/** The edits of the server's `source.fixAll.torchlint` action for `document` (none if it offers none). */
async function fixAllEdits(document: vscode.TextDocument): Promise<vscode.TextEdit[]> {
  if (client === undefined || client.state !== State.Running) {
    return [];
  }
  const full = new vscode.Range(0, 0, document.lineCount, 0);
  const result = await client.sendRequest(CodeActionRequest.type, {
    textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri) },
    range: client.code2ProtocolConverter.asRange(full),
    context: { diagnostics: [], only: [FIX_ALL_KIND] },
  });
  const action = (result ?? []).find((a: Command | CodeAction): a is CodeAction => "edit" in a && a.edit !== undefined);
  if (action?.edit === undefined) {
    return [];
  }
  const edit = await client.protocol2CodeConverter.asWorkspaceEdit(action.edit);
  return edit.get(document.uri);
}

async function fixAllCommand(): Promise<void> {
  const document = vscode.window.activeTextEditor?.document;
  if (document === undefined) {
    return;
  }
  const edits = await fixAllEdits(document);
  if (edits.length === 0) {
    void vscode.window.showInformationMessage("torchlint: nothing to fix.");
    return;
  }
  const edit = new vscode.WorkspaceEdit();
  edit.set(document.uri, edits);
  await vscode.workspace.applyEdit(edit);
}

/** Opens a rule's page: the code given (from a diagnostic's hover), else one picked from the file's findings. */
async function showRuleDocs(code?: string, href?: string): Promise<void> {
  let url = code ? ruleDocsUrl(code, href) : undefined;
  if (url === undefined) {
    const editor = vscode.window.activeTextEditor;
    const found = new Map<string, string | undefined>();
    for (const d of editor ? vscode.languages.getDiagnostics(editor.document.uri) : []) {
      if (d.source !== SECTION || d.code === undefined) {
        continue;
      }
      const value = typeof d.code === "object" ? String(d.code.value) : String(d.code);
      found.set(value, typeof d.code === "object" ? d.code.target.toString() : undefined);
    }
    const picked = await vscode.window.showQuickPick(
      [...found.keys()].sort().concat(found.size ? [] : ["TL101"]),
      { placeHolder: "Rule code (for example TL101)" });
    url = picked ? ruleDocsUrl(picked, found.get(picked)) : undefined;
  }
  if (url !== undefined) {
    await vscode.env.openExternal(vscode.Uri.parse(url));
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("torchlint");
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand("torchlint.restart", restart),
    vscode.commands.registerCommand("torchlint.fixAll", fixAllCommand),
    vscode.commands.registerCommand("torchlint.showRuleDocs", showRuleDocs),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (needsRestart((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
        await restart();
      }
    }),
    vscode.workspace.onWillSaveTextDocument((event) => {
      if (event.document.languageId === "python" && settingsFor(event.document.uri).fixOnSave) {
        event.waitUntil(fixAllEdits(event.document));
      }
    }),
  );
  const interpreterWatch = await onInterpreterChange(() => void restart());
  if (interpreterWatch !== undefined) {
    context.subscriptions.push(interpreterWatch);
  }
  await start();
}

export async function deactivate(): Promise<void> {
  await stop();
}
