"""Helpers of perf/compare: the plan, running tools, medians, targets, tables and plot."""
