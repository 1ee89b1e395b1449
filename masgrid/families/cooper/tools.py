"""The tools a CooperBench agent acts with, as OpenAI function tools, and their execution.

The paper's agents (OpenHands) have file and terminal tools plus a messaging tool. We
offer seven, described in our own words (TOOL_SPECS): view, create_file, str_replace,
insert, bash, send_message and finish. `ToolBox` executes the first five for one agent;
messaging and finishing belong to the scheduler, which knows the teammates.

Choices where the paper is silent (also in docs/tasks/cooperbench-sandbox.md):
- the file tools run in this process, not in the sandbox, after resolving the path
  (symlinks included) and refusing anything outside the worktree, inside `.git`, not a
  regular file, not UTF-8 text, or larger than `max_file_bytes`. The agent's processes
  cannot change a path between our check and our use: under bubblewrap everything a bash
  call started dies with it (own PID namespace), and one agent's tool calls run in turn;
- `create_file` refuses an existing file (edits go through str_replace/insert, so an agent
  cannot silently wipe a teammate-visible file by recreating it);
- `bash` output shown to the model is cut to `bash_output_chars` (head and tail kept); a
  command killed for its time limit or a runaway output is a failed call (ok=False) whose
  first line says why;
- `changed_paths` lists what the file tools changed; bash's changes are not tracked per
  call (the evaluator diffs the whole worktree against the base anyway).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from masgrid.families.cooper.sandbox import Sandbox


class ToolLimits(BaseModel):
    """Bounds on what one tool call may read, write or show."""

    model_config = ConfigDict(extra="forbid")

    max_file_bytes: int = Field(1_000_000, gt=0, description="larger files are not opened")
    max_write_bytes: int = Field(1_000_000, gt=0, description="largest text one call may write")
    view_max_lines: int = Field(800, gt=0, description="lines shown when no view_range is given")
    dir_max_entries: int = Field(400, gt=0)
    bash_timeout_s: float = Field(120.0, gt=0, description="longest time limit a bash call may ask for")
    bash_output_chars: int = Field(20_000, gt=100, description="characters of output shown to the model")


class ToolResult(BaseModel):
    """The outcome of one tool call, as the model will read it."""

    ok: bool
    text: str
    tool: str
    changed_paths: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="sandbox limits not enforced for this call (bash)")


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ViewArgs(_Args):
    path: str = Field(description="File or directory, relative to the repository root (absolute paths inside it also work).")
    view_range: list[int] | None = Field(
        None, min_length=2, max_length=2,
        description="Optional [first, last] line numbers to show, 1-based and inclusive; last = -1 means to the end.")


class CreateFileArgs(_Args):
    path: str = Field(description="Path of the new file, relative to the repository root. Missing folders are created.")
    content: str = Field(description="The complete text of the new file.")


class StrReplaceArgs(_Args):
    path: str = Field(description="File to edit, relative to the repository root.")
    old_str: str = Field(description="Text to replace. It must occur exactly once in the file, whitespace included.")
    new_str: str = Field(description="Text to put in its place (may be empty to delete).")


class InsertArgs(_Args):
    path: str = Field(description="File to edit, relative to the repository root.")
    insert_line: int = Field(description="The new text goes after this line number; 0 puts it at the top.")
    text: str = Field(description="Text to insert, one or more whole lines.")


class BashArgs(_Args):
    command: str = Field(description="A bash command line, run in the repository root.")
    timeout_s: float | None = Field(None, gt=0, description="Optional time limit in seconds (capped by the run's limit).")


class SendMessageArgs(_Args):
    to: str = Field(description="The teammate to send to, by the name your instructions give them ('all' for everyone).")
    content: str = Field(description="The message. Name exact files and line ranges when you talk about edits.")


class FinishArgs(_Args):
    status: Literal["done", "partial", "blocked"] = Field(
        description="done: your part is complete; partial: some of it is; blocked: you cannot go on.")
    summary: str = Field(description="What you changed (files and line ranges) and anything left open.")


_TOOLS: dict[str, tuple[type[_Args], str]] = {
    "view": (ViewArgs, "Show a text file with line numbers (optionally only a range of lines), "
                       "or list a directory two levels deep."),
    "create_file": (CreateFileArgs, "Create a new text file with the given content. Fails if the file already exists."),
    "str_replace": (StrReplaceArgs, "Replace one exact piece of text in a file with new text. The old text must "
                                    "appear exactly once; copy it from `view` output without the line numbers."),
    "insert": (InsertArgs, "Insert lines into a file after a given line number."),
    "bash": (BashArgs, "Run a shell command in the repository root, in an isolated sandbox without network access. "
                       "Output is shortened when long; commands are stopped at their time limit."),
    "send_message": (SendMessageArgs, "Send a message to a teammate. They see it at their next step."),
    "finish": (FinishArgs, "End your work on this task with a final status and summary."),
}
#: names the scheduler executes itself (ToolBox refuses them)
SCHEDULER_TOOLS = ("send_message", "finish")


def _clean_schema(schema: Any) -> Any:
    """A pydantic JSON schema without titles and with nullable fields written plainly."""
    if isinstance(schema, dict):
        out = {k: _clean_schema(v) for k, v in schema.items() if k not in ("title", "default")}
        if "anyOf" in out and len(out["anyOf"]) == 2 and {"type": "null"} in out["anyOf"]:
            (inner,) = [s for s in out.pop("anyOf") if s != {"type": "null"}]
            out = {**inner, **out}
        return out
    if isinstance(schema, list):
        return [_clean_schema(v) for v in schema]
    return schema


def _spec(name: str) -> dict[str, Any]:
    model, description = _TOOLS[name]
    params = _clean_schema(model.model_json_schema())
    params["additionalProperties"] = False
    return {"type": "function", "function": {"name": name, "description": description, "parameters": params}}


TOOL_SPECS: list[dict[str, Any]] = [_spec(name) for name in _TOOLS]


def parse_arguments(name: str, arguments: Any) -> _Args | str:
    """The validated arguments of a call to `name`, or a one-line reason they are not valid."""
    if name not in _TOOLS:
        return f"unknown tool {name!r}; the tools are: {', '.join(_TOOLS)}"
    if not isinstance(arguments, dict):
        return f"arguments for {name} must be a JSON object, got {type(arguments).__name__}"
    try:
        return _TOOLS[name][0].model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        return f"bad arguments for {name}: {where}: {first['msg']}"


class ToolError(Exception):
    """A refused tool call; its message is the one line the model reads."""


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i:6d}\t{line}" for i, line in enumerate(lines))


def _occurrences(text: str, sub: str) -> int:
    """Occurrences of `sub` in `text`, overlapping ones included ("aa" is in "aaa" twice: ambiguous)."""
    count, at = 0, text.find(sub)
    while at != -1:
        count += 1
        at = text.find(sub, at + 1)
    return count


def _span(text: str) -> int:
    """How many lines after its first one a piece of text reaches (a final newline ends, not starts, one)."""
    return max(0, text.count("\n") - (1 if text.endswith("\n") else 0))


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head, tail = limit * 3 // 4, limit // 4
    return f"{text[:head]}\n[... {len(text) - head - tail} characters omitted ...]\n{text[-tail:]}"


class ToolBox:
    """Executes one agent's file and shell tools inside its worktree."""

    def __init__(self, worktree: Path, sandbox: Sandbox, limits: ToolLimits | None = None) -> None:
        self.root = Path(worktree).resolve()
        if not self.root.is_dir():
            raise ValueError(f"worktree does not exist: {worktree}")
        self.sandbox = sandbox
        self.limits = limits or ToolLimits()

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool call; every refusal is ok=False with a one-line reason."""
        if name in SCHEDULER_TOOLS:
            return ToolResult(ok=False, tool=name, text=f"{name} is handled by the scheduler, not by the workspace tools")
        args = parse_arguments(name, arguments)
        if isinstance(args, str):
            return ToolResult(ok=False, tool=name, text=args)
        try:
            return getattr(self, f"_{name}")(args)
        except ToolError as exc:
            return ToolResult(ok=False, tool=name, text=str(exc))
        except OSError as exc:  # e.g. a name too long, a full disk: the call failed, the run goes on
            return ToolResult(ok=False, tool=name, text=f"{name} failed: {exc.strerror or exc}")

    # -- paths -------------------------------------------------------------------------

    def _resolve(self, raw: str) -> tuple[Path, str]:
        """(resolved path, path relative to the root) for a path the agent named."""
        if not raw.strip() or "\0" in raw:
            raise ToolError("path is empty or contains a NUL character")
        given = Path(raw)
        candidate = given if given.is_absolute() else self.root / given
        lexical = Path(os.path.normpath(candidate))
        try:
            resolved = candidate.resolve()
        except (RuntimeError, OSError):  # a symlink loop, a name too long
            raise ToolError(f"{raw} cannot be resolved (a symbolic link loop or an invalid name)") from None
        if not resolved.is_relative_to(self.root):
            if lexical.is_relative_to(self.root):
                raise ToolError(f"{raw} is (or passes through) a symbolic link leading outside the repository")
            raise ToolError(f"{raw} is outside the repository ({self.root}); use paths inside it")
        rel = resolved.relative_to(self.root)
        if rel.parts[:1] == (".git",):
            raise ToolError(f"{raw} is inside .git, which the tools do not touch; use bash for git commands")
        return resolved, rel.as_posix() or "."

    def _read_text(self, path: Path, raw: str) -> str:
        try:
            st = path.stat()
        except FileNotFoundError:
            raise ToolError(f"{raw} does not exist") from None
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{raw} is not a regular file")
        if st.st_size > self.limits.max_file_bytes:
            raise ToolError(f"{raw} is {st.st_size} bytes, more than the {self.limits.max_file_bytes} the file tools "
                            "open; inspect it with bash (head, grep, sed -n)")
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            raise ToolError(f"{raw} looks binary; the file tools only handle text")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{raw} is not UTF-8 text; the file tools only handle UTF-8") from None

    def _write_text(self, path: Path, text: str, raw: str) -> None:
        data = text.encode("utf-8")
        if len(data) > self.limits.max_file_bytes:
            raise ToolError(f"{raw} would grow to {len(data)} bytes, past the {self.limits.max_file_bytes} "
                            "the file tools can open; nothing was written")
        path.write_bytes(data)

    def _check_size(self, text: str) -> None:
        if len(text.encode("utf-8")) > self.limits.max_write_bytes:
            raise ToolError(f"the text is longer than {self.limits.max_write_bytes} bytes")

    def _excerpt(self, text: str, first: int, last: int, rel: str) -> str:
        lines = text.split("\n")
        lo, hi = max(1, first - 3), min(len(lines), last + 3)
        return f"{rel} lines {lo}-{hi} after the edit:\n" + _numbered(lines[lo - 1:hi], lo)

    # -- tools -------------------------------------------------------------------------

    def _view(self, args: ViewArgs) -> ToolResult:
        path, rel = self._resolve(args.path)
        if path.is_dir():
            if args.view_range is not None:
                raise ToolError(f"{args.path} is a directory; view_range only applies to files")
            return ToolResult(ok=True, tool="view", text=self._listing(path, rel))
        lines = self._read_text(path, args.path).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        n = len(lines)
        if args.view_range is None:
            shown = lines[: self.limits.view_max_lines]
            text = _numbered(shown, 1)
            if n > len(shown):
                text += f"\n[{rel} has {n} lines; shown 1-{len(shown)}: pass view_range to see more]"
            return ToolResult(ok=True, tool="view", text=text if n else f"{rel} is empty")
        first, last = args.view_range
        if last == -1:
            last = n
        if not 1 <= first <= max(n, 1) or last < first:
            raise ToolError(f"view_range {args.view_range} does not fit {rel}, which has {n} lines")
        end = min(last, n, first + self.limits.view_max_lines - 1)  # the last line shown
        text = _numbered(lines[first - 1:end], first)
        if end < min(last, n):
            text += f"\n[shown {first}-{end} of the {min(last, n) - first + 1} lines asked for: at most {self.limits.view_max_lines} per call]"
        return ToolResult(ok=True, tool="view", text=text)

    def _listing(self, path: Path, rel: str) -> str:
        out: list[str] = []
        more = False

        def walk(folder: Path, depth: int, prefix: str) -> None:
            nonlocal more
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                return
            for entry in entries:
                if entry.name == ".git":
                    continue
                if len(out) >= self.limits.dir_max_entries:
                    more = True
                    return
                is_dir = entry.is_dir(follow_symlinks=False)
                out.append(f"{prefix}{entry.name}{'/' if is_dir else ''}{' (link)' if entry.is_symlink() else ''}")
                if is_dir and depth < 2:
                    walk(Path(entry.path), depth + 1, prefix + entry.name + "/")

        walk(path, 1, "")
        head = f"{rel}/ (two levels, .git hidden):"
        tail = [f"[listing stopped at {self.limits.dir_max_entries} entries]"] if more else []
        return "\n".join([head, *out, *tail])

    def _create_file(self, args: CreateFileArgs) -> ToolResult:
        path, rel = self._resolve(args.path)
        if path.exists() or path.is_symlink():
            raise ToolError(f"{args.path} already exists; change it with str_replace or insert")
        self._check_size(args.content)
        path.parent.mkdir(parents=True, exist_ok=True)
        path, rel = self._resolve(args.path)  # the folders just made are real folders inside the root
        self._write_text(path, args.content, args.path)
        n = args.content.count("\n") + (0 if args.content.endswith("\n") or not args.content else 1)
        return ToolResult(ok=True, tool="create_file", text=f"created {rel} ({n} lines)", changed_paths=[rel])

    def _str_replace(self, args: StrReplaceArgs) -> ToolResult:
        path, rel = self._resolve(args.path)
        text = self._read_text(path, args.path)
        if not args.old_str:
            raise ToolError("old_str is empty; to add text use insert")
        count = _occurrences(text, args.old_str)
        if count != 1:
            hint = "nothing matched: copy the text exactly from view" if count == 0 else \
                "include more surrounding lines so it matches once"
            raise ToolError(f"old_str occurs {count} times in {rel}; it must occur exactly once ({hint})")
        self._check_size(args.new_str)
        at = text.index(args.old_str)
        new = text[:at] + args.new_str + text[at + len(args.old_str):]
        self._write_text(path, new, args.path)
        first = text.count("\n", 0, at) + 1
        last = first + _span(args.new_str)
        old_last = first + _span(args.old_str)
        note = f"replaced lines {first}-{old_last} of {rel} (now lines {first}-{last})\n"
        return ToolResult(ok=True, tool="str_replace", text=note + self._excerpt(new, first, last, rel),
                          changed_paths=[rel])

    def _insert(self, args: InsertArgs) -> ToolResult:
        path, rel = self._resolve(args.path)
        text = self._read_text(path, args.path)
        lines = text.splitlines(keepends=True)
        if not 0 <= args.insert_line <= len(lines):
            raise ToolError(f"insert_line {args.insert_line} is out of range: {rel} has {len(lines)} lines (use 0-{len(lines)})")
        self._check_size(args.text)
        block = args.text if args.text.endswith("\n") else args.text + "\n"
        if args.insert_line == len(lines) and lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines.insert(args.insert_line, block)
        new = "".join(lines)
        self._write_text(path, new, args.path)
        first = args.insert_line + 1
        last = args.insert_line + block.count("\n")
        note = f"inserted lines {first}-{last} into {rel}\n"
        return ToolResult(ok=True, tool="insert", text=note + self._excerpt(new, first, last, rel), changed_paths=[rel])

    def _bash(self, args: BashArgs) -> ToolResult:
        if not args.command.strip():
            raise ToolError("command is empty")
        timeout = min(args.timeout_s or self.limits.bash_timeout_s, self.limits.bash_timeout_s)
        res = self.sandbox.run(args.command, cwd=self.root, timeout_s=timeout)
        body = res.stdout
        if res.stderr:
            body += ("\n" if body and not body.endswith("\n") else "") + "[stderr]\n" + res.stderr
        body = _shorten(body, self.limits.bash_output_chars)
        if res.killed == "timeout":
            first = f"command stopped: it ran past its {timeout:g} s time limit"
        elif res.killed == "output":
            first = f"command stopped: it wrote {res.stdout_bytes + res.stderr_bytes} bytes or more of output"
        else:
            first = f"exit code {res.exit_code}"
        return ToolResult(ok=res.killed is None, tool="bash", text=f"{first}\n{body}".rstrip("\n"), notes=res.notes)
