"""The code table: every rule, by code. Codes are permanent; never renumber one."""

from __future__ import annotations

from torchlint.rules.backward_under_no_grad import BackwardUnderNoGrad
from torchlint.rules.base import SEVERITIES, Rule
from torchlint.rules.codes import KNOWN_CODES
from torchlint.rules.chained_conversion import ChainedConversion
from torchlint.rules.checkpoint_without_use_reentrant import CheckpointWithoutUseReentrant
from torchlint.rules.conflicting_sampler_options import ConflictingSamplerOptions
from torchlint.rules.create_then_move import CreateThenMove
from torchlint.rules.cuda_amp_namespace import CudaAmpNamespace
from torchlint.rules.data_attribute_mutation import DataAttributeMutation
from torchlint.rules.data_index_on_scalar import DataIndexOnScalar
from torchlint.rules.dataloader_in_loop import DataloaderInLoop
from torchlint.rules.dataloader_without_main_guard import DataloaderWithoutMainGuard
from torchlint.rules.deprecated_torch_api import DeprecatedTorchApi
from torchlint.rules.discarded_conversion import DiscardedConversion
from torchlint.rules.distributed_sampler_without_set_epoch import DistributedSamplerWithoutSetEpoch
from torchlint.rules.float16_autocast_without_grad_scaler import Float16AutocastWithoutGradScaler
from torchlint.rules.float64_from_numpy import Float64FromNumpy
from torchlint.rules.forward_called_directly import ForwardCalledDirectly
from torchlint.rules.functional_dropout_always_on import FunctionalDropoutAlwaysOn
from torchlint.rules.global_rank_as_device import GlobalRankAsDevice
from torchlint.rules.grad_mode_not_called import GradModeNotCalled
from torchlint.rules.hardcoded_cuda import HardcodedCuda
from torchlint.rules.implicit_softmax_dim import ImplicitSoftmaxDim
from torchlint.rules.integer_requires_grad import IntegerRequiresGrad
from torchlint.rules.label_float_cast import LabelFloatCast
from torchlint.rules.leaf_inplace_update_outside_no_grad import LeafInplaceUpdateOutsideNoGrad
from torchlint.rules.legacy_loss_reduction_args import LegacyLossReductionArgs
from torchlint.rules.legacy_tensor_constructor import LegacyTensorConstructor
from torchlint.rules.log1p_expm1 import Log1pExpm1
from torchlint.rules.loss_accumulated_with_graph import LossAccumulatedWithGraph
from torchlint.rules.mean_reduction_under_ddp import MeanReductionUnderDdp
from torchlint.rules.missing_super_init import MissingSuperInit
from torchlint.rules.missing_zero_grad import MissingZeroGrad
from torchlint.rules.module_in_plain_container import ModuleInPlainContainer
from torchlint.rules.no_grad_in_collate_fn import NoGradInCollateFn
from torchlint.rules.non_public_collate_import import NonPublicCollateImport
from torchlint.rules.packed_sequence_unpacking import PackedSequenceUnpacking
from torchlint.rules.prefer_inference_mode import PreferInferenceMode
from torchlint.rules.requires_grad_typo import RequiresGradTypo
from torchlint.rules.save_whole_module import SaveWholeModule
from torchlint.rules.softmax_before_cross_entropy import SoftmaxBeforeCrossEntropy
from torchlint.rules.sync_in_training_loop import SyncInTrainingLoop
from torchlint.rules.syntax_error import SyntaxErrorRule
from torchlint.rules.torchvision_pretrained import TorchvisionPretrained
from torchlint.rules.train_mode_not_restored import TrainModeNotRestored
from torchlint.rules.unregistered_tensor_attribute import UnregisteredTensorAttribute
from torchlint.rules.unsafe_torch_load import UnsafeTorchLoad
from torchlint.rules.unused_noqa import UnusedNoqa
from torchlint.rules.variable_volatile import VariableVolatile
from torchlint.rules.worker_rng_duplication import WorkerRngDuplication
from torchlint.rules.zero_grad_between_backward_and_step import ZeroGradBetweenBackwardAndStep

SYNTAX_ERROR = SyntaxErrorRule

ALL_RULES: tuple[type[Rule], ...] = (
    SyntaxErrorRule,
    UnusedNoqa,  # TL001
    # Autograd and the training loop
    BackwardUnderNoGrad,  # TL101
    DataAttributeMutation,  # TL102
    MissingZeroGrad,  # TL103
    ZeroGradBetweenBackwardAndStep,  # TL104
    LeafInplaceUpdateOutsideNoGrad,  # TL105
    IntegerRequiresGrad,  # TL106
    LossAccumulatedWithGraph,  # TL107
    GradModeNotCalled,  # TL108
    RequiresGradTypo,  # TL109
    # dtype and device
    LabelFloatCast,  # TL201
    DiscardedConversion,  # TL202
    ChainedConversion,  # TL203
    Float64FromNumpy,  # TL204
    LegacyTensorConstructor,  # TL205
    UnregisteredTensorAttribute,  # TL206
    HardcodedCuda,  # TL207
    PackedSequenceUnpacking,  # TL208
    # Data loading
    WorkerRngDuplication,  # TL301
    DataloaderWithoutMainGuard,  # TL302
    DataloaderInLoop,  # TL303
    ConflictingSamplerOptions,  # TL304
    NoGradInCollateFn,  # TL305
    # Losses and numerics
    SoftmaxBeforeCrossEntropy,  # TL401
    FunctionalDropoutAlwaysOn,  # TL402
    ImplicitSoftmaxDim,  # TL403
    # Distributed
    MeanReductionUnderDdp,  # TL501
    DistributedSamplerWithoutSetEpoch,  # TL502
    GlobalRankAsDevice,  # TL503
    # Serialization and security
    UnsafeTorchLoad,  # TL601
    SaveWholeModule,  # TL602
    # Module structure
    ModuleInPlainContainer,  # TL701
    MissingSuperInit,  # TL702
    ForwardCalledDirectly,  # TL703
    TrainModeNotRestored,  # TL704
    # Performance and mixed precision
    CreateThenMove,  # TL801
    SyncInTrainingLoop,  # TL802
    PreferInferenceMode,  # TL803
    Float16AutocastWithoutGradScaler,  # TL804
    # Migrations: deprecated and removed APIs
    DeprecatedTorchApi,  # TL901
    TorchvisionPretrained,  # TL902
    CheckpointWithoutUseReentrant,  # TL903
    NonPublicCollateImport,  # TL904
    Log1pExpm1,  # TL905
    CudaAmpNamespace,  # TL906
    LegacyLossReductionArgs,  # TL907
    VariableVolatile,  # TL908
    DataIndexOnScalar,  # TL909
)

RULES_BY_CODE: dict[str, type[Rule]] = {r.code: r for r in ALL_RULES}
KNOWN_CODES.update(RULES_BY_CODE)
RULES_BY_NAME: dict[str, type[Rule]] = {r.name: r for r in ALL_RULES}

assert len(RULES_BY_CODE) == len(ALL_RULES), "duplicate rule code"
assert len(RULES_BY_NAME) == len(ALL_RULES), "duplicate rule name"
assert [r.code for r in ALL_RULES] == sorted(r.code for r in ALL_RULES), "keep the table in code order"
assert all(r.severity in SEVERITIES for r in ALL_RULES), "severity must be one of " + ", ".join(SEVERITIES)
