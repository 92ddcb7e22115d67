# SPDX-License-Identifier: Apache-2.0
"""The layer table (layers.txt) and what follows from it; shared by check_layers.py and
include_views.py."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, 'layers.txt')
ABOVE_LIBRARY = ('tools', 'perf', 'examples', 'python', 'tests')  # spelled from the repository root


class Table:
    def __init__(self, path=TABLE):
        self.library = {}  # unit -> library ('-' for the public header folder)
        self.allowed = {}  # unit -> set of units it may include ('*': any)
        with open(path) as table:
            for number, line in enumerate(table, 1):
                words = line.split('#', 1)[0].split()
                if not words:
                    continue
                if len(words) < 2:
                    raise ValueError(f'{path}:{number}: expected "unit library may-include..."')
                unit, library, *allowed = words
                self.library[unit] = library
                self.allowed[unit] = set(a for a in allowed if a != '-')
        for unit, allowed in self.allowed.items():
            for other in allowed - {'*'}:
                if other not in self.library:
                    raise ValueError(f'{path}: unit {unit} may include {other}, which is not a unit')
        cycle = self.find_cycle()
        if cycle:
            raise ValueError(f'{path}: the table allows a cycle: {" -> ".join(cycle)}')

    def find_cycle(self):
        """A cycle of may-include edges between units ('*' aside), as a list, or None: the
        floors must form a ladder, and so must the folders within a floor."""
        state, stack = {}, []

        def visit(unit):
            state[unit] = 'open'
            stack.append(unit)
            for other in sorted(self.allowed[unit] - {'*', unit}):
                if state.get(other) == 'open':
                    return stack[stack.index(other):] + [other]
                if other not in state:
                    found = visit(other)
                    if found:
                        return found
            stack.pop()
            state[unit] = 'done'
            return None

        for unit in self.library:
            if unit not in state:
                found = visit(unit)
                if found:
                    return found
        return None

    def units(self):
        return list(self.library)

    def may_include(self, unit, other):
        allowed = self.allowed[unit]
        return other == unit or '*' in allowed or other in allowed

    @staticmethod
    def source_folder(unit):
        """The unit's folder, from the repository root."""
        if unit == 'include' or unit.split('/')[0] in ABOVE_LIBRARY:
            return unit
        return 'src/' + unit

    def unit_of(self, path):
        """The deepest unit holding `path` (from the repository root), or None."""
        best = None
        for unit in self.library:
            folder = self.source_folder(unit)
            if path.startswith(folder + '/') and (best is None or len(unit) > len(best)):
                best = unit
        return best

    def closure(self, units):
        """Every unit reachable from `units` through may-include edges (them included)."""
        seen, todo = set(), list(units)
        while todo:
            unit = todo.pop()
            if unit in seen:
                continue
            seen.add(unit)
            allowed = self.allowed[unit]
            todo.extend(self.units() if '*' in allowed else allowed)
        return seen
