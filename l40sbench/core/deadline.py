"""A call in this process with a time limit: for a driver or NVML call that may hang (a stuck driver after an Xid
error never returns), made in a thread left behind where it does not answer."""

from __future__ import annotations

import threading


def within(seconds: float, call, *args):
    """call(*args), or TimeoutError where it has not returned within `seconds`: for a driver or NVML call made
    in this process (NVML's telemetry), in a thread left behind where it hangs (ctypes releases the GIL)."""
    box: list = []

    def run():
        try:
            box.append((True, call(*args)))
        except BaseException as exc:  # handed to the caller's thread
            box.append((False, exc))

    thread = threading.Thread(target=run, daemon=True, name="driver-call")
    thread.start()
    thread.join(seconds)
    if not box:
        raise TimeoutError(f"no answer within {seconds:.0f} s")
    done, value = box[0]
    if not done:
        raise value
    return value
