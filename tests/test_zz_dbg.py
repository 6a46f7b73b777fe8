import sys
sys.path.insert(0, "/work/main/tests")
import test_index as T
from test_index import *

def test_dbg(tmp_path, notes, open_workspace):
    import random
    rng = random.Random(642899985)
    T._generate(notes, 240, rng)
    # no kills: incremental edits only
    ws = open_workspace(notes, index_dir=tmp_path/"a")
    ws.sync()
    for round_ in range(3):
        for i in range(round_, 240, 40):
            (notes / f"group{i % 7}" / f"note {i:03}.md").write_text(
                f"# Note {i}\n\nneedle edited{i}x{round_} lantern\n", encoding="utf-8")
        ws.sync()
    fresh = open_workspace(notes, index_dir=tmp_path/"b")
    fresh.sync()
    for w in (ws, fresh):
        print([(h.path, h.lexical_score) for h in w.search("edited41x1 lantern", k=4, mode="lexical")])
    assert 0
