#!/usr/bin/env bash
# The GPU run's kit lives in gpu/ (gpu/run.sh); this path stays because the GPU machine's page names it.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../gpu/run.sh" "$@"
