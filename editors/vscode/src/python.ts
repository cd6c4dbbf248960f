// The interpreter selected in Microsoft's Python extension (ms-python.python), through the
// API it exports; absent when the extension is not installed. Typed by hand for the few
// members used, so the extension does not depend on that extension's npm package.

import * as vscode from "vscode";

interface ResolvedEnvironment {
  executable: { uri?: vscode.Uri };
}

interface EnvironmentPath {
  id: string;
  path: string;
}

interface PythonApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

export const PYTHON_EXTENSION_ID = "ms-python.python";

async function api(): Promise<PythonApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
  if (extension === undefined) {
    return undefined;
  }
  const exports = extension.isActive ? extension.exports : await extension.activate();
  return exports?.environments ? exports : undefined;
}

/** The selected interpreter's executable for `resource`'s folder, or undefined. */
export async function selectedInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  try {
    const python = await api();
    if (python === undefined) {
      return undefined;
    }
    const environment = await python.environments.resolveEnvironment(
      python.environments.getActiveEnvironmentPath(resource));
    return environment?.executable.uri?.fsPath;
  } catch {
    return undefined; // an old or broken Python extension: fall back to PATH
  }
}

/** Calls `listener` when the user selects another interpreter. */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const python = await api();
  return python?.environments.onDidChangeActiveEnvironmentPath(listener);
}
