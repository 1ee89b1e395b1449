"""Text as it can travel: UTF-8 that every JSON encoder, HTTP client and Parquet writer takes.

A model reply can carry lone surrogates (a JSON body may escape any code point, valid or
not). Kept as they are, they fail the next request that replays the history and the
Parquet write of the events. They are escaped instead (`\\ud800`), so the original code
points stay readable in the record.
"""

from __future__ import annotations


def clean_text(value: str) -> str:
    """`value` if it is valid UTF-8 text; otherwise with unencodable code points escaped."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
