"""Who knew whose data when a run's agents submitted, replayed from its command events."""

from masgrid._private.analysis.information import (SEND_VERBS, command_path, information_at_submission, ordered,
                                                   peers_of)

__all__ = ["SEND_VERBS", "command_path", "information_at_submission", "ordered", "peers_of"]
