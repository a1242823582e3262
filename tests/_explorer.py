"""Shared by the explorer tests: small role dumps of untrained tiny models, their label files, and a
reader of an explorer page's data (what the page's script decodes)."""
import base64
import json
import re
import zlib

import numpy as np

from fairseq_tpr.analysis import run_capture

from _builders import build

KINDS = {"discrete": ("tp_transformer_d_tiny", ("role", "filler", "tpr", "role_attn", "attn")),
         "continuous": ("tp_transformer_tiny", ("role", "filler", "tpr", "attn"))}


def toy_dump(tmp_path, kind, n=24):
    """A dump of ``n`` reversal examples through an untrained tiny model of ``kind`` roles, saved to
    ``tmp_path/<kind>.npz`` (float32, as ``fairseq-tpr-roles dump`` writes); returns its path."""
    from test_roles_analysis import _Task, toy_data

    arch, comps = KINDS[kind]
    ds, d = toy_data(n=n)
    model, _, _ = build(arch, src_dict=d, tgt_dict=d)
    model.eval()
    dump = run_capture(model, _Task(d), ds, components=comps,
                       meta={"arch": arch, "split": "test", "checkpoint": f"{arch}.pt"})
    path = tmp_path / f"{kind}.npz"
    dump.save(str(path))
    return str(path)


def label_file(tmp_path, dump, side="encoder"):
    """One label per token (its symbol's parity: "even"/"odd") of each example of ``dump``, without </s>."""
    path = tmp_path / f"labels.{side}"
    rows = []
    for i in range(len(dump)):
        toks = dump.tokens(side, i, inputs=False)[:-1]
        rows.append(" ".join("even" if int(t[1:]) % 2 == 0 else "odd" for t in toks))
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def read_page(html_path):
    """(header, {name: numpy array}) of an explorer page, decoded as its script decodes them."""
    with open(html_path, encoding="utf-8") as f:
        page = f.read()
    meta = json.loads(re.search(r'<script id="meta" type="application/json">(.*?)</script>', page, re.S).group(1))
    packed = re.search(r'<script id="arrays" type="application/octet-stream">(.*?)</script>', page, re.S).group(1)
    buf = zlib.decompress(base64.b64decode(packed.strip()))
    arrays = {name: np.frombuffer(buf, dtype=dtype, count=count, offset=offset)
              for name, (dtype, offset, count) in meta["arrays"].items()}
    return meta, arrays
