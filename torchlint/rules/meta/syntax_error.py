from torchlint.diagnostics import SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, SYNTAX_ERROR_SEVERITY
from torchlint.rules.base import Evidence, Rule


class SyntaxErrorRule(Rule):
    """## What it does
    Reports a file that torchlint could not read, decode or parse, at the position the
    parser (or decoder) names: a syntax error, an undecodable file, a file larger than
    `max-file-size` or one torchlint may not read, and a file whose lint ran past
    `lint-timeout`. The run goes on with the other files. A broken configuration is
    [TL002](TL002-config-error.md) and an internal error [TL003](TL003-internal-error.md):
    `--ignore TL000` hides neither.

    ## Why is this bad?
    A file that does not parse is not checked by any other rule, so its PyTorch mistakes stay
    hidden, and it will fail at import time anyway. When the file uses syntax newer than the
    Python that torchlint runs on (a `match` statement on 3.9, PEP 695 `type` aliases on 3.11),
    the message says so: run torchlint under the Python your project targets.

    ## Example
    ```python
    import torch

    def train(:   # SyntaxError: invalid syntax
        ...
    ```
    A file saved as Latin-1 without a coding cookie is also reported (`cannot decode file`).

    ## Use instead
    Fix the syntax, or declare the file's encoding with a PEP 263 cookie
    (`# -*- coding: latin-1 -*-`), or save it as UTF-8.

    ## Fix safety
    No automatic fix.

    ## References
    - [Python: lexical analysis, encoding declarations](https://docs.python.org/3/reference/lexical_analysis.html#encoding-declarations)
    """

    code = SYNTAX_ERROR_CODE
    name = SYNTAX_ERROR_NAME
    summary = "File could not be read, decoded or parsed"
    severity = SYNTAX_ERROR_SEVERITY
    tags = ("correctness",)
    precision = "very-high"
    evidence = Evidence(reason="a syntax error needs no run-time confirmation")
