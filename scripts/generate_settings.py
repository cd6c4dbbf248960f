"""Regenerate what the option table (torchlint/options.py) generates: the JSON schema shipped
for editors (torchlint/data/schema.json) and the README's configuration example.
`python scripts/generate_settings.py` writes them; `--check` exits 1 when either is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchlint.options import json_schema, toml_example  # noqa: E402

SCHEMA = ROOT / "torchlint" / "data" / "schema.json"
README = ROOT / "README.md"
MARKER = "<!-- generated from torchlint/options.py by scripts/generate_settings.py: edit the table, not this -->\n"


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


def readme_text(readme: str) -> str:
    start = readme.index(MARKER) + len(MARKER)
    end = readme.index("```\n", readme.index("```toml\n", start) + 1) + 4
    return readme[:start] + "```toml\n" + toml_example() + "```\n" + readme[end:]


def main(argv: list[str]) -> int:
    outputs = {SCHEMA: schema_text(), README: readme_text(README.read_text(encoding="utf-8"))}
    stale = [path for path, text in outputs.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run python scripts/generate_settings.py")
        return 1 if stale else 0
    for path in stale:
        path.write_text(outputs[path], encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
