"""The explorer page of ``fairseq-tpr-roles html`` in a real browser: Debian's Chromium, headless,
driven through its ChromeDriver by Selenium (:mod:`fairseq_tpr.analysis.headless`; nothing is
downloaded). The page loads with no console error, every selector changes what is drawn, hovering
or focusing a token shows the dump's numbers for it, and the page's statistics and purity are the
ones ``fairseq-tpr-roles stats`` and ``purity`` print.

Where no Chromium, ChromeDriver or Selenium is installed the tests skip and say why; with
``FAIRSEQ_TPR_REQUIRE_BROWSER=1`` (as .ci/run sets it) they fail instead, so that CI cannot pass
without the browser."""
import json
import os
import re

import numpy as np
import pytest

from fairseq_tpr.analysis.dump import Dump
from fairseq_tpr.cli import roles as roles_cli
from fairseq_tpr.errors import DependencyError

from _explorer import label_file, toy_dump

REQUIRE = "FAIRSEQ_TPR_REQUIRE_BROWSER"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# what the page draws, as a comparable value: the tokens' classes, the titles and texts of the panels
DRAWN = """return {
  classes: [...document.querySelectorAll('#sentences .tok')].map(
    t => (t.dataset.side || '') + ':' + (t.dataset.c ?? '')),
  legend: document.getElementById('legend-title').textContent + document.getElementById('legend').textContent,
  stats: document.getElementById('stats').textContent,
  heatmap: document.getElementById('heatmap').dataset.signature,
  sentences: [...document.querySelectorAll('#sentences .sentence')].map(s => s.dataset.ex).join(','),
};"""


@pytest.fixture(scope="module")
def browser():
    from fairseq_tpr.analysis.headless import find_browser

    try:
        find_browser()
    except DependencyError as e:
        if os.environ.get(REQUIRE):
            pytest.fail(f"{REQUIRE} is set, but {e}")
        pytest.skip(f"no headless browser on this machine: {e}")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The discrete and continuous toy dumps with encoder labels, their explorers (k = 4), and the
    JSON of `stats` and `purity` on the same dumps."""
    tmp = tmp_path_factory.mktemp("explorer_browser")
    out = {}
    for kind in ("discrete", "continuous"):
        path = toy_dump(tmp, kind)
        dump = Dump.load(path)
        labels = label_file(tmp, dump, "encoder")
        html = str(tmp / f"{kind}.html")
        roles_cli.main(["html", path, "--out", html, "--labels", labels, "--k", "4"])
        purity = str(tmp / f"{kind}.purity.json")
        roles_cli.main(["purity", path, "--labels", labels, "--layer", "0", "--component", "role", "--k", "4",
                        "--json", purity])
        out[kind] = {"dump": dump, "path": path, "html": html, "labels": labels,
                     "purity": json.load(open(purity))}
        if kind == "discrete":
            stats = str(tmp / "stats.json")
            roles_cli.main(["stats", path, "--json", stats])
            out[kind]["stats"] = json.load(open(stats))
    return out


def _hover(page, element):
    from selenium.webdriver.common.action_chains import ActionChains

    page.js("arguments[0].scrollIntoView({block: 'center'})", element)
    ActionChains(page.driver).move_to_element(element).perform()
    return page.driver.find_element("id", "detail")


def _token(page, side, ex, pos):
    """The span of token ``pos`` of example ``ex``'s ``side`` row, turning the pages (20 sentences each)
    with the page's own buttons until it is drawn."""
    while page.js("return window.explorer.state.page") != ex // 20:
        forward = page.js("return window.explorer.state.page") < ex // 20
        page.driver.find_element("id", "next" if forward else "prev").click()
    off = page.js("return window.explorer.meta.sides[arguments[0]].offsets[arguments[1]]", side, ex)
    return page.driver.find_element("css selector", f'.tok[data-side="{side}"][data-t="{off + pos}"]')


