"""The held-out corpus of December 2026 (issue 18, point 5): 54 public GitHub projects that
torchlint's rules were never tuned on, for triage by reviewers who did not write the rules.

None of them is in training_corpus.PROJECTS, corpus.py, transformers, timm or torchvision.
(cleanrl is left out on purpose: issue 22 already ran it under `torchlint run`; so is
caogang/wgan-gp, whose scripts are Python 2 and only give syntax errors.)
`training_corpus.py prepare --set heldout-2026-12` builds it; this file only pins it.

Each entry: (name, owner/repo, commit, category, subdirs); () keeps the whole tree.
"""

from __future__ import annotations

NAME = "heldout-2026-12"

# mrdbourke/pytorch-deep-learning: the course notebooks, without their copies in docs/ (the
# website) and video_notebooks/ (the same lessons as typed on video), which would count each
# finding two or three times.
_MRDBOURKE = (
    "00_pytorch_fundamentals.ipynb", "01_pytorch_workflow.ipynb", "02_pytorch_classification.ipynb",
    "03_pytorch_computer_vision.ipynb", "04_pytorch_custom_datasets.ipynb", "06_pytorch_transfer_learning.ipynb",
    "07_pytorch_experiment_tracking.ipynb", "08_pytorch_paper_replicating.ipynb", "09_pytorch_model_deployment.ipynb",
    "docs/08_pytorch_profiling.ipynb", "docs/10_pytorch_profiling.ipynb", "extras", "going_modular",
    "helper_functions.py")

