"""Detection bases: one registry entry per Model Garden experiment.

Each entry starts from a Model Garden experiment factory config and changes
only what the seed protocol fixes (input size, classes, batch, data paths) and
what makes it the TF1 zoo model it stands for (the backbone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from l40sbench.core.registry import Registry


@dataclass(frozen=True)
class DetectorSpec:
    """A detector and the settings that travel with it.

    Attributes:
      name: registry key, as given to --base.
      experiment: Model Garden experiment factory key the config starts from.
      task: "retinanet" or "maskrcnn" (Model Garden's task family).
      architecture: what the model is, for the result's `model` block.
      max_level: the coarsest feature level (stride 2**max_level): the input must be at least that
        many pixels, or that level has no cell and the anchors do not fit.
      customize: changes applied to the factory config (backbone swap).
    """

    name: str
    experiment: str
    task: str
    architecture: str
    max_level: int
    customize: Callable[[object], None] = lambda config: None

    @property
    def min_size(self) -> int:
        return 2**self.max_level


# The TF1 zoo's Faster R-CNN configs: 300 proposals from the RPN, 64 regions
# per image sampled for the second stage in training (Model Garden: 1000 and
# 512). The second stage's four 3x3 convolutions run once per region, so the
# Model Garden defaults make it the whole cost of a step.
TF1_PROPOSALS = 300
TF1_SECOND_STAGE_BATCH = 64


def _tf1_second_stage(config) -> None:
    model = config.task.model
    model.roi_generator.num_proposals = TF1_PROPOSALS
    model.roi_generator.test_num_proposals = TF1_PROPOSALS
    model.roi_sampler.num_sampled_rois = TF1_SECOND_STAGE_BATCH


def _inception_v2_backbone(config) -> None:
    from l40sbench.detect.inception_v2 import Backbone, InceptionV2Config

    _tf1_second_stage(config)
    config.task.model.backbone = Backbone(type="inception_v2", inception_v2=InceptionV2Config())
    config.task.model.max_level = 6  # FPN adds level 6 above the backbone's level 5


DETECTORS: Registry[DetectorSpec] = Registry("detector")

for _spec in (
    DetectorSpec(
        "ssd_resnet50_fpn", "retinanet_resnetfpn_coco", "retinanet",
        "RetinaNet: ResNet-50 v1 backbone, FPN levels 3-7, focal loss (the TF1 zoo's SSD ResNet50 V1 FPN)", 7,
    ),
    DetectorSpec(
        "faster_rcnn_resnet50", "fasterrcnn_resnetfpn_coco", "maskrcnn",
        "Faster R-CNN (Mask R-CNN without mask head): ResNet-50 backbone, FPN levels 2-6 "
        "(the TF1 zoo model had no FPN; Model Garden's single-level anchors cannot span its four octaves); "
        "TF1's 300 proposals and 64 sampled regions per image", 6,
        _tf1_second_stage,
    ),
    DetectorSpec(
        "faster_rcnn_inception_v2", "fasterrcnn_resnetfpn_coco", "maskrcnn",
        "Faster R-CNN (Mask R-CNN without mask head): Inception v2 (BN-Inception) backbone from "
        "shared/specs, FPN levels 2-6; TF1's 300 proposals and 64 sampled regions per image", 6,
        _inception_v2_backbone,
    ),
    # Model Garden's own experiments as it registers them, its defaults untouched (only the protocol's input
    # size, classes, batch and data change): a user's "how fast is Model Garden's RetinaNet here".
    DetectorSpec(
        "retinanet_resnetfpn_coco", "retinanet_resnetfpn_coco", "retinanet",
        "Model Garden's retinanet_resnetfpn_coco as registered: RetinaNet, ResNet-50 backbone, FPN levels 3-7", 7,
    ),
    DetectorSpec(
        "fasterrcnn_resnetfpn_coco", "fasterrcnn_resnetfpn_coco", "maskrcnn",
        "Model Garden's fasterrcnn_resnetfpn_coco as registered: Faster R-CNN, ResNet-50 backbone, FPN levels 2-6, "
        "its 1000 proposals and 512 sampled regions per image", 6,
    ),
):
    DETECTORS.register(_spec.name, _spec)
STUDIED = ("faster_rcnn_inception_v2", "faster_rcnn_resnet50", "ssd_resnet50_fpn")  # the seed study's three


def experiment_config(
    spec: DetectorSpec,
    *,
    num_classes: int,
    image_size: int,
    batch_size: int,
    train_path: str,
    eval_path: str,
    init_checkpoint: str | None = None,
):
    """The Model Garden ExperimentConfig for one run (num_classes excludes background)."""
    from official.core import exp_factory

    import l40sbench.detect.inception_v2  # noqa: F401  (registers the backbone builder)

    config = exp_factory.get_exp_config(spec.experiment)
    task = config.task
    spec.customize(config)
    task.model.num_classes = num_classes + 1  # class 0 is background
    task.model.input_size = [image_size, image_size, 3]
    task.init_checkpoint = init_checkpoint
    task.init_checkpoint_modules = "all" if init_checkpoint else task.init_checkpoint_modules
    task.annotation_file = None
    for data, path, training in ((task.train_data, train_path, True), (task.validation_data, eval_path, False)):
        data.input_path = path
        data.global_batch_size = batch_size if training else 1
        data.dtype = "float32"
        data.shuffle_buffer_size = 256
    if hasattr(task.model.norm_activation, "use_sync_bn"):
        task.model.norm_activation.use_sync_bn = False
    config.runtime.mixed_precision_dtype = "float32"
    return config