@pytest.mark.slow  # Chromium starts in seconds: make test-slow (CI) runs it
def test_discrete_page_in_chromium(browser, pages, tmp_path):
    from fairseq_tpr.analysis.headless import Page

    p = pages["discrete"]
    dump = p["dump"]
    with Page(p["html"]) as page:
        ready_ms = page.open()
        assert 0 < ready_ms < 30000
        assert page.console() == []
        assert page.js("return document.title").startswith("roles of tp_transformer_d_tiny")

        # every selector changes what is drawn
        drawn = page.js(DRAWN)
        for control, value in (("side", "decoder"), ("site", "cross"), ("layer", "0"), ("head", "2"),
                               ("what", "role_attn"), ("layer", "1")):
            assert value in page.options(control)
            assert page.js(f"return document.getElementById('{control}').value") != value
            page.select(control, value)
            now = page.js(DRAWN)
            assert now != drawn, f"selecting {control} {value} drew nothing new"
            drawn = now
        assert drawn["classes"][0].startswith("encoder:") and any(c.startswith("decoder:") and c != "decoder:"
                                                                  for c in drawn["classes"])

        # hovering a decoder token shows the dump's top roles of decoder.1.cross head 2 (2 decimals)
        key, head = "decoder.1.cross", 2
        for ex, pos in ((0, 0), (3, 2), (20, 1)):
            detail = _hover(page, _token(page, "decoder", ex, pos))
            rows = [r.text.split() for r in detail.find_elements("css selector", ".dist tr")[1:]]
            dist = dump.arrays[key]["role_attn"][ex][pos, head]
            order = np.argsort(-dist, kind="stable")
            assert [int(r[0]) for r in rows] == order[:len(rows)].tolist()
            for (_, shown), role in zip(rows, order):
                assert abs(float(shown) - dist[role]) <= 0.005 + 1e-7
            # at most 5; fewer only where the next likeliest role prints as 0.00
            assert 1 <= len(rows) <= 5 and (len(rows) == 5 or dist[order[len(rows)]] < 0.005 + 1e-7)
            facts = detail.text
            assert f"#{ex} (id {dump.ids[ex]})" in facts
            assert f"target position {pos} of {len(dump.tgt[ex])} (counted from 0)" in facts
            assert dump.tokens("decoder", ex)[pos] in facts and dump.tokens("decoder", ex, inputs=False)[pos] in facts

        # the head's figures are stats' and purity's (encoder layer 0 self-attention, head 1)
        page.select("side", "encoder")
        page.select("layer", "0")
        page.select("head", "1")
        shown = page.driver.find_element("id", "head-stats").text
        head_stats = p["stats"]["sites"]["encoder.0.self"]["heads"][1]
        for t, rate in head_stats["one_hot"].items():
            assert f"one-hot (max > {t}) {100 * rate:.1f}%" in shown
        assert f"entropy (nats) {head_stats['entropy']:.3f}" in shown
        assert f"usage perplexity {head_stats['usage_perplexity']:.2f}" in shown
        row = next(r for r in p["purity"]["rows"] if r["head"] == 1)
        purity = page.driver.find_element("id", "purity").text
        assert purity.splitlines()[0].endswith(f"{100 * row['purity'][0]:.1f}%")
        assert f"majority label {100 * p['purity']['dumps'][0]['majority']:.1f}%" in purity

        # focusing a token with the keyboard shows it too, with its label
        page.js("arguments[0].focus()", _token(page, "encoder", 1, 0))
        label = open(p["labels"]).read().splitlines()[1].split()[0]
        assert f"label {label}" in page.driver.find_element("id", "detail").text

        # a role clicked in the legend lists every token that takes it
        button = page.driver.find_element("css selector", "#legend button[data-class]")
        role = int(button.get_attribute("data-class"))
        button.click()
        argmax = np.concatenate([a[:, 1].argmax(-1) for a in dump.arrays["encoder.0.self"]["role_attn"]])
        title = page.driver.find_element("id", "occ-title").text
        assert f"role {role} (encoder.0.self head 1): {int((argmax == role).sum())} in" in title
        listed = page.driver.find_elements("css selector", "#occurrences div[data-ex]")
        assert len(listed) == min(300, (argmax == role).sum())

        # the search box keeps the sentences that hold the substring
        text = " ".join(dump.tokens("encoder", 5)[:2])
        box = page.driver.find_element("id", "search")
        box.send_keys(text)
        listed = [int(x) for x in page.js(DRAWN)["sentences"].split(",")]
        expected = [i for i in range(len(dump)) if text in " ".join(dump.tokens("encoder", i))
                    or text in " ".join(dump.tokens("decoder", i))]
        assert 5 in listed and listed == expected[:20] and len(expected) < len(dump)

        png = page.screenshot(str(tmp_path / "page.png"))
        assert open(png, "rb").read(8) == PNG_MAGIC
        assert page.console() == []


