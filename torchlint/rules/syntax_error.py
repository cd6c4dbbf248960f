from torchlint.rules.base import Rule


class SyntaxErrorRule(Rule):
    """Produced by the checker itself when a file cannot be read, decoded or parsed."""

    code = "TL000"
    name = "syntax-error"
    summary = "File could not be read, decoded or parsed"
    severity = "error"
    tags = ("correctness",)
    precision = "very-high"
    verify_note = "a syntax error needs no run-time confirmation"
