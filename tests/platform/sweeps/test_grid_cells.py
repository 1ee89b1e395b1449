"""Cell labels of a grid whose cells do not all have the same keys (model presets differ)."""

from masgrid._private.platform.sweeps.grid_cells import cell_labels


def test_a_key_only_some_cells_have_is_named_where_present():
    flats = {"a": {"agents": 2, "model.name": "big", "model.serving.layouts.tp4.pp": 2},
             "b": {"agents": 2, "model.name": "small"},
             "c": {"agents": 4, "model.name": "small"}}
    assert cell_labels(flats) == {"a": "agents=2 model.name=big model.serving.layouts.tp4.pp=2",
                                  "b": "agents=2 model.name=small", "c": "agents=4 model.name=small"}
    assert cell_labels({"only": {"agents": 2}}) == {"only": "(the only cell)"}
