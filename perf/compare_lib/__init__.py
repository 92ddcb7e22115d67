# SPDX-License-Identifier: Apache-2.0
"""Helpers of perf/compare: the plan, running tools, medians, targets, tables and plot."""
