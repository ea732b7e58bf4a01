"""Tables (and later plots) from result records."""
