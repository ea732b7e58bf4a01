#!/usr/bin/env bash
# The first GPU run in one command, one try (docs/gpu.md; docs/PERFORMANCE.md, "GPU runs"):
# on a machine with JAX and PyTorch and no TensorFlow,
#
#   WHEELS=build/gpu-wheels gpu/run.sh OUT_DIR     # the wheels: gpu/wheels.sh
#
# 1. preflight (gpu/preflight.py, about 10 s): every module, each backend's GPU, NVML, free memory,
#    the wheels' versions; one line per missing piece and exit 2 before any work is started;
# 2. the peer (gpu/peer.py): timm's inception_v3, legacy_xception, vgg19, resnet50 with
#    torch.utils.benchmark, then the suite's Keras models on jax and on torch, same batches and precisions;
# 3. `l40sbench study all` on jax, then on torch, each with --budget and a hard stop of its own;
# 4. the pack (gpu/pack.py): OUT_DIR gets gpu.md (the table for docs/PERFORMANCE.md and the
#    README), gpu.json (for gpu/runs/), records.tar.gz (every record, report and log of the run) and
#    run.txt (this console): 4 files, each far under the 16 MiB that comes back.
#
# Every part runs under `timeout` (SIGINT first, as Ctrl-C: what it measured is written; SIGKILL 15 s later),
# each part's share is cut to what the whole command's deadline TOTAL_S (default 460 s, inside the device
# tool's 8-minute plan) leaves after a 45 s reserve for the pack, and a part with under 10 s left is not
# started: the command ends by TOTAL_S whatever fails, and the pack still runs. The shares, in seconds:
# PEER_S (default 180: timm 2/5, each Keras backend 3/10), JAX_S (140), TORCH_S (100); each study's --budget
# leaves its 5 % + 30 s grace inside its share. PARTS="peer" or "studies" runs one of the two; BACKENDS
# (default "jax torch") names the Keras backends (BACKENDS=torch where jax's CUDA plugin fails). WORK_DIR holds
# the studies' folders (default: a new folder under TMPDIR); nothing is fetched from the network; l40sbench
# runs from this checkout (PYTHONPATH), not installed, so TensorFlow is never needed. PYTHON picks the
# interpreter (default python3). GPU_RUN_TINY=1 is the CPU rehearsal (tests/test_gpu_run.py): --quick studies,
# one small peer model, a missing GPU or NVML only noted, only the backends and peer that import here, and
# longer shares, PEER_S 600 and 420 s per study (PEER_ARGS replaces its peer arguments).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/results/gpu-run-$(date -u +%Y%m%dT%H%M%SZ)}"
python="${PYTHON:-python3}"
tiny="${GPU_RUN_TINY:-}"
mkdir -p "$out" && out="$(cd "$out" && pwd)" || { echo "gpu_run: cannot write $out" >&2; exit 2; }
work="${WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/l40sbench-gpu-XXXXXX")}"
mkdir -p "$work" && work="$(cd "$work" && pwd)"
exec > >(tee "$out/run.txt") 2>&1  # the console comes back too
started=$SECONDS
log() { echo "gpu_run [$((SECONDS - started)) s]: $*"; }
parts="$work/parts.tsv"
: > "$parts"

