"""The probes of the rules from issue 20 (first rows): each demonstrates its hazard with the
facts a finding carries, and says "no" when the facts make the hazard absent. The probes are
plain functions beside their rules (torch and the stdlib only), called here in-process; the
sandboxed worker runs the same code (tests/test_verify.py, `every_probed`)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from torchlint import catalog  # noqa: E402

pytestmark = pytest.mark.torch

# code -> (facts that show the hazard, facts that make it absent)
CASES: dict[str, tuple[dict, dict]] = {
    "TL603": ({"held": "argparse.Namespace"}, {"held": "vars(args)"}),
    "TL404": ({"input": "sigmoid"}, {"input": "sigmoid", "logit": 0.5}),
    "TL405": ({}, {"eps": 1e-8}),
    "TL307": ({"num_workers": 2}, {"num_workers": 2, "sharded": True}),
    "TL111": ({"second_backward": False}, {"second_backward": True}),
    "TL112": ({"optimizer": "SGD"}, {"optimizer": "Adam"}),
    "TL110": ({"detached": False}, {"detached": True}),
    "TL705": ({"layer": "BatchNorm"}, {"layer": "BatchNorm", "eval_called": True}),
    "TL706": ({"no_grad": False}, {"no_grad": True}),
}


def _probe(code: str):
    rule = next(r for r in catalog.static_rules() if r.code == code)
    probe = rule.evidence.probe
    assert callable(probe), f"{code}: the probe is a function beside the rule"
    return probe


@pytest.mark.parametrize("code", sorted(CASES))
def test_probe_confirms_the_hazard(code):
    verdict, evidence = _probe(code)(CASES[code][0], "cpu")
    assert verdict == "confirmed", evidence


@pytest.mark.parametrize("code", sorted(CASES))
def test_probe_says_no_when_the_facts_remove_the_hazard(code):
    verdict, evidence = _probe(code)(CASES[code][1], "cpu")
    assert verdict == "not-reproduced", evidence


@pytest.mark.parametrize("code", sorted(CASES))
def test_probe_confirms_with_no_facts(code):
    """The worker's own test (`test_fact_probe_demonstrates_on_cpu`) gives no facts."""
    assert _probe(code)({}, "cpu")[0] == "confirmed"


def test_tl603_refuses_every_object_kind_it_names():
    probe = _probe("TL603")
    for held in ("argparse.Namespace", "object", "nn.Module", "optimizer", "numpy"):
        assert probe({"held": held}, "cpu")[0] in ("confirmed", "skipped"), held
    assert probe({"held": "state_dict"}, "cpu")[0] == "not-reproduced"


def test_tl404_raw_logits_raise_and_probabilities_do_not():
    probe = _probe("TL404")
    assert probe({"input": "logits"}, "cpu")[0] == "confirmed"
    assert probe({"input": "logits", "in_unit_range": True}, "cpu")[0] == "not-reproduced"


def test_tl307_one_worker_repeats_nothing():
    assert _probe("TL307")({"num_workers": 1}, "cpu")[0] == "not-reproduced"


def test_tl112_adam_family_ignores_the_scale_even_clipped():
    assert _probe("TL112")({"optimizer": "Adam", "clipped": True}, "cpu")[0] == "not-reproduced"
    assert _probe("TL112")({"optimizer": "AdamW"}, "cpu")[0] == "not-reproduced"


def test_tl110_roles_read_the_usual_gan_names():
    from torchlint.rules.autograd.gan_discriminator_without_detach import role

    for name in ("netD", "D", "D_A", "discriminator", "optimizer_D", "optimizerD", "opt_d", "d_optimizer", "critic"):
        assert role(name) == "D", name
    for name in ("netG", "G", "G_AB", "generator", "optimizer_G", "gen_opt", "g_optim"):
        assert role(name) == "G", name
    for name in ("model", "optimizer", "decoder", "encoder", "data", "grad", "dropout", "gamma"):
        assert role(name) is None, name


def test_tl705_dropout_is_active_until_eval():
    assert _probe("TL705")({"layer": "Dropout"}, "cpu")[0] == "confirmed"
    assert _probe("TL705")({"layer": "Dropout", "eval_called": True}, "cpu")[0] == "not-reproduced"
