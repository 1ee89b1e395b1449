"""The scripted CooperBench agent: implements its feature's gold patch through the tools.

No model needed, so every merge path and the whole evaluation run in tests and demos.
One tool call per step, in this order:

- planning: (with teammates) one message naming the files and line ranges it will change,
  then `finish` with that as its plan;
- execution: `view` each file its patch touches; each hunk as an exact-string replacement
  (`str_replace` of the hunk's old lines by its new lines) or, for a new file, `create_file`;
  a deleted file through `bash` (`rm`); then (with messaging) one message announcing what
  it changed with the new line ranges; then `finish`.

The `conflicting` variant (cooper.policy=conflicting) also edits a partner's lines: at the
place where the partner's first hunk changes the file, it inserts a comment line of its
own, so the two branches change the same spot: the naive merge conflicts and the union
merge keeps both sides.

An agent holding several features (solo) edits a file that more than one of its patches
touch as their combination (combine.py): every change block of every patch applied where
they touch different base lines, and where two change the same lines both versions kept
one after the other. Such an overlap, or a file one feature deletes and another modifies,
is not a combined implementation: the agent then finishes with status `partial` and its
summary names the features, file and lines, so the run's row (`agents_not_done`) and its
`finish` event say so; no feature is dropped silently.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from masgrid.families.cooper.combine import blocks_of, combine, replacements
from masgrid.sdk.policies import ScriptedPolicy
from masgrid.sdk.tasks import AgentView

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_COMMENT = {".py": "#", ".sh": "#", ".rb": "#", ".toml": "#", ".yaml": "#", ".yml": "#", ".cfg": "#", ".txt": "#"}


class Hunk(BaseModel):
    old_start: int
    new_start: int
    new_count: int
    lines: list[str]  # with their ' ', '-', '+' prefixes

    @property
    def old_text(self) -> str:
        return "".join(line[1:] + "\n" for line in self.lines if line[:1] in (" ", "-"))

    @property
    def new_text(self) -> str:
        return "".join(line[1:] + "\n" for line in self.lines if line[:1] in (" ", "+"))


class FilePatch(BaseModel):
    path: str
    status: str  # modified | added | deleted
    hunks: list[Hunk]


def parse_patch(patch: str) -> list[FilePatch]:
    """A unified diff (git format) into files and hunks; other lines (index, mode) are skipped."""
    files: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    old_path = ""
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            current, hunk = None, None
        elif line.startswith("--- "):
            old_path = line[4:].strip()
        elif line.startswith("+++ "):
            new_path = line[4:].strip()
            status = "added" if old_path == "/dev/null" else "deleted" if new_path == "/dev/null" else "modified"
            path = old_path if status == "deleted" else new_path
            current = FilePatch(path=path[2:] if path[:2] in ("a/", "b/") else path, status=status, hunks=[])
            files.append(current)
        elif current is not None and (m := _HUNK.match(line)):
            hunk = Hunk(old_start=int(m.group(1)), new_start=int(m.group(3)),
                        new_count=int(m.group(4) if m.group(4) is not None else 1), lines=[])
            current.hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+"):
            hunk.lines.append(line)
        elif hunk is not None and line == "":
            hunk.lines.append(" ")  # a blank context line whose trailing space was stripped
    return files


def line_ranges(files: list[FilePatch]) -> str:
    """'path lines a-b, c-d; path2 (new file)': where a patch's changes sit on its own branch."""
    parts = []
    for f in files:
        if f.status == "added":
            parts.append(f"{f.path} (new file)")
        elif f.status == "deleted":
            parts.append(f"{f.path} (deleted)")
        else:
            spans = [f"{h.new_start}-{h.new_start + max(h.new_count, 1) - 1}" for h in f.hunks]
            parts.append(f"{f.path} lines {', '.join(spans)}")
    return "; ".join(parts)


def _intrusion(partner: list[FilePatch], own_paths: set[str]) -> dict[str, Any] | None:
    """The str_replace that puts a comment line where the partner's first hunk changes a file."""
    for f in partner:
        if f.status != "modified" or not f.hunks:
            continue
        lines = f.hunks[0].lines
        first = next((k for k, line in enumerate(lines) if line[:1] in ("+", "-")), None)
        if first is None or first == 0:
            continue
        context = [line[1:] for line in lines[:first]]
        changed = lines[first][1:]
        indent = changed[:len(changed) - len(changed.lstrip())]
        ext = "." + f.path.rsplit(".", 1)[-1] if "." in f.path else ""
        mark = _COMMENT.get(ext, "//")
        old = "".join(c + "\n" for c in context)
        new = old + f"{indent}{mark} scripted agent: touched here as well\n"
        return {"path": f.path, "old_str": old, "new_str": new}
    return None


def _single_calls(f: FilePatch) -> list[dict[str, Any]]:
    """One patch's change of one file: its hunks as exact replacements, a new file, or `rm`."""
    if f.status == "added":
        return [{"name": "create_file", "arguments": {"path": f.path, "content": "".join(h.new_text for h in f.hunks)}}]
    if f.status == "deleted":
        return [{"name": "bash", "arguments": {"command": f"rm -- {json.dumps(f.path)}"}}]
    return [{"name": "str_replace", "arguments": {"path": f.path, "old_str": h.old_text, "new_str": h.new_text}}
            for h in f.hunks]


