"""`datasets stats`: per-split, per-class image counts and unreadable files of a data set."""

from __future__ import annotations

from pathlib import Path

from l40sbench.cli.common import Parser, log
from l40sbench.cli.run_flags import add_tfds_flags, data_flags


def add(subparsers) -> None:
    p = subparsers.add_parser("datasets", help="inspect data sets", description="Inspect data sets.")
    sub = p.add_subparsers(dest="action", required=True, parser_class=Parser)
    stats = sub.add_parser(
        "stats",
        help="per-split, per-class image counts and unreadable files",
        description="Print the article's dataset table (images per split and class) and list unreadable files.",
    )
    stats.add_argument(
        "--data",
        help="DIR: folder-per-class (train/<class>/, test/<class>/) or Pascal VOC (train_zip/train/*.jpg + .xml, "
             "or train/, test/); or tfds:NAME[:VERSION] (default: the stand-in of --task)",
    )
    add_tfds_flags(stats)
    stats.add_argument(
        "--task", choices=("classify", "detect"),
        help="which layout to read (default: VOC when the train folder holds .xml files, else folder-per-class)",
    )
    stats.set_defaults(func=_cmd_datasets_stats)


def _is_voc(root: Path) -> bool:
    from l40sbench.data.voc import SPLIT_DIRS

    return any(any((root / d).glob("*.xml")) for d in SPLIT_DIRS["train"] if (root / d).is_dir())


def _cmd_datasets_stats(args) -> int:
    from l40sbench.report import tables

    if args.data is not None and args.data.startswith("tfds:"):
        return _tfds_stats(args)
    args.data = data_flags(args)["data"]

    task = args.task or ("detect" if args.data is not None and _is_voc(args.data) else "classify")
    if task == "detect":
        from l40sbench.data import voc
        from l40sbench.detect.standin import ensure_standin as fruit_standin
        from l40sbench.detect.standin import standin_path as fruit_path

        root = args.data if args.data is not None else fruit_standin(fruit_path())
        splits = {split: voc.load_split(root, split, log=log) for split in ("train", "test")}
        counts = {split: voc.object_counts(a) for split, (a, _) in splits.items()}
        images = {split: len(a) for split, (a, _) in splits.items()}
        print(f"{root}{' (generated stand-in)' if args.data is None else ''}: objects per class")
        print(tables.dataset_table(counts, images))
        _print_unreadable([path for _, skipped in splits.values() for path in skipped])
        return 0

    from l40sbench.classify.standin import ensure_standin, standin_path
    from l40sbench.data import folders as data_mod

    root = args.data if args.data is not None else ensure_standin(standin_path())
    checked = data_mod.decode_layout(data_mod.scan(root), None)
    print(f"{root}{' (generated stand-in)' if args.data is None else ''}: images per class")
    print(tables.dataset_table(checked.counts))
    _print_unreadable(checked.skipped_files)
    return 0


def _tfds_stats(args) -> int:
    from l40sbench.data import tfds_source
    from l40sbench.report import tables

    ref = tfds_source.TfdsRef.parse(args.data, args.tfds_data_dir, args.tfds_splits)
    builder = tfds_source.open_builder(ref, log)
    splits = tfds_source.resolve_splits(builder, ref)
    task = args.task or ("detect" if "objects" in builder.info.features.keys() else "classify")
    counts, images = tfds_source.split_counts(builder, splits, task)
    print(f"{tfds_source.source_label(builder, ref, splits)}: {'objects' if task == 'detect' else 'images'} per class")
    print(tables.dataset_table(counts, images))
    print("\nunreadable files: not checked here for TFDS sets (classify and detect skip and list them)")
    return 0


def _print_unreadable(paths) -> None:
    if paths:
        print(f"\nunreadable files ({len(paths)}):")
        for path in paths:
            print(f"  {path}")
    else:
        print("\nunreadable files: none")
