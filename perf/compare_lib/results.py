# SPDX-License-Identifier: Apache-2.0
"""Measurements of all rounds, and their medians: what the table, targets, CSV and plot read."""

import statistics
from collections import defaultdict

from .plan import MPI_BEST, MPI_RUNS

PLACES = ("out_of_place", "in_place")
METRICS = ("time_us", "algbw_gbps", "busbw_gbps")


class Results:
    def __init__(self, place="out_of_place"):
        self.place = place  # the one the table, ratios and targets use
        self.records = []  # one dict per (round, contender, collective, ranks, size, place)
        self._samples = defaultdict(list)  # key -> list of record dicts
        self.bounds = defaultdict(list)  # tool name -> list of its JSON dicts, one per round

    def add(self, round_index, contender, job, outcome):
        for row in outcome.rows:
            for place in PLACES:
                values = row.get(place) or {}
                record = {"round": round_index, "contender": contender,
                          "collective": job.collective, "ranks": job.ranks,
                          "size": int(row["size"]), "place": place,
                          "time_us": values.get("time_us"),
                          "algbw_gbps": values.get("algbw_gbps"),
                          "busbw_gbps": values.get("busbw_gbps"),
                          "wrong": values.get("wrong")}
                self.records.append(record)
                key = (contender, job.collective, job.ranks, record["size"], place)
                self._samples[key].append(record)

    def add_bounds(self, name, values):
        self.bounds[name].append(values)

    def bound(self, name, key):
        """Median over rounds of one number a bounds tool reported, or None."""
        values = [entry[key] for entry in self.bounds.get(name, [])
                  if isinstance(entry.get(key), (int, float))]
        return statistics.median(values) if values else None

    def bound_text(self, name, key):
        values = [entry[key] for entry in self.bounds.get(name, [])
                  if isinstance(entry.get(key), (int, float))]
        if not values:
            return "not measured"
        spread = f" (rounds: {min(values):.2f}..{max(values):.2f})" if len(values) > 1 else ""
        return f"{statistics.median(values):.2f}{spread}"

    def sizes(self, collective, ranks):
        return sorted({key[3] for key in self._samples
                       if key[1] == collective and key[2] == ranks})

    def configurations(self):
        """(collective, ranks) pairs measured, all-reduce first, then by rank count."""
        order = {"all_reduce": 0, "all_gather": 1, "reduce_scatter": 2}
        pairs = {(key[1], key[2]) for key in self._samples}
        return sorted(pairs, key=lambda pair: (order.get(pair[0], 9), pair[1]))

    def median(self, contender, collective, ranks, size, place=None):
        """{'time_us', 'algbw_gbps', 'busbw_gbps', 'rounds', 'busbw_min', 'busbw_max', 'which'}
        over rounds, or None. For mpi-best: the OpenMPI run (as installed or tuned) with the
        lower median time at this size."""
        place = place or self.place
        if contender == MPI_BEST:
            candidates = [self.median(name, collective, ranks, size, place) for name in MPI_RUNS]
            candidates = [c for c in candidates if c is not None]
            return min(candidates, key=lambda c: c["time_us"]) if candidates else None
        samples = [r for r in self._samples.get((contender, collective, ranks, size, place), [])
                   if r["time_us"] is not None and r["busbw_gbps"] is not None]
        if not samples:
            return None
        result = {metric: statistics.median(r[metric] for r in samples) for metric in METRICS}
        busbws = [r["busbw_gbps"] for r in samples]
        result.update(rounds=len(samples), busbw_min=min(busbws), busbw_max=max(busbws),
                      which=contender)
        return result

    def ratio(self, numerator, denominator, collective, ranks, size):
        """busbw(numerator) / busbw(denominator) (= time(denominator) / time(numerator)): above
        1 the numerator is faster. None if either is missing."""
        top = self.median(numerator, collective, ranks, size)
        bottom = self.median(denominator, collective, ranks, size)
        if top is None or bottom is None or top["time_us"] <= 0:
            return None
        return bottom["time_us"] / top["time_us"]

    def wrong_records(self):
        return [r for r in self.records if r["wrong"]]
