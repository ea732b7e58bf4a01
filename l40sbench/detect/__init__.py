"""Model Garden detection benchmark (work in progress: see issue 3)."""
