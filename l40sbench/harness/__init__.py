"""Runs any task of the registry (classify, detect) the one way: placement, env and peak, every clock, the
record saved as it goes and on interrupt, utilisation, the runtimes tail, and `infer` on a finished run.

A task says what differs (its data, model, training step, probe and export: `task.Task`); everything a
figure depends on for being measured the same way happens here.
"""
