"""This machine's peak: the fastest rate its matmul reaches, per precision, measured in every run
(or once for a series of runs, through $L40SBENCH_PEAK_FILE).

Every utilisation figure is achieved FLOP/s over this peak, and every absolute
time in the suite is read beside it (machines of one kind differ by CPU
generation, so a time alone does not compare). A peak has to saturate the
device, so the measurement:

- sweeps the matmul size (512 to 4096 on a CPU, 4096 to 16384 on a GPU), every
  size, then measures the best size a second time;
- runs K calls back to back between two syncs, with nothing copied to the
  host inside the clock (core.timing.time_batches);
- keeps the best sample as the peak and the median beside it as the noise.

One peak per precision the device has: float32 always; bfloat16 on a CPU with
AVX512-BF16 or AMX, and on GPUs; float16 and TF32 on GPUs. A run is divided by
the peak of the precision it computes in (peak_for). A 3x3 convolution's rate
is kept as a second figure, and on a CPU whose
clock and core type are known, the theoretical peak (cores x GHz x FLOP per
cycle) is recorded too. The kernels are the run's backend's (l40sbench.backends), imported only when
a measurement runs.

The package: `measure` (the sweep and env.peak), `cpu` (the theoretical CPU
peak from /proc/cpuinfo), `cache` (one peak for a series of runs). Reading a
record's peak and the utilisation arithmetic are core.utilisation's.
"""
