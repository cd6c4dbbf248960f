from torchlint.diagnostics import SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, SYNTAX_ERROR_SEVERITY
from torchlint.rules.base import Rule


class SyntaxErrorRule(Rule):
    """Produced by the checker itself when a file cannot be read, decoded or parsed."""

    code = SYNTAX_ERROR_CODE
    name = SYNTAX_ERROR_NAME
    summary = "File could not be read, decoded or parsed"
    severity = SYNTAX_ERROR_SEVERITY
    tags = ("correctness",)
    precision = "very-high"
    verify_note = "a syntax error needs no run-time confirmation"