# Categories: vision, diffusion, llm (pre-training and fine-tuning), tutorial (courses and
# notebooks), rl, gan, ddp (distributed launch scripts).
HELDOUT: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    # research and production training code: vision
    ("convnext", "facebookresearch/ConvNeXt", "048efcea897d999aed302f2639b6270aedf8d4c8", "vision", ()),
    ("deit", "facebookresearch/deit", "7e160fe43f0252d17191b71cbb5826254114ea5b", "vision", ()),
    # moco's main branch has since been emptied; the last commit with the code.
    ("moco", "facebookresearch/moco", "132aea9da9bb995a411c915c0420be3db62052f3", "vision", ()),
    ("simsiam", "facebookresearch/simsiam", "a7bc1772896d0dad0806c51f0bb6f3b16d290468", "vision", ()),
    ("barlowtwins", "facebookresearch/barlowtwins", "8e8d284ca0bc02f88b92328e53f9b901e86b4a3c", "vision", ()),
    ("dinov2", "facebookresearch/dinov2", "b8931f7bf91576930313be2c6d6af376033b35f0", "vision", ()),
    ("swin-transformer", "microsoft/Swin-Transformer", "f82860bfb5225915aca09c3227159ee9e1df874d", "vision", ()),
    ("detr", "facebookresearch/detr", "29901c51d7fe8712168b8d0d64351170bc0f83e0", "vision", ()),
    # diffusion
    ("improved-diffusion", "openai/improved-diffusion", "1bc7bbbdc414d83d4abf2ad8cc1446dc36c4e4d5", "diffusion", ()),
    ("guided-diffusion", "openai/guided-diffusion", "22e0df8183507e13a7813f8d38d51b072ca1e67c", "diffusion", ()),
    ("latent-diffusion", "CompVis/latent-diffusion", "a506df5756472e2ebaf9078affdde2c4f1502cd4", "diffusion", ()),
    ("score-sde-pytorch", "yang-song/score_sde_pytorch", "cb1f359f4aadf0ff9a5e122fe8fffc9451fd6e44", "diffusion", ()),
    ("denoising-diffusion-pytorch", "lucidrains/denoising-diffusion-pytorch",
     "faed4db28e724735323fa91c70aa9b28a6e1cbac", "diffusion", ()),
    ("mindiffusion", "cloneofsimo/minDiffusion", "00a3c8066d25a34d3d472ef6c87c7b6b238ea444", "diffusion", ()),
    ("consistency-models", "openai/consistency_models", "e32b69ee436d518377db86fb2127a3972d0d8716", "diffusion",
     ("cm", "scripts")),
    # LLM pre-training and fine-tuning
    ("alpaca-lora", "tloen/alpaca-lora", "8bb8579e403dc78e37fe81ffbb253c413007323f", "llm", ()),
    ("stanford-alpaca", "tatsu-lab/stanford_alpaca", "761dc5bfbdeeffa89b8bff5d038781a4055f796a", "llm", ()),
    ("qlora", "artidoro/qlora", "7f4e95a68dc076bea9b3a413d2b512eca6d004e5", "llm", ()),
    ("llama2-c", "karpathy/llama2.c", "350e04fe35433e6d2941dce5a1f53308f87058eb", "llm", ()),
    ("build-nanogpt", "karpathy/build-nanogpt", "6104ab1b53920f6e2159749676073ff7d815c1fa", "llm", ()),
    ("tinyllama", "jzhang38/TinyLlama", "bf122247c486b6b897050e98cbb7bedae8eeba73", "llm", ()),
    ("litgpt", "Lightning-AI/litgpt", "26857050fe3ff627cd714fe92f5838f51a3d5efa", "llm", ("litgpt",)),
    # examples/NLU is a vendored copy of transformers: left out.
    ("microsoft-lora", "microsoft/LoRA", "c4593f060e6a368d7bb5af5273b8e42810cdef90", "llm",
     ("loralib", "examples/NLG")),
    ("peft-examples", "huggingface/peft", "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40", "llm", ("examples",)),
    ("trl", "huggingface/trl", "f2cd57710ae345ea6428ae95363267fcf38a3dc8", "llm", ("trl", "examples")),
    ("fastchat", "lm-sys/FastChat", "0e6d3e4beaab66f4d3f93db72541a4abab8af28d", "llm", ("fastchat",)),
    # tutorials and courses (notebooks, some in Chinese)
    ("nn-zero-to-hero", "karpathy/nn-zero-to-hero", "73c3fcc741f0ec104ca850b1fb0df90e7e8d4cde", "tutorial", ()),
    ("mrdbourke-pytorch-deep-learning", "mrdbourke/pytorch-deep-learning",
     "baa27b691617461c173ecf3439793cd8cde74e13", "tutorial", _MRDBOURKE),
    ("nyu-dlsp20", "Atcold/NYU-DLSP20", "3049c83260ba05700e2ab9b7ed13cdbe5ddba0fd", "tutorial", ()),
    ("dive-into-dl-pytorch", "ShusenTang/Dive-into-DL-PyTorch", "09c8bacc08599eb86236551454ba43b82cb91498",
     "tutorial", ()),
    ("pytorch-handbook", "zergtant/pytorch-handbook", "e9a149200971933395c54e516e0e0fbeb62d384a", "tutorial", ()),
    ("learn-dl-with-pytorch", "L1aoXingyu/code-of-learn-deep-learning-with-pytorch",
     "ea24810dc26265e85e3eec34e1d091d21202d800", "tutorial", ()),
    ("nlp-tutorial", "graykode/nlp-tutorial", "d05e31ec81d56d70c1db89b99ab07e948f7ebc11", "tutorial", ()),
    ("image-captioning-tutorial", "sgrvinod/a-PyTorch-Tutorial-to-Image-Captioning",
     "cc9c7e2f4017938d414178d3781fed8dbe442852", "tutorial", ()),
    ("llms-from-scratch", "rasbt/LLMs-from-scratch", "28c65cdfbc3338e2e040016eea4b7fdf556e4d57", "tutorial", ()),
    # reinforcement learning
    ("stable-baselines3", "DLR-RM/stable-baselines3", "e05d2dbe6eda0acd0ef2e316e3e4065677add3eb", "rl",
     ("stable_baselines3",)),
    ("spinningup", "openai/spinningup", "038665d62d569055401d91856abb287263096178", "rl", ("spinup",)),
    ("minimalrl", "seungeunrho/minimalRL", "c8efed8481e3cd40e9739cfde220a55522555b57", "rl", ()),
    ("ppo-pytorch", "nikhilbarhate99/PPO-PyTorch", "728cce83d7ab628fe2634eabcdf3239997eb81dd", "rl", ()),
    ("td3", "sfujim/TD3", "34770ccdcb51df6f6c7d85c1ba7e40d71b940d16", "rl", ()),
    ("a2c-ppo-acktr-gail", "ikostrikov/pytorch-a2c-ppo-acktr-gail", "41332b78dfb50321c29bade65f9d244387f68a60",
     "rl", ()),
    ("deep-rl-algorithms", "p-christ/Deep-Reinforcement-Learning-Algorithms-with-PyTorch",
     "4835bac8557fdacff1735eca004e35ea5a4b7443", "rl",
     ("agents", "utilities", "exploration_strategies", "environments")),
    ("deeprl-shangtong", "ShangtongZhang/DeepRL", "c0968b5c046314af09944843cdf06f4100c6bb95", "rl", ("deep_rl",)),
    # a course: notebooks, and marimo notebooks (plain .py)
    ("practical-rl", "yandexdataschool/Practical_RL", "6f7fa8bc521af3d6bb47833c4670f44740f26aa6", "rl", ()),
    ("rainbow-is-all-you-need", "Curt-Park/rainbow-is-all-you-need", "e864f0be10d028aebcbfac1d48c219813f3d48f9",
     "rl", ()),
    # GANs
    ("stylegan2-rosinality", "rosinality/stylegan2-pytorch", "bef283a1c24087da704d16c30abc8e36e63efa0e", "gan", ()),
    ("stylegan2-ada", "NVlabs/stylegan2-ada-pytorch", "d72cc7d041b42ec8e806021a205ed9349f87c6a4", "gan", ()),
    ("biggan", "ajbrock/BigGAN-PyTorch", "98459431a5d618d644d54cd1e9fceb1e5045648d", "gan", ()),
    ("pytorch-wgan", "Zeleni9/pytorch-wgan", "7f5b52d638746c8b2abdd65dc26319f1de3be8cf", "gan", ()),
    ("generative-model-collections", "znxlwm/pytorch-generative-model-collections",
     "0d183bb5ea2fbe069e1c6806c4a9a1fd8e81656f", "gan", ()),
    ("lightweight-gan", "lucidrains/lightweight-gan", "efbec4570b7cb715e05058eccc518dc1a5753523", "gan", ()),
    ("wasserstein-gan", "martinarjovsky/WassersteinGAN", "f7a01e82007ea408647c451b9e1c8f1932a3db67", "gan", ()),
    # distributed launch scripts (DDP, apex, horovod, torchrun)
    ("pytorch-distributed", "tczhangzhi/pytorch-distributed", "cd12856420858b14e02873e7d5c8cc7bb5aab5b0", "ddp",
     ()),
    ("torchtitan", "pytorch/torchtitan", "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a", "ddp", ("torchtitan",)),
)
