"""Timing, statistics, result records and the environment fingerprint.

Nothing here imports a deep-learning framework at module level: callers pass
in the clock and the device-sync function, so the arithmetic is testable with
a fake clock.
"""
