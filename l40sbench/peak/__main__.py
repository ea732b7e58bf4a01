"""python -m l40sbench.peak: this machine's peaks as JSON, on $KERAS_BACKEND's kernels."""

import json

from l40sbench.backends import requested, select
from l40sbench.peak.measure import measure_env

chosen = requested(None)
select(chosen)
print(json.dumps(measure_env(backend=chosen), indent=2, sort_keys=True))
