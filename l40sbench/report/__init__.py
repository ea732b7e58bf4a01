"""Reports from result records: the studies' tables, report.md with its plots, and compare."""