if [ -n "${WHEELS:-}" ]; then
  log "installing the wheels in $WHEELS into $work/site (no network) ..."
  "$python" -m pip install --quiet --no-index --no-deps --disable-pip-version-check --target "$work/site" \
    "$WHEELS"/*.whl || { echo "gpu_run: the wheels in $WHEELS do not install with $python" >&2; exit 2; }
  export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
export L40SBENCH_PEAK_FILE="$work/peak.json"  # one peak per backend for every part of this run

imports() { "$python" -c "import $1" >/dev/null 2>&1; }
if [ -n "$tiny" ]; then  # the rehearsal: what imports here
  backends=() && for b in jax torch; do imports "$b" && backends+=("$b"); done
  peer="" && imports torch && imports timm && peer=1
  preflight_flags=(--cpu-ok)
  peer_args=(--models resnet50 --batches 2,1 --image-size 64 --min-run-time 0.2 --warmup 1)
  [ -n "${PEER_ARGS:-}" ] && read -r -a peer_args <<< "$PEER_ARGS"  # a rehearsal's own peer arguments
else
  backends=(${BACKENDS:-jax torch}) && peer=1 && preflight_flags=() && peer_args=()
fi
if [ ${#backends[@]} -eq 0 ]; then
  echo "gpu_run: neither jax nor torch imports with $python" >&2
  exit 2
fi
# Keras reads KERAS_BACKEND when first imported and defaults to tensorflow, which is not there: set it first.
export KERAS_BACKEND="${backends[0]}"

total_s="${TOTAL_S:-$([ -n "$tiny" ] && echo 1200 || echo 460)}"  # the whole command's deadline
reserve=45  # kept for the pack and a last part's SIGKILL grace
# within SHARE: the share, cut to what the command's deadline leaves after the reserve.
within() { local left=$((total_s - (SECONDS - started) - reserve)); echo $(( $1 < left ? $1 : left )); }
# part NAME SECONDS COMMAND...: runs under a hard stop and notes how it ended (exit 124: stopped at its share);
# one that the command's deadline leaves under 10 s for is not started, and noted so.
part() {
  local name="$1" limit="$2" at=$SECONDS code
  shift 2
  if [ "$limit" -lt 10 ]; then
    printf '%s\t%s\t%s\t%s\n' "$name" "deadline" 0 "$limit" >> "$parts"
    log "$name: not started: the command's deadline (TOTAL_S=$total_s) leaves no time for it"
    return
  fi
  log "$name: up to ${limit} s: $*"
  timeout --signal=INT --kill-after=15 "$limit" "$@"
  code=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$code" "$((SECONDS - at))" "$limit" >> "$parts"
  log "$name: exit $code after $((SECONDS - at)) s"
}

log "preflight (backends ${backends[*]}; peer ${peer:-not here}) ..."
timeout --kill-after=10 90 "$python" "$repo/gpu/preflight.py" --backends "$(IFS=,; echo "${backends[*]}")" ${peer:+--peer} \
  "${preflight_flags[@]}" > "$work/preflight.txt"
code=$?
cat "$work/preflight.txt"
if [ $code -ne 0 ]; then
  echo "gpu_run: the preflight found missing pieces (above): nothing was run" >&2
  exit 2
fi
timeout --kill-after=10 60 "$python" -m l40sbench env --backend "${backends[0]}" > "$work/env.txt" 2>&1

parts_wanted=" ${PARTS:-peer studies} "  # PARTS="peer" or "studies": one of the two alone
peer_s="${PEER_S:-$([ -n "$tiny" ] && echo 600 || echo 180)}"  # a rehearsal beside other work compiles slowly
if [[ "$parts_wanted" != *" peer "* ]]; then
  log "peer: not asked for (PARTS=$PARTS)"
elif [ -n "$peer" ]; then
  share="$(within $((peer_s * 2 / 5)))"
  part peer-timm "$share" "$python" "$repo/gpu/peer.py" timm --out "$work/peer/timm.json" \
    --deadline-s $((share - 20)) "${peer_args[@]}"
else
  log "peer: torch and timm do not both import here: no timm rows"
fi
for b in "${backends[@]}"; do
  [[ "$parts_wanted" == *" peer "* ]] || break
  share="$(within $((peer_s * 3 / 10)))"
  KERAS_BACKEND="$b" part "peer-keras-$b" "$share" "$python" "$repo/gpu/peer.py" keras \
    --out "$work/peer/keras-$b.json" --deadline-s $((share - 20)) "${peer_args[@]}"
done

# A study's default share: 140 s on jax, 100 s on torch. The rehearsal's is 420 s: its quick study takes about a
# minute on an idle 2-core host, 102 s beside three busy processes, and more than 140 s (the GPU run's share,
# which stopped it while it wrote its report) beside the test suite's other workers on a slow host.
study_s() { if [ -n "$tiny" ]; then echo 420; elif [ "$1" = jax ]; then echo 140; else echo 100; fi; }
for b in "${backends[@]}"; do
  [[ "$parts_wanted" == *" studies "* ]] || break
  var="$(echo "$b" | tr a-z A-Z)_S" && share="$(within "${!var:-$(study_s "$b")}")"
  study=(study all --backend "$b" --output-dir "$work/study-$b")
  if [ -n "$tiny" ]; then
    study+=(--quick --only classify-vgg19,synthetic-leadergpu)
  else
    study+=(--budget "$(( (share - 30) * 100 / 105 ))s")  # its grace (5 % + 30 s) inside the share
  fi
  KERAS_BACKEND="$b" part "study-$b" "$share" "$python" -m l40sbench "${study[@]}"
done

log "packing $work into $out ..."
timeout --kill-after=5 30 "$python" "$repo/gpu/pack.py" --work "$work" --out "$out" --seconds "$((SECONDS - started))"
code=$?
log "done in $((SECONDS - started)) s: $out/gpu.md"
exit $code
