"""The held-out DDP corpus of December 2026: 30 public GitHub projects of distributed
(DistributedDataParallel) training code, for measuring the precision of TL308
(ddp-loader-without-sampler) and the TL5xx rules. heldout-2026-12 gave TL308 no finding at
all: each of its DDP projects builds a DistributedSampler.

Mostly code by ordinary users: DDP tutorials and course chapters, templates and boilerplates,
study repositories, small research and fine-tuning scripts. None of them is in
training_corpus.PROJECTS, heldout_corpus.HELDOUT or corpus.py. Left out on purpose: copies of
another entry or of pytorch/examples' ddp-tutorial-series with nothing changed
(Kotomiya07/pytorch-ddp-samples is CSCfi's, sparklerz/pytorch-ddp-experiment the tutorial's),
repositories with no DataLoader next to their DDP model, and (to keep 30) four tutorials with
no TL3xx-TL5xx finding at all (HongxinXiang/pytorch-multi-GPU-training-tutorial,
AIZOOTech/pytorch_mnist_ddp, wawancenggoro/pytorch-ddp-cifar10, CuiJiali-CV/pytorch-ddp), swapped
for projects whose DDP loaders have no DistributedSampler (their own sharding, or none).
`training_corpus.py prepare --set ddp-2026-12` builds it; this file only pins it.

Each entry: (name, owner/repo, commit, category, subdirs); () keeps the whole tree.
"""

from __future__ import annotations

NAME = "ddp-2026-12"

DDP: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    # tutorials, course chapters and examples
    ("cscfi-ddp-examples", "CSCfi/pytorch-ddp-examples", "4467e84197ea364e4b4629e96f78e19e3c3a5907", "ddp", ()),
    ("learn-pytorch-ddp", "Burakblm/learn-pytorch-ddp", "0381599d5f9393e8b0c3f567963091cb7026fa40", "ddp", ()),
    ("wxc-ddp-tutorial-series", "wxc971231/ddp-tutorial-series", "ef810fbeae202cba704fce220ca07a445575f28b",
     "ddp", ()),
    ("kaiizhang-ddp-tutorial", "KaiiZhang/DDP-Tutorial", "4d93af5ec3e5d85d07ef4303a7cd89f8344d7b46", "ddp", ()),
    ("aisummer-ddp", "The-AI-Summer/pytorch-ddp", "a2bdb16e56276d3b85fb7356d7b33dae99ad90fd", "ddp", ()),
    ("aalto-ddp-imagenet", "AaltoRSE/pytorch-ddp-imagenet", "076c2f67e6524a1061cd8a9cae30fccf1bf0066e", "ddp",
     ()),
    ("zfhxi-ddp-demo", "zfhxi/pytorch-ddp-demo", "6c492fb5fb4078f196c6ec2b4b12398096e70146", "ddp", ()),
    ("skj-ddp-example", "skj092/pytorch-ddp-example", "749906ef0a058ca54f9170396c58a7018ee95250", "ddp", ()),
    ("shishuai-ddp-demo", "shishuai-ss/PyTorch-DDP-demo", "84b5d4100c131cc52645fa9255ba7a02834154b8", "ddp", ()),
    ("vvvm23-ddp", "vvvm23/pytorch-ddp", "10e6054711cfe31344a9ab470301262003943b8a", "ddp", ()),
    ("jswords-ddp", "jSwords91/pytorch-ddp", "95fea6fd68f9d4f31deff40909d9e3bd388462a7", "ddp", ()),
    ("anishjoshi-ddp", "AnishJoshi13/Pytorch-DDP", "2020e7a1d5b4481a912c378b7be7d7473b6a029f", "ddp", ()),
    ("rentainhe-distributed", "rentainhe/pytorch-distributed-training", "f5fcd0aeea8bd103a6ad1cd4131ce1ad928a857e",
     "ddp", ()),
    # one course's DDP, FSDP, Ray, Lightning, MONAI and torchrun launch examples
    ("yunchaoyang-multigpu", "YunchaoYang/Distributed_Training_MultiGPU", "93bf29455ab00013738777bc02802aca509c0330",
     "ddp", ()),
    # templates, boilerplates, launchers
    ("howardlau-ddp-template", "howardlau1999/pytorch-ddp-template", "d907ac5dc986b733b252ae014fc4e8073f17ac76",
     "ddp", ()),
    ("slurm-ddp-boilerplate", "albertbuchard/slurm-pytorch-ddp-boilerplate",
     "b3a71f50eccd8fb9dd2b02cd3c1d5d7cc24f23ae", "ddp", ()),
    ("ddp-nccl-distributed", "TylrDn/pytorch-ddp-nccl-distributed", "4f514abfa194ed8d9cb2b81a62e4e212658cb23c",
     "ddp", ()),
    ("sudsho-ddp-train", "sudsho/pytorch-ddp-distributed-train", "9eea499b4db4f3f05816d0146e5a18a58cf48e29",
     "ddp", ()),
    ("haozhi-ddp", "haozhi1817/pytorch-ddp", "ba8457d3a1cfcf21a33e4cad7d1209969b1fb83b", "ddp", ()),
    ("ultra-light-trainer", "tedyhabtegebrial/ultra_light_trainer", "faf0d2f8c65a3247431897bf01921c2028225e3b",
     "ddp", ()),
    ("codeharris-multi-gpu-ddp", "codeharris/multi-gpu-ddp", "62a46443756aca557327e818325a60b59fc876f5", "ddp", ()),
    ("ddp-analysis", "Js2Hou/Pytorch-DDP-Analysis", "30ac9ea2aaa6d41ac5e9faec18e835f9e8e93949", "ddp", ()),
    # these two shard the data by rank themselves, without a sampler
    ("khegazy-multigpu", "khegazy/pytorch_multigpu", "74947d344bf4e2a3bb2fe240513840ce181eb038", "ddp", ()),
    ("epappas-torchrun-ddp", "epappas/torchrun-ddp", "9cd10c2477208658ce5bf96d0bba86a4c4e9b44a", "ddp", ()),
    # study repositories, research and fine-tuning code
    ("vlsi-study", "KangHoML/VLSI", "239d59dd63b5530eb59ca23134325946c509024e", "ddp", ()),
    ("modeltest-platform", "lzxzy/ModelTest_Platform", "bfaa51141311765dfdf4d161b67e8712e20691ac", "ddp", ()),
    ("ddpm-ddp", "Beilong-Tang/pytorch-ddpm-ddp", "24081d9a6f2c8bacb72cb0194f13fe90ded1aa8b", "ddp", ()),
    # esm/ is a vendored copy of facebookresearch/esm, unit_test/ tests it: left out.
    ("pseudoesm", "zhangruochi/pseudoESM", "859e25ad07681fe0263a80984dcb5a81307a0f8d", "ddp",
     ("distribution.py", "draft.ipynb", "evaluator.py", "inference.py", "loader", "loss.py", "std_logger.py",
      "train.py", "trainer.py", "utils")),
    ("bisenet-pc2005", "pc2005/BiSeNet", "ceec00c847693ec315c102274ddfa19df888e1f9", "ddp", ()),
    ("paligemma2-ddp", "NMS05/PaliGemma2-fine-tuning-with-PyTorch-DDP", "d80ed6b02960f3329bf7d8fd2c5672c51d35009d",
     "ddp", ()),
)
