"""One config-hash helper: every identity kept on disk is unchanged by moving it to core.digest.

The pinned values were computed by each call site's own ``json.dumps`` + ``sha256`` before the
move: resume markers, work folders, shard metadata and saved iterator states hold them, so a
different value would redo finished work or refuse a saved state.
"""

from __future__ import annotations

from pathlib import Path

from core.digest import json_hash
from core.pipeline import scope_hash
from core.tokenizer import tokenizer_hash
from dedupe.stages import work_dir
from flows.runtime.llama_stages import fingerprint
from loader.recipe import Recipe


def test_every_call_site_keeps_its_hash() -> None:
    assert scope_hash(["b.warc", "a.warc"], "0123456789abcdef") == "faa77bcafa926307"
    assert fingerprint("prev", {"b": 1, "a": [1, 2]}, Path("/x/ü")) == "141e96b8383d7530e0bc"
    assert work_dir(Path("out"), "cfg", [("s1", 3), ("s0", 1)]) == Path("out/_dedup/3644dbc9e8ea5104")  # type: ignore[list-item]
    recipe = Recipe.model_validate({"name": "mix", "components": [{"name": "web", "locations": ["t/"], "weight": 2.0}]})
    assert recipe.fingerprint() == "6b2c28644e076c0a"  # the fields added later, at their defaults, are left out
    later = Recipe.model_validate({"name": "mix", "components": [{"name": "web", "locations": ["t/"]}], "block_docs": 128})
    assert later.fingerprint() == "940865808e91228d"  # ...and hashed once set
    config = {"model": {"vocab": {"é": 0, "a": 1}}, "added_tokens": []}
    assert tokenizer_hash(config) == "c7e4dab57629476247a72d9afae5229fedf02ac5548a3a6d1239a006dd97c29f"
    assert json_hash(sorted(["k2", "k1"]), compact=False) == "f7b219945cdaafa4"  # commoncrawl's dedup group id


def test_the_json_form_is_part_of_the_identity() -> None:
    """Key order, spaces and escaping each change the hash: callers must keep the form they wrote with."""
    value = {"b": "ü", "a": 1}
    forms = {json_hash(value), json_hash(value, compact=False), json_hash(value, sort_keys=False),
             json_hash(value, ascii_only=False)}
    assert len(forms) == 4
    assert len(json_hash(value)) == 16 and len(json_hash(value, None)) == 64
