"""The one registry of tasks: a name and the module whose `TASK` implements core.task.Task.

The registry names the module only, so listing tasks imports no framework.
"""

from __future__ import annotations

import importlib

from l40sbench.core.registry import Registry
from l40sbench.core.task import Task

TASKS: Registry[str] = Registry("task")
TASKS.register("classify", "l40sbench.classify.task")
TASKS.register("detect", "l40sbench.detect.task")


def load_task(name: str) -> Task:
    """The task registered as `name` (UserError: none is)."""
    return importlib.import_module(TASKS.get(name)).TASK
