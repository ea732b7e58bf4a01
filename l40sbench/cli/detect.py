"""`detect`: fine-tune a Model Garden detector; time training and per-image inference; COCO mAP."""

from __future__ import annotations

from pathlib import Path

from l40sbench.cli import input_flags
from l40sbench.cli.common import make_config
from l40sbench.cli.device_flags import add_device_flags, add_xla_flag, backend_flag, device_counts
from l40sbench.cli.run_flags import add_run_flags, add_runtime_flags, data_flags
from l40sbench.cli.runs import run_device_counts
from l40sbench.cli.values import finite, name_list


def add(subparsers) -> None:
    from l40sbench.detect.bases import DETECTORS

    p = subparsers.add_parser(
        "detect",
        help="fine-tune a Model Garden detector and time training and per-image inference",
        description=(
            "Object detection on a Pascal VOC set with TensorFlow Model Garden, timed the way the seed "
            "article did: per-epoch training time (an epoch is one pass over the training split), then the "
            "test images one at a time through the serving function (NMS included) with the first excluded "
            "as warm-up, and COCO mAP from pycocotools. Without --data a generated stand-in with the Kaggle "
            "fruit set's counts is used. Without a GPU and without --epochs, 1 epoch is trained and the "
            "article's 200-epoch time is projected."
        ),
    )
    p.add_argument("--base", default="ssd_resnet50_fpn",
                   help=f"detector: {', '.join(DETECTORS.names())}; the first three are the seed study's, the "
                        "*_coco ones Model Garden's experiments as it registers them (--list-bases describes each) "
                        "(default: ssd_resnet50_fpn)")
    p.add_argument("--list-bases", action="store_true",
                   help="list every --base with its Model Garden experiment, its smallest input and what it is, "
                        "and stop")
    p.add_argument("--data",
                   help="DIR with train_zip/train and test_zip/test (or train/, test/): JPEGs with same-named VOC .xml; "
                        "or tfds:NAME[:VERSION], a TensorFlow Datasets set with objects/bbox and objects/label")
    p.add_argument("--epochs", type=int, help="training epochs (default: 200, the article's; 1 when no GPU is visible)")
    p.add_argument("--batch-size", type=int, default=16, help="training batch size (default: 16)")
    p.add_argument("--image-size", type=int, default=640, help="square model input, a multiple of 32 (default: 640)")
    p.add_argument("--init-checkpoint", help="a Model Garden or backbone checkpoint to start from (default: random init)")
    p.add_argument("--classes", type=name_list,
                   help="comma-separated class names (default: the sorted names found in the annotations)")
    p.add_argument("--limit", type=int, help="at most N images per split (quick runs)")
    p.add_argument("--score-threshold", type=finite, default=0.05,
                   help="detections below this score are not evaluated (default: 0.05)")
    p.add_argument("--export", type=Path, metavar="DIR",
                   help="save the trained model as a SavedModel in DIR (new or empty), serving the signature that "
                        "was timed: uint8 image [1, H, W, 3] in, boxes, classes, scores, num_detections out")
    add_run_flags(p)
    add_xla_flag(p, "the training step (Model Garden's train_step: forward, losses, gradients, update); inference "
                    "times the serving signature as it is exported, without XLA")
    add_device_flags(p, hosts=True)
    add_runtime_flags(p)
    input_flags.add(p)
    p.set_defaults(func=run)


def list_bases() -> int:
    from l40sbench.core.text import format_table
    from l40sbench.detect.bases import DETECTORS, STUDIED

    specs = [DETECTORS.get(name) for name in DETECTORS.names()]
    print(format_table(("base", "Model Garden experiment", "smallest px", "study", "what it is"),
                       [(s.name, s.experiment, s.min_size, "seed study" if s.name in STUDIED else "-",
                         s.architecture) for s in specs]))
    return 0


def run(args) -> int:
    from l40sbench.detect.bases import DETECTORS
    from l40sbench.detect.config import DetectConfig

    if args.list_bases:
        return list_bases()

    classes = args.classes
    backend_flag(args, "detect")
    config = make_config(
        DetectConfig,
        base=args.base, **data_flags(args), epochs=args.epochs, batch_size=args.batch_size,
        image_size=args.image_size, init_checkpoint=args.init_checkpoint, classes=classes, limit=args.limit,
        output_dir=args.output_dir, seed=args.seed, score_threshold=args.score_threshold, precision=args.precision,
        export=args.export, strict=args.strict, xla=args.xla, worker_hosts=args.worker_hosts,
        task_index=args.task_index, runtimes=args.runtimes, runtime_precision=args.runtime_precision,
        input_threads=args.input_threads, bound=args.bound,
    )
    DETECTORS.get(config.base)
    return run_device_counts("detect", config, device_counts(args.devices))
