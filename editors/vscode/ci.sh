#!/usr/bin/env bash
# Build, lint, unit-test and package the VS Code extension: npm ci (from the committed
# package-lock.json), eslint, node --test, vsce package -> torchlint.vsix.
# Skips (exit 0, with a message) when node/npm are missing or too old, or when the npm
# registry cannot be reached for a package the npm cache lacks; any other failure fails.
set -euo pipefail
case "$0" in */*) cd "${0%/*}" ;; esac  # no external command before the node check

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "editors/vscode/ci.sh: SKIPPED: node and npm are not installed (the VS Code extension was not built)"
  exit 0
fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  echo "editors/vscode/ci.sh: SKIPPED: node $(node --version) is older than 20, which @vscode/vsce needs"
  exit 0
fi

if ! npm ci --prefer-offline --no-audit --no-fund --loglevel=error; then
  # Only an unreachable registry is a skip; a broken lock file or package is a failure.
  if ! npm ping >/dev/null 2>&1; then
    echo "editors/vscode/ci.sh: SKIPPED: the npm registry is unreachable and the npm cache lacks a package"
    exit 0
  fi
  exit 1
fi
npm run --silent lint
npm test --silent
rm -f torchlint.vsix
npx --no-install vsce package --out torchlint.vsix
# The package must carry the compiled entry point and the language client it loads.
python3 - <<'PY'
import json, sys, zipfile
names = set(zipfile.ZipFile("torchlint.vsix").namelist())
manifest = json.loads(zipfile.ZipFile("torchlint.vsix").read("extension/package.json"))
need = {"extension/" + manifest["main"].lstrip("./"), "extension/node_modules/vscode-languageclient/node.js"}
missing = need - names
if missing:
    sys.exit(f"torchlint.vsix lacks {sorted(missing)}")
print(f"torchlint.vsix: {len(names)} files, entry point {manifest['main']}")
PY
