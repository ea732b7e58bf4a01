"""Where a command computes: --backend, --devices (N, all, a list, cpu), --xla, and the device choice made
before anything is measured (backends.gpu_gate)."""

from __future__ import annotations

from l40sbench.backends.cuda_driver import LIMIT_SECONDS
from l40sbench.cli.common import log
from l40sbench.cli.values import int_list, name_list
from l40sbench.errors import UserError


def add_backend_flag(p, note: str = "") -> None:
    from l40sbench.backends import NAMES

    p.add_argument("--backend", choices=NAMES, help="the Keras backend to compute on (default: $KERAS_BACKEND, else "
                                                   f"tensorflow){note}")



def backend_flag(args, task: str) -> str:
    """--backend, else $KERAS_BACKEND, else tensorflow; detection refuses any but tensorflow. Then the device
    choice (gate_devices): a backend that cannot use the GPUs the driver shows stops the command here."""
    from l40sbench.backends import requested

    name = requested(args.backend)
    if task == "detect" and name != "tensorflow":
        raise UserError(f"detect runs on the tensorflow backend only (Model Garden is TensorFlow's); got {name} "
                        f"from {'--backend' if args.backend else 'KERAS_BACKEND'}")
    gate_devices(args, name)
    return name



def gate_devices(args, backend: str) -> dict:
    """Before anything is measured: --devices cpu hides the GPUs from `backend`; otherwise a backend that sees
    none of the GPUs the CUDA driver shows stops the command in one line (backends.gpu_gate)."""
    from l40sbench.backends.gpu_gate import choose

    choice = choose(backend, cpu=getattr(args, "devices", None) == (CPU_DEVICES,))
    for line in choice.get("notices") or ():
        log(line)
    return choice



def keep_device_choice(args, saved: dict | None, folder) -> None:
    """--resume of a study or a sweep: the device choice it began with (gate_devices' choice, kept in its state)
    holds again, said in one line, so a study begun on the CPU on purpose does not resume on the GPU."""
    if (saved or {}).get("why") == "--devices cpu":
        args.devices = (CPU_DEVICES,)
        log(f"--resume {folder}: on the CPU, as it began (--devices cpu)")



CPU_DEVICES = "cpu"



# What every command that computes says of --devices cpu and of picking GPUs.
CPU_HELP = ("cpu: on the CPU on purpose, though the CUDA driver shows GPUs; the driver is then never asked. "
            f"Otherwise the driver is asked first, within {LIMIT_SECONDS:.0f} s (a stuck driver stops the command), and "
            "where it shows GPUs the backend cannot compute on (the build, the driver's age, a busy board, MIG, "
            "CUDA_VISIBLE_DEVICES hiding every one), the command stops before measuring and says why. "
            "CUDA_VISIBLE_DEVICES picks the GPUs a run may use")



def add_device_flags(p, hosts: bool) -> None:
    """--devices (and, where the pipeline runs across hosts, --worker-hosts and --task-index)."""
    p.add_argument("--devices", type=device_list, default=(1,), metavar="N|all|LIST|cpu",
                   help="train on N devices under tf.distribute.MirroredStrategy, the batch given per device "
                        "(global batch = batch x N): N GPUs, or N logical devices of the CPU where there is no "
                        "GPU (they share its cores); all: every GPU; a list such as 1,2,4 runs once per count "
                        f"and reports the scaling efficiency; {CPU_HELP}. Inference stays on one device "
                        "(default: 1)")
    if hosts:
        p.add_argument("--worker-hosts", type=name_list, default=(), metavar="HOST:PORT,...",
                       help="train across hosts with MultiWorkerMirroredStrategy: start the same command on every "
                            "host with the same list and its own --task-index; the chief (0) writes the record "
                            "(default: this host alone)")
        p.add_argument("--task-index", type=int, default=0, help="this host's index in --worker-hosts (default: 0)")



def add_xla_flag(p, what: str) -> None:
    """--xla, one spelling on every command that trains; `what` says what it compiles there."""
    p.add_argument("--xla", action="store_true", help=f"compile {what} with XLA (jit_compile) (default: off)")



def add_cpu_flag(p) -> None:
    """--devices for a command that computes on one device: the GPU where the backend can use it, or cpu."""
    p.add_argument("--devices", type=device_list, default=(1,), metavar="1|cpu",
                   help=f"1: one device, the first GPU where there is one, else the CPU; {CPU_HELP} (default: 1)")



def one_device(args) -> None:
    """add_cpu_flag's --devices: 1 or cpu."""
    if args.devices not in ((1,), (CPU_DEVICES,)):
        raise UserError(f"--devices takes 1 or cpu here. Received: {','.join(map(str, args.devices))}")



def device_list(text: str) -> tuple:
    return (text.strip(),) if text.strip() in ("all", CPU_DEVICES) else int_list(text)



def device_counts(values: tuple) -> tuple[int, ...]:
    """--devices as counts: `all` is every GPU (TensorFlow asked), or 1 where there is none; cpu is one."""
    if values == (CPU_DEVICES,):
        return (1,)
    if values != ("all",):
        if min(values) < 1:
            raise UserError(f"--devices must be at least 1. Received: {min(values)}")
        return tuple(values)
    from l40sbench.backends.tf_device import devices
    from l40sbench.core.devices import gpus as gpus_of

    gpus = len(gpus_of(devices()))
    if not gpus:
        log("--devices all: no GPU visible, so one device")
    return (gpus or 1,)
