"""`study`: the studies as plans of ordinary runs, run, resumed and judged beside the published rows."""
