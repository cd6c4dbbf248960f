"""TL208: `out, lengths = pack_padded_sequence(...)`: a PackedSequence has four fields."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Evidence, Rule, Violation

_PACKERS = frozenset(f"torch.nn.utils.rnn.{n}" for n in ("pack_padded_sequence", "pack_sequence"))


class PackedSequenceUnpacked(Violation):
    packer: str  # `pack_padded_sequence`
    names: int
    help = "Assign it to one name; `pad_packed_sequence` returns `(padded, lengths)`"

    def message(self) -> str:
        return (f"`{self.packer}` returns a PackedSequence of 4 fields: unpacking it into "
                f"{self.names} names raises ValueError")


class PackedSequenceUnpacking(Rule):
    """## What it does
    Flags the result of `torch.nn.utils.rnn.pack_padded_sequence(...)` or `pack_sequence(...)`
    unpacked into a number of names other than four: `packed, lengths = pack_padded_sequence(...)`.

    ## Why is this bad?
    These functions return one `PackedSequence`, a named tuple with four fields (`data`,
    `batch_sizes`, `sorted_indices`, `unsorted_indices`). Unpacking it into two names raises on
    every torch release that has the four fields (checked on torch 2.13):

    ```
    ValueError: too many values to unpack (expected 2)
    ```

    The two-value form belongs to `pad_packed_sequence`, which returns `(padded, lengths)`; the
    two are easily confused.

    ## Example
    ```python
    from torch.nn.utils.rnn import pack_padded_sequence

    packed, lengths = pack_padded_sequence(emb, lens, batch_first=True)
    out, _ = lstm(packed)
    ```

    ## Use instead
    ```python
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    packed = pack_padded_sequence(emb, lens, batch_first=True)
    out, _ = lstm(packed)
    out, lengths = pad_packed_sequence(out, batch_first=True)
    ```

    ## Fix safety
    No automatic fix: which name the code meant to keep is not certain.

    ## References
    - [torch.nn.utils.rnn.pack_padded_sequence](https://pytorch.org/docs/stable/generated/torch.nn.utils.rnn.pack_padded_sequence.html)
    - [torch.nn.utils.rnn.PackedSequence](https://pytorch.org/docs/stable/generated/torch.nn.utils.rnn.PackedSequence.html)
    """

    code = "TL208"
    name = "packed-sequence-unpacking"
    summary = "A PackedSequence (four fields) unpacked into a different number of names"
    severity = "error"
    tags = ("correctness",)
    precision = "very-high"
    requires_text = ("pack_padded_sequence", "pack_sequence")
    evidence = Evidence(reason=("checked once on torch 2.13: unpacking pack_padded_sequence/pack_sequence into two names "
                                "raises ValueError (tests/test_migrations.py repeats it when torch is installed)"),
                        crash=r"values to unpack")

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        name = ctx.call_name(node.value)
        if name not in _PACKERS:
            return
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) != 4 \
                    and not any(isinstance(e, ast.Starred) for e in target.elts):
                short = name.rsplit(".", 1)[1]
                self.report(target, PackedSequenceUnpacked(packer=short, names=len(target.elts)))
