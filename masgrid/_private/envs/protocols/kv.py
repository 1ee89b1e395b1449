"""Shared key-value store with file-system verbs, last writer wins (MAS-Bench E.4).

With `next_round_visibility` (SILO-Bench A.5, the SFS protocol) an agent's list/read
see the store as it was at the end of the previous round, overlaid with that agent's
own writes and deletes of the current round: A.4's "writes are immediately visible to
subsequent reads" holds for the writer, while other agents see them from round r + 1.

With an unreliable channel (docs/channel.md) each `write_file` is one message from its
writer to the store: a lost write never reaches it (the writer is told it wrote, as it cannot
know), a delayed one is applied at the start of round r + d, before any reply of that round,
a reordered one at the end of its round, after every other write of the round (delayed and
reordered: after the other writes due at the same round start), and a duplicated one is
applied again at the start of the round after its first application.
Deletes and the harness's submission files are not messages and always reach the store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from masgrid._private.envs.channel import STORE, ChannelNote
from masgrid._private.envs.harness import CommandError, CommandOutcome
from masgrid._private.envs.protocols import register_protocol
from masgrid._private.envs.protocols.base import Protocol, agent_name, format_answer

PREVIEW_CHARS = 120


@dataclass
class FileRow:
    id: int
    path: str
    content: str
    writer: int
    created: int
    updated: int


@register_protocol
class KVProtocol(Protocol):
    name = "kv"
    verbs = {
        "list_files": "_list",
        "read_file": "_read",
        "write_file": "_write",
        "delete_file": "_delete",
    }
    communication_verbs = frozenset({"list_files", "read_file", "write_file", "delete_file"})
    verbatim_verbs = frozenset({"write_file"})  # E.4: the value is every line after the key
    channel_support = True

    def reset(self) -> None:
        super().reset()
        self.files: dict[str, FileRow] = {}
        self._next_id = 1
        self._snapshot: dict[str, FileRow] = {}
        self._own: dict[int, dict[str, FileRow | None]] = {}
        #: channel writes waiting: (round due, reordered, writer, path, content), in the order they were sent
        self._held: list[tuple[int, bool, int, str, str]] = []
        self._end_of_round: list[tuple[int, str, str, bool]] = []  # reordered: (writer, path, content, replay)

    def begin_round(self, round_no: int) -> None:
        super().begin_round(round_no)
        if self._held:
            due = sorted((w for w in self._held if w[0] <= round_no), key=lambda w: w[1])  # reordered last
            self._held = [w for w in self._held if w[0] > round_no]
            for _, _, writer, path, content in due:
                self.upsert(path, content, writer)
        if self.options.next_round_visibility:
            self._snapshot = {path: replace(row) for path, row in self.files.items()}
            self._own = {}

    def visible_files(self, agent: int) -> dict[str, FileRow]:
        """The store as `agent` sees it now (see the module docstring)."""
        if not self.options.next_round_visibility:
            return self.files
        view = dict(self._snapshot)
        for path, row in self._own.get(agent, {}).items():
            if row is None:
                view.pop(path, None)
            else:
                view[path] = row
        return view

    def upsert(self, path: str, content: str, writer: int) -> FileRow:
        row = self.files.get(path)
        if row is None:
            row = FileRow(self._next_id, path, content, writer, self.round, self.round)
            self._next_id += 1
            self.files[path] = row
        else:
            row.content, row.writer, row.updated = content, writer, self.round
        if self.options.next_round_visibility:
            self._own.setdefault(writer, {})[path] = replace(row)
        return row

    def _list(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        prefix = args.strip()
        files = self.visible_files(agent)
        rows = sorted((r for r in files.values() if r.path.startswith(prefix)), key=lambda r: r.id)
        if not rows:
            return f"no files with prefix {prefix!r}" if prefix else "no files"
        return "\n".join(
            f"id={r.id} path={r.path} len={len(r.content)} updated={r.updated}" for r in rows
        )

    def _read(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        path = args.strip()
        if not path:
            raise CommandError("usage: read_file <key>")
        row = self.visible_files(agent).get(path)
        if row is None:
            raise CommandError(f"no such file: {path}")
        out.extra["read_other"] = row.writer != agent
        out.extra["peers"] = [row.writer] if row.writer != agent else []
        return f"content={row.content}"

    def _write(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        path = args.strip()
        if not path or " " in path:
            raise CommandError("usage: write_file <key> on the first line, the content on the following lines")
        if self.channel is None:
            self.upsert(path, body, agent)
        else:
            self._write_through_channel(agent, path, body, out)
        out.messages_sent = 1
        preview = body[:PREVIEW_CHARS].replace("\n", "\\n")
        return f"wrote {path} ({len(body)} chars) preview={preview}"

    def _write_through_channel(self, agent: int, path: str, body: str, out: CommandOutcome) -> None:
        assert self.channel is not None
        fate = self.channel.fate(agent, STORE)
        note = ChannelNote.empty()
        note.add(STORE, fate, self.round + fate.delay)
        out.extra["channel"] = note
        if fate.lost:
            return
        replay = fate.copies > 1
        if fate.delay:
            self._held.append((self.round + fate.delay, fate.reordered, agent, path, body))
            if replay:
                self._held.append((self.round + fate.delay + 1, False, agent, path, body))
        elif fate.reordered:
            self._end_of_round.append((agent, path, body, replay))
        else:
            self.upsert(path, body, agent)
            if replay:
                self._held.append((self.round + 1, False, agent, path, body))

    def close_round(self) -> None:
        super().close_round()
        for agent, path, body, replay in self._end_of_round:
            self.upsert(path, body, agent)
            if replay:
                self._held.append((self.round + 1, False, agent, path, body))
        self._end_of_round = []

    def _delete(self, agent: int, args: str, body: str, out: CommandOutcome) -> str:
        path = args.strip()
        if path not in self.visible_files(agent):
            raise CommandError(f"no such file: {path}")
        self.files.pop(path, None)
        self._own.setdefault(agent, {})[path] = None
        return f"removed {path}"

    def on_submit(self, agent: int, value: Any, out: CommandOutcome) -> str:
        path = f"{agent_name(agent)}_submission.txt"
        self.upsert(path, f"{agent_name(agent)} is offline and submitted {format_answer(value)}", agent)
        return f"wrote_file={path}"