class GoldPatchPolicy(ScriptedPolicy):
    """Plays one agent of a CooperBench run from its features' gold patches."""

    def __init__(self, view: AgentView, protocol: str, seed: int, patches: list[str], partner_patches: list[str],
                 conflicting: bool = False, features: list[int] | None = None,
                 read_base: Callable[[str], str] | None = None) -> None:
        """`features`: the feature id of each patch (for the summary); `read_base`: a file's
        text at the base commit, needed only when two of the patches touch one file."""
        super().__init__(view, protocol, seed)
        self.features = list(features) if features is not None else list(range(1, len(patches) + 1))
        self.owned = [(fid, f) for fid, p in zip(self.features, patches) for f in parse_patch(p)]
        self.files = [f for _, f in self.owned]
        self.partner = [f for p in partner_patches for f in parse_patch(p)]
        self.conflicting = conflicting
        self.read_base = read_base
        self.not_combined: list[str] = []  # what the execution script could not combine (solo)
        self.script = self._plan_script() if view.phase == 1 else self._execute_script()
        self.position = 0

    @property
    def talks(self) -> bool:
        p = self.view.params
        return self.view.n_agents > 1 and (self.view.phase == 1 or p.get("setting") == "coop")

    def _plan_script(self) -> list[dict[str, Any]]:
        ranges = line_ranges(self.files)
        plan = f"I will change {ranges}. I will not touch any other lines."
        calls: list[dict[str, Any]] = []
        if self.talks:
            calls.append({"name": "send_message", "arguments": {"to": "all", "content": plan}})
        return calls + [{"name": "finish", "arguments": {"status": "done", "summary": plan}}]

    def _execute_script(self) -> list[dict[str, Any]]:
        calls: list[dict[str, Any]] = []
        by_path: dict[str, list[tuple[int, FilePatch]]] = {}
        for fid, f in self.owned:
            by_path.setdefault(f.path, []).append((fid, f))
        for path, group in by_path.items():
            if any(f.status == "modified" for _, f in group):
                calls.append({"name": "view", "arguments": {"path": path}})
        for path, group in by_path.items():
            calls += self._file_calls(path, group) if len(group) > 1 else _single_calls(group[0][1])
        if self.conflicting:
            edit = _intrusion(self.partner, {f.path for f in self.files})
            if edit is not None:
                calls.append({"name": "str_replace", "arguments": edit})
        done = f"I changed {line_ranges(self.files)}."
        if self.not_combined:
            done += " Not combined: " + "; ".join(self.not_combined) + "."
        if self.talks:
            calls.append({"name": "send_message", "arguments": {"to": "all", "content": done}})
        status = "partial" if self.not_combined else "done"
        return calls + [{"name": "finish", "arguments": {"status": status, "summary": done}}]

    def _file_calls(self, path: str, group: list[tuple[int, FilePatch]]) -> list[dict[str, Any]]:
        """One file that several of the agent's patches touch, as their combination."""
        kinds = {f.status for _, f in group}
        ids = ", ".join(str(fid) for fid, _ in group)
        if kinds == {"deleted"}:
            return _single_calls(group[0][1])
        if "deleted" in kinds:
            gone = ", ".join(str(fid) for fid, f in group if f.status == "deleted")
            self.not_combined.append(f"feature(s) {gone} delete {path}, which feature(s) "
                                     f"{', '.join(str(fid) for fid, f in group if f.status != 'deleted')} "
                                     "modify: the file was kept and modified")
            group = [(fid, f) for fid, f in group if f.status != "deleted"]
            if len(group) == 1:
                return _single_calls(group[0][1])
        blocks = [b for fid, f in group for b in blocks_of(fid, [h.lines for h in f.hunks],
                                                            [h.old_start for h in f.hunks])]
        if "added" in kinds:  # every one of them creates the file
            _, merged = combine("", blocks)
            self.not_combined.append(f"features {ids} each create {path}: their contents were joined one after "
                                     "the other")
            return [{"name": "create_file", "arguments": {"path": path, "content": merged.text}}]
        if self.read_base is None:
            raise ValueError(f"scripted agent: {path} is changed by features {ids}; combining them needs the "
                             "file's base text (read_base)")
        base = self.read_base(path)
        edits, merged = combine(base, blocks)
        self.not_combined += [f"{path}, {o}: the same lines changed differently, both versions kept one after "
                              "the other" for o in merged.overlaps]
        if not base:  # an empty file has no text to replace: write it whole
            command = f"printf %s {shlex.quote(merged.text)} > {shlex.quote(path)}"
            return [{"name": "bash", "arguments": {"command": command}}]
        return [{"name": "str_replace", "arguments": {"path": path, "old_str": old, "new_str": new}}
                for old, new in replacements(base, edits)]

    def next_call(self, observations: list[str]) -> dict[str, Any] | None:
        """The next tool call of the script (None once it has finished)."""
        if self.position >= len(self.script):
            return None
        call = self.script[self.position]
        self.position += 1
        return call

    def act(self, observations: list[str]) -> Any:  # ToolReply
        """One tool call a step; after `finish`, a reply without calls (the loop has ended by then)."""
        from masgrid.sdk.models import ToolCall, ToolReply

        call = self.next_call(observations)
        if call is None:
            return ToolReply(text="(the script has finished)")
        return ToolReply(tool_calls=[ToolCall.of(call["name"], call["arguments"])])
