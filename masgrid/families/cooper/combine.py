"""One file's edits from several gold patches, combined as one agent holding every feature would.

The scripted solo agent implements two (or more) features in one checkout. Applying the
gold patches one after another fails where a later hunk's context lines were changed by an
earlier one (the synthetic pair 1,2: one feature rewrites slugify's body line, the other
its signature and return line). So each patch's hunks are cut into change blocks (a run of
removed/added lines and the base lines it replaces, context dropped), the blocks of all
patches are laid out on the base file, and:

- blocks on disjoint base lines are all applied (adjacent lines included: git's merge calls
  those a conflict, but one author changing line 4 and line 5 is no conflict at all);
- blocks that insert at the same base position (both append a function at the end) are
  kept one after the other, in feature order: a combination, since neither removes
  anything the other needs;
- blocks that change the same base lines differently overlap: the span gets every
  feature's version one after the other (the union merge's resolution) and the overlap is
  reported, because such a file is not a combined implementation.

The result is reached through the tools as exact-string replacements (`edits`), each made
unique by the fewest context lines, computed on the text as it is when that edit runs.
Choices are documented in docs/tasks/cooperbench.md ("Scripted agents").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# the str_replace tool's own count (overlapping occurrences included): unique here means unique there
from masgrid.families.cooper.tools import _occurrences


@dataclass(frozen=True)
class Block:
    """Base lines [start, end) (0-based) replaced by `new` (whole lines with their newline)."""

    feature: int
    start: int
    end: int
    new: tuple[str, ...]

    @property
    def insertion(self) -> bool:
        return self.start == self.end


@dataclass
class Combined:
    """A file's combined text and what could not be combined."""

    text: str
    overlaps: list[str] = field(default_factory=list)  # "features 1, 2: base lines 4-6" (1-based)


def blocks_of(feature: int, hunks: Iterable[Sequence[str]], old_starts: Iterable[int]) -> list[Block]:
    """Change blocks of a file's hunks (lines with ' ', '-', '+' prefixes; 1-based old starts)."""
    out: list[Block] = []
    for lines, old_start in zip(hunks, old_starts):
        old_count = sum(1 for line in lines if line[:1] in (" ", "-"))
        pos = old_start if old_count == 0 else old_start - 1  # `-k,0`: insert after line k
        k = 0
        while k < len(lines):
            if lines[k][:1] == " ":
                pos, k = pos + 1, k + 1
                continue
            removed, added = 0, []
            while k < len(lines) and lines[k][:1] in ("-", "+"):
                if lines[k][0] == "-":
                    removed += 1
                else:
                    added.append(lines[k][1:] + "\n")
                k += 1
            out.append(Block(feature, pos, pos + removed, tuple(added)))
            pos += removed
    return out


def split_lines(text: str) -> list[str]:
    """Lines as git counts them: split at '\\n' only, each keeping it (str.splitlines also splits
    at form feeds and other separators, which would shift every line number after one)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _overlap(a: Block, b: Block) -> bool:
    if a.insertion and b.insertion:
        return a.start == b.start
    if a.insertion:
        return b.start < a.start < b.end
    if b.insertion:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def _clusters(blocks: list[Block]) -> list[list[Block]]:
    """Blocks grouped so that overlapping ones (transitively) share a group, in base order."""
    ordered = sorted(blocks, key=lambda b: (b.start, b.end, b.feature))
    groups: list[list[Block]] = []
    for block in ordered:
        if groups and any(_overlap(block, other) for other in groups[-1]):
            groups[-1].append(block)
        else:
            groups.append([block])
    return groups


def _version(base: list[str], lo: int, hi: int, blocks: list[Block]) -> list[str]:
    """Base lines [lo, hi) with one feature's blocks applied."""
    out, pos = [], lo
    for b in sorted(blocks, key=lambda b: (b.start, b.end)):
        out += base[pos:b.start] + list(b.new)
        pos = b.end
    return out + base[pos:hi]


def combine(base_text: str, blocks: list[Block]) -> tuple[list[tuple[int, int, list[str]]], Combined]:
    """The merged edits ([start, end) of base lines -> new lines, ascending) and the combined file."""
    base = split_lines(base_text)
    edits: list[tuple[int, int, list[str]]] = []
    overlaps: list[str] = []
    for group in _clusters(blocks):
        features = sorted({b.feature for b in group})
        lo, hi = min(b.start for b in group), max(b.end for b in group)
        # one feature: its version; several: each feature's version of the span, in feature order
        # (for insertions at one point that is every insertion; otherwise the union resolution)
        new = [line for f in features for line in _version(base, lo, hi, [b for b in group if b.feature == f])]
        edits.append((lo, hi, new))
        if len(features) > 1 and not all(b.insertion for b in group):
            where = f"base line {hi}" if hi == lo + 1 else f"base lines {lo + 1}-{hi}"
            overlaps.append(f"features {', '.join(map(str, features))}: {where}")
    text = list(base)
    for lo, hi, new in reversed(edits):
        text[lo:hi] = new
    return edits, Combined(text="".join(text), overlaps=overlaps)


def replacements(base_text: str, edits: list[tuple[int, int, list[str]]]) -> list[tuple[str, str]]:
    """(old_str, new_str) pairs that turn the base into the combined text when applied in order.

    Applied bottom-up, so the base lines above each edit are still untouched; each old_str
    gets context lines (first below, then above, alternating) until it occurs exactly once
    in the text as it is at that point."""
    cur = split_lines(base_text)
    out: list[tuple[str, str]] = []
    for lo, hi, new in reversed(edits):
        below = above = 0
        while True:
            old = "".join(cur[lo - above:hi + below])
            text = "".join(cur)
            if old and _occurrences(text, old) == 1:
                break
            if lo - above <= 0 and hi + below >= len(cur):
                break  # the whole file: unique by construction (or empty: a plain write)
            if (below <= above and hi + below < len(cur)) or lo - above <= 0:
                below += 1
            else:
                above += 1
        replacement = cur[lo - above:lo] + new + cur[hi:hi + below]
        out.append((old, "".join(replacement)))
        cur[lo - above:hi + below] = replacement
    return out
