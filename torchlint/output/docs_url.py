from torchlint import __version__

DOCS_BASE = "https://github.com/torchlint/torchlint/blob/main/rules_docs/"
INFORMATION_URI = "https://github.com/torchlint/torchlint"


def rule_url(code: str, name: str) -> str:
    return f"{DOCS_BASE}{code}-{name}.md" if code and name else INFORMATION_URI


def version() -> str:
    return __version__
