from masgrid._private.envs.harness import parse_fenced, split_command


def test_every_block_in_textual_order_with_language_tags_discarded():
    text = "thinking...\n```bash\nreceive_messages\n```\nmore prose\n```\nwait\n```\n```python\nlist_agents\n```"
    assert parse_fenced(text) == ["receive_messages", "wait", "list_agents"]


def test_multi_line_write_file_payload_is_kept_verbatim():
    text = "```\nwrite_file plan/partition\nAgent-0: [1, 5]\n  indented line\n\n```"
    (block,) = parse_fenced(text)
    assert block == "write_file plan/partition\nAgent-0: [1, 5]\n  indented line"
    verb, args, body = split_command(block)
    assert (verb, args) == ("write_file", "plan/partition")
    assert body == "Agent-0: [1, 5]\n  indented line"


def test_no_blocks_empty_and_unclosed_fences():
    assert parse_fenced("") == []
    assert parse_fenced(None) == []
    assert parse_fenced("I will wait for others.") == []
    assert parse_fenced("```\nbroadcast_message hello") == []


def test_inline_block_without_newline_keeps_command():
    assert parse_fenced("```wait```") == ["wait"]
    # An opening line with a tag and the command on the next line is the usual form.
    assert parse_fenced("```text\nsubmit_result [1, 2]\n```") == ["submit_result [1, 2]"]


def test_non_greedy_blocks_do_not_merge():
    text = "```\nwait\n``` and ```\nreceive_messages\n```"
    assert parse_fenced(text) == ["wait", "receive_messages"]
