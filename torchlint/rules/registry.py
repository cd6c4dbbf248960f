"""The code table: every rule, by code. Codes are permanent; never renumber one."""

from __future__ import annotations

from torchlint.rules.backward_under_no_grad import BackwardUnderNoGrad
from torchlint.rules.base import Rule
from torchlint.rules.data_attribute_mutation import DataAttributeMutation
from torchlint.rules.label_float_cast import LabelFloatCast
from torchlint.rules.mean_reduction_under_ddp import MeanReductionUnderDdp
from torchlint.rules.syntax_error import SyntaxErrorRule
from torchlint.rules.worker_rng_duplication import WorkerRngDuplication

SYNTAX_ERROR = SyntaxErrorRule

ALL_RULES: tuple[type[Rule], ...] = (
    SyntaxErrorRule,
    BackwardUnderNoGrad,
    DataAttributeMutation,
    LabelFloatCast,
    WorkerRngDuplication,
    MeanReductionUnderDdp,
)

RULES_BY_CODE: dict[str, type[Rule]] = {r.code: r for r in ALL_RULES}
RULES_BY_NAME: dict[str, type[Rule]] = {r.name: r for r in ALL_RULES}

assert len(RULES_BY_CODE) == len(ALL_RULES), "duplicate rule code"
assert len(RULES_BY_NAME) == len(ALL_RULES), "duplicate rule name"
