"""One-line summaries printed beside a run's tables: its utilisation, accuracy, and the stages of its calls."""

from __future__ import annotations

from l40sbench.report.cells import number


def utilisation_line(result: dict) -> str:
    """Training and inference FLOP/s as a share of the peak of the run's precision."""
    u = result.get("utilisation") or {}
    if not u.get("peak_gflops"):  # an ONNX file's run has a peak but nothing to divide by it: the counter says why
        return f"utilisation: - ({u.get('flop_counter') or 'no peak in this record'})"

    def part(name: str) -> str:
        share = u.get(name)
        if share is None:
            return f"{name} -"
        return f"{name} {100 * share:.1f} % ({u[name + '_achieved_gflops']:.1f} GFLOP/s)"

    train = u.get("train_gflops_per_image")  # records before training was counted from the step lack it
    convention = u["train_flops_per_image"]
    how = ("nothing trained" if not convention else f"training counted by {convention.removeprefix('counted: ')}"
           if convention.startswith("counted: ") else f"training counted as {convention}")
    return (f"utilisation of the {u['peak']} peak ({u['peak_gflops']:.1f} GFLOP/s): {part('train')}, "
            f"{part('inference')}; {u['forward_gflops_per_image']:.4g} GFLOP per image forward, "
            + (f"{train:.3f} training, " if train else "") + how)


def accuracy_lines(result: dict) -> str:
    """Test accuracy (classification) or COCO mAP with per-class AP@0.5 (detection)."""
    accuracy = result.get("accuracy") or {}
    if result["task"] == "classify":
        return f"test accuracy: {number(accuracy.get('test_accuracy'), 4)}"
    per_class = ", ".join(f"{k} {number(v)}" for k, v in (accuracy.get("per_class_ap_50") or {}).items())
    stages = (result.get("inference") or {}).get("stages_mean_ms") or {}
    lines = [f"COCO mAP@[.5:.95] {number(accuracy.get('map_50_95'))}  mAP@.5 {number(accuracy.get('map_50'))}",
             f"AP@.5 per class: {per_class or '-'}"]
    if stages:
        lines.append("inference stages (mean ms, timed in rotation): "
                     + ", ".join(f"{k} {number(v)}" for k, v in stages.items()))
    notes = result.get("notes") or {}
    if "serving_over_model" in notes:
        lines.append(f"serving / bare model call: {number(notes['serving_over_model'])}  "
                     f"preprocess share: {100 * notes['preprocess_share']:.1f} %")
    if "export_dir" in notes:
        lines.append(f"SavedModel: {notes['export_dir']} (signature serving_default)")
    return "\n".join(lines)


def stages_line(result: dict) -> str:
    """A detector file's host stages around its call (runtimes.staged), each one's mean as Ultralytics prints
    them, or "" where its format has none."""
    stages = (result.get("inference") or {}).get("stages_mean_ms") or {}
    if "postprocess" not in stages:
        return ""
    return ("a call's stages (mean ms an image, warm-up excluded): "
            + ", ".join(f"{name} {stages[name]:.3f}" for name in ("preprocess", "inference", "postprocess")))


def model_lines(result: dict) -> str:
    """What `infer --model`'s summary says of the file's run beside its table: utilisation, then its stages."""
    return "\n".join(line for line in (stages_line(result), utilisation_line(result)) if line)


def file_to_label_line(result: dict) -> str:
    """classify's way from an image file to its label beside the model's call alone (its stages' means), or ""
    where the run timed none (a TFDS set has no files)."""
    stages = (result.get("inference") or {}).get("stages_mean_ms") or {}
    if "file_to_label" not in stages:
        return ""
    return (f"file to label: {stages['file_to_label']:.3f} ms an image (read and decode {stages['decode']:.3f}, "
            f"resize {stages['resize']:.3f}, then the model's call with its preprocessing, and argmax); the model's "
            f"call alone: {stages['model']:.3f} ms (the figure above)")