@pytest.mark.slow
def test_continuous_page_in_chromium(browser, pages):
    from fairseq_tpr.analysis.cluster import kmeans_roles
    from fairseq_tpr.analysis.headless import Page

    p = pages["continuous"]
    dump = p["dump"]
    with Page(p["html"]) as page:
        page.open()
        assert page.console() == []
        assert page.options("site") == ["embed", "self"]  # the embedding roles of Eq. 2, then the attention
        # the first view is the last layer's self-attention, head 0 (`kmeans`' and `heatmap`'s defaults)
        assert [page.js(f"return document.getElementById('{c}').value") for c in ("site", "layer", "head")] == [
            "self", "1", "0"]
        drawn = page.js(DRAWN)
        for control, value in (("layer", "0"), ("head", "3"), ("site", "embed"), ("side", "decoder")):
            page.select(control, value)
            assert page.js(DRAWN) != drawn, f"selecting {control} {value} drew nothing new"
            drawn = page.js(DRAWN)
        page.select("side", "encoder")
        page.select("site", "self")
        page.select("layer", "0")
        page.select("head", "3")
        res = kmeans_roles(dump, "encoder.0.self", 3, 4)  # `kmeans --layer 0 --head 3 --k 4`
        X = dump.arrays["encoder.0.self"]["role"]
        for ex, pos in ((0, 1), (7, 0)):
            text = _hover(page, _token(page, "encoder", ex, pos)).text
            c = int(res["labels"][ex][pos])
            d = float(np.linalg.norm(X[ex][pos, 3].astype(np.float64) - res["centers"][c]))
            m = re.search(r"k-means cluster (\d+) of 4, distance to its centre ([\d.e+-]+)", text)
            assert int(m.group(1)) == c
            assert float(m.group(2)) == float(f"{np.float16(d):.3g}")  # float16, printed to 3 digits
        row = next(r for r in p["purity"]["rows"] if r["head"] == 3)  # `purity --layer 0 --k 4`, head 3
        purity = page.driver.find_element("id", "purity").text
        assert purity.splitlines()[0].endswith(f"{100 * row['purity'][0]:.1f}%")
        assert page.console() == []


@pytest.mark.slow
def test_language_model_page_in_chromium(browser, tmp_path):
    """A TP language model's page (a dump of its lines): one row of text, decoder sites only, and the
    hovered token shows the dump's roles for the position that reads it."""
    import random

    from fairseq_tpr.analysis.headless import Page

    from _inprocess import binarize_lm
    from _inprocess import train as train_in_process
    from test_lm_cli import _sentence, lm_train_argv

    rng = random.Random(5)
    data = binarize_lm(tmp_path / "lm", {split: [_sentence(rng) for _ in range(n)]
                                         for split, n in (("train", 60), ("valid", 12), ("test", 12))})
    train_in_process(lm_train_argv(data, tmp_path / "ckpt", "tp_transformer_d_lm_tiny", 2))
    path = str(tmp_path / "lm.npz")
    roles_cli.main(["dump", str(data), "--path", str(tmp_path / "ckpt" / "checkpoint_last.pt"), "--split", "valid",
                    "--lines", "--out", path, "--cpu"])
    roles_cli.main(["html", path, "--out", str(tmp_path / "lm.html"), "--k", "3"])
    dump = Dump.load(path)
    with Page(str(tmp_path / "lm.html")) as page:
        page.open()
        assert page.console() == [] and page.options("side") == ["decoder"]
        rows = page.driver.find_elements("css selector", '#sentences .sentence[data-ex="0"] .row')
        assert len(rows) == 1 and rows[0].text.split()[0] == "text"
        text = _hover(page, _token(page, "decoder", 0, 2)).text
        assert f"reads {dump.tokens('decoder', 0)[2]}" in text
        assert f"predicts {dump.tokens('decoder', 0, inputs=False)[2]}" in text
        dist = dump.arrays["decoder.1.self"]["role_attn"][0][2, 0]  # the first view: the last layer, head 0
        first = page.driver.find_elements("css selector", "#detail .dist tr")[1].text.split()
        assert int(first[0]) == int(dist.argmax()) and abs(float(first[1]) - dist.max()) <= 0.005 + 1e-7
        assert page.console() == []
