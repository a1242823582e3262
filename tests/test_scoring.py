"""Scoring: ``fairseq_tpr.scoring``, ``fairseq-tpr-score`` and ``fairseq-generate --scoring rouge``.

- hand-checked ROUGE-1/2/L/Lsum on two tiny pairs (the n-gram overlaps counted in the comments),
  by ``rouge-score`` and by the ROUGE-1.5.5 Perl script, and a plain-loop oracle (clipped n-gram
  counts, LCS by dynamic programming) for ROUGE-1/2/L without stemming on 20 summary pairs;
- the Perl and ``rouge-score`` paths agree within 0.5 points on those 20 pairs;
- Chinese character mode;
- the CLI on plain files and on fairseq-generate logs, and its error messages;
- a real ``fairseq-generate --scoring rouge`` run on a model trained for a few updates, whose
  printed ROUGE line must equal the scores of its own D-/T- lines.

The Perl and METEOR tests need Perl's XML::Parser and Java (``scripts/system_deps.sh``); they are
skipped with the reason when those are missing.
"""
import json
import re
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

import pytest

from fairseq_tpr.cli import score as cli
from fairseq_tpr.corpora.synthetic import write_reversal_task
from fairseq_tpr.errors import DependencyError, InputError, one_line
from fairseq_tpr.scoring import (
    MeteorScorer, PerlRougeScorer, RougeScoreScorer, parse_generate_log,
    read_generate_log,
)
from fairseq_tpr.scoring.rouge_perl import check_perl
from fairseq_tpr.scoring.rouge_python import rouge_score_segments
from fairseq_tpr.scoring.text import split_sentences

USER_DIR = Path(__file__).resolve().parents[1] / "fairseq_tpr"


def _perl_missing():
    try:
        check_perl()
    except DependencyError as err:
        return str(err)
    return None


PERL_MISSING = _perl_missing()
needs_perl = pytest.mark.skipif(PERL_MISSING is not None, reason=f"ROUGE-1.5.5 cannot run: {PERL_MISSING}")
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="METEOR 1.5 needs Java (scripts/system_deps.sh)")

# (hypothesis, reference): PTB-tokenized, lower-cased news summaries in the style of CNN/DM and
# XSum targets, sentences ending in " . " as files2rouge expects; model-like hypotheses.
PAIRS = [
    ("the bank of england has kept interest rates on hold at 0.5 % . the decision was expected by most economists .",
     "the bank of england has held interest rates at 0.5 % for the sixth month in a row ."),
    ("a man has been arrested after a woman was stabbed in a supermarket in leeds .",
     "a 34-year-old man has been arrested on suspicion of attempted murder after a woman was stabbed at a leeds supermarket ."),
    ("scientists have found that bees can learn to count up to four .",
     "honeybees can be trained to count landmarks up to four , according to a new study by australian researchers ."),
    ("the world 's largest iceberg has broken away from antarctica . it is four times the size of london .",
     "an iceberg four times the size of london has broken off an antarctic ice shelf , scientists say ."),
    ("manchester united have signed the portuguese midfielder for a club record fee .",
     "manchester united have completed the signing of portugal midfielder bruno fernandes for an initial fee of 47m pounds ."),
    ("thousands of people have been evacuated from their homes as floods hit northern india .",
     "more than 100,000 people have been forced from their homes by flooding in the indian state of assam ."),
    ("the government has announced plans to ban the sale of new petrol and diesel cars by 2030 .",
     "new petrol and diesel cars will not be sold in the uk from 2030 , the prime minister has announced ."),
    ("a rare white giraffe has been fitted with a gps tracker to protect it from poachers .",
     "the world 's only known white giraffe has been fitted with a tracking device to deter poachers in kenya ."),
    ("police are investigating after a painting worth millions was stolen from a museum .",
     "a painting by vincent van gogh has been stolen from a dutch museum that was closed because of the coronavirus ."),
    ("the company said profits had fallen by a third . it blamed the weak pound and rising costs .",
     "profits at the retailer fell by a third last year as the weak pound pushed up the cost of imported goods ."),
    ("a teenager has become the youngest person to fly solo around the world .",
     "a 19-year-old pilot has become the youngest woman to fly solo around the world after landing in belgium ."),
    ("the city council has voted to close three libraries to save money .",
     "three libraries are to close after councillors voted for cuts to save 2m pounds a year ."),
    ("heavy snow has caused travel disruption across scotland . schools were closed in several areas .",
     "snow and ice have brought disruption to roads and railways across scotland , with dozens of schools shut ."),
    ("a new species of frog has been discovered in the rainforest of peru .",
     "researchers have discovered a new species of tiny frog living in the cloud forests of the peruvian andes ."),
    ("the singer has cancelled the rest of her tour because of illness .",
     "the pop star has called off the remaining dates of her world tour after being diagnosed with a throat infection ."),
    ("the number of people using food banks has risen by a fifth , a charity has said .",
     "food bank use has increased by 19 % in a year , according to figures from the trussell trust ."),
    ("two climbers have been rescued after spending the night stranded on ben nevis .",
     "two climbers were rescued from ben nevis after becoming stuck overnight in freezing conditions ."),
    ("the airline is to cut 4,000 jobs as it struggles with falling demand .",
     "the airline has announced plans to cut up to 4,000 jobs after passenger numbers collapsed ."),
    ("a hospital has apologised after a patient was sent home with a broken leg .",
     "a hospital trust has apologised to a woman who was discharged with an undiagnosed fracture in her leg ."),
    ("the museum has returned a bronze statue to nigeria . it was taken by british soldiers in 1897 .",
     "a bronze sculpture looted by british troops in 1897 has been returned to nigeria by a university museum ."),
]


# ---------------------------------------------------------------------------------------------
# oracles: plain loops over the paper's definitions (Lin 2004), no stemming


def _tokens(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def _f(p, r):
    return 0 if p + r == 0 else 2 * p * r / (p + r)


def oracle_rouge_n(hyp, ref, n):
    """(P, R, F) from clipped n-gram counts."""
    h, r = _tokens(hyp), _tokens(ref)
    hg = Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))
    rg = Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1))
    hits = sum(min(c, rg[g]) for g, c in hg.items())
    p = hits / max(1, sum(hg.values()))
    rec = hits / max(1, sum(rg.values()))
    return p, rec, _f(p, rec)


def oracle_rouge_l(hyp, ref):
    """(P, R, F) from the length of the longest common subsequence of the two token sequences."""
    h, r = _tokens(hyp), _tokens(ref)
    table = [[0] * (len(r) + 1) for _ in range(len(h) + 1)]
    for i in range(len(h)):
        for j in range(len(r)):
            table[i + 1][j + 1] = table[i][j] + 1 if h[i] == r[j] else max(table[i][j + 1], table[i + 1][j])
    lcs = table[-1][-1]
    p, rec = lcs / max(1, len(h)), lcs / max(1, len(r))
    return p, rec, _f(p, rec)


# Pair A: hyp "a dog bit the man" (5 tokens), ref "the man bit a big dog" (6 tokens); no token is
# longer than 3 characters, so stemming cannot change anything.
#   unigrams: a, dog, bit, the, man all occur in the reference -> 5 hits; P 5/5, R 5/6
#   bigrams: hyp {a dog, dog bit, bit the, the man}, ref {the man, man bit, bit a, a big, big dog}:
#            1 hit (the man); P 1/4, R 1/5
#   LCS: "the man" or "a dog" -> 2; P 2/5, R 2/6
# Pair B (two hypothesis sentences, one reference sentence):
#   hyp "the suspect confessed yesterday . police arrested two men ." (8 word tokens)
#   ref "police arrested the suspect yesterday ." (5)
#   unigrams: the, suspect, yesterday, police, arrested -> 5 hits; P 5/8, R 5/5
#   bigrams: hyp {the suspect, suspect confessed, confessed yesterday, yesterday police (across the
#            sentence boundary, as both scorers count), police arrested, arrested two, two men},
#            ref {police arrested, arrested the, the suspect, suspect yesterday}: 2 hits; P 2/7, R 2/4
#   sentence-level LCS of the whole lines: "the suspect yesterday" -> 3; P 3/8, R 3/5
#   summary-level (union) LCS: ref sentence vs hyp sentence 1 -> {the, suspect, yesterday},
#            vs hyp sentence 2 -> {police, arrested}; union 5 hits; P 5/8, R 5/5
def _prf(p, r):
    return (float(p), float(r), float(_f(p, r)))


HAND = {
    "A": ("a dog bit the man", "the man bit a big dog", {
        "ROUGE-1": _prf(Fraction(5, 5), Fraction(5, 6)), "ROUGE-2": _prf(Fraction(1, 4), Fraction(1, 5)),
        "ROUGE-L": _prf(Fraction(2, 5), Fraction(2, 6)), "ROUGE-Lsum": _prf(Fraction(2, 5), Fraction(2, 6))}),
    "B": ("the suspect confessed yesterday . police arrested two men .", "police arrested the suspect yesterday .", {
        "ROUGE-1": _prf(Fraction(5, 8), Fraction(5, 5)), "ROUGE-2": _prf(Fraction(2, 7), Fraction(2, 4)),
        "ROUGE-L": _prf(Fraction(3, 8), Fraction(3, 5)), "ROUGE-Lsum": _prf(Fraction(5, 8), Fraction(5, 5))}),
}


def test_hand_values_are_what_the_oracle_counts():
    """The hand counts above, recounted by the plain-loop oracles (sentence-level L only)."""
    for hyp, ref, expected in HAND.values():
        for n in (1, 2):
            assert oracle_rouge_n(hyp, ref, n) == pytest.approx(expected[f"ROUGE-{n}"])
        assert oracle_rouge_l(hyp, ref) == pytest.approx(expected["ROUGE-L"])


@pytest.mark.parametrize("case", sorted(HAND))
def test_rouge_score_hand_checked(case):
    hyp, ref, expected = HAND[case]
    result = RougeScoreScorer().score([hyp], [[ref]])
    for metric, (p, r, f) in expected.items():
        got = result.metrics[metric]
        assert (got["p"], got["r"], got["f"]) == pytest.approx((100 * p, 100 * r, 100 * f)), metric
    assert result.metrics["ROUGE-L"]["level"] == "sentence"
    assert result.metrics["ROUGE-Lsum"]["level"] == "summary"


@needs_perl
@pytest.mark.parametrize("case", sorted(HAND))
def test_perl_hand_checked(case):
    """ROUGE-1.5.5's per-summary R/P/F (printed with 5 decimals) and its average for one summary;
    its ROUGE-L is summary-level, so it equals the hand-counted ROUGE-Lsum."""
    hyp, ref, expected = HAND[case]
    _, (metrics, per_summary) = PerlRougeScorer().run([hyp], [ref])
    for metric, hand in (("ROUGE-1", "ROUGE-1"), ("ROUGE-2", "ROUGE-2"), ("ROUGE-L", "ROUGE-Lsum")):
        p, r, f = expected[hand]
        assert per_summary[metric][0] == pytest.approx((r, p, f), abs=1e-5), metric
        assert metrics[metric]["f"] == pytest.approx(100 * f, abs=1e-3)
    assert metrics["ROUGE-L"]["level"] == "summary"


def test_rouge_score_equals_the_oracle_without_stemming():
    """Every pair of the fixture, per segment, and the corpus mean."""
    hyps, refs = zip(*PAIRS)
    segments = rouge_score_segments(hyps, refs, stemmer=False)
    for (hyp, ref), seg in zip(PAIRS, segments):
        for rouge_type, oracle in (("rouge1", oracle_rouge_n(hyp, ref, 1)), ("rouge2", oracle_rouge_n(hyp, ref, 2)),
                                   ("rougeL", oracle_rouge_l(hyp, ref))):
            s = seg[rouge_type]
            assert (s.precision, s.recall, s.fmeasure) == pytest.approx(oracle), (rouge_type, hyp)
    result = RougeScoreScorer(stemmer=False).score(list(hyps), [list(refs)])
    mean_f1 = sum(oracle_rouge_n(h, r, 1)[2] for h, r in PAIRS) / len(PAIRS)
    assert result.metrics["ROUGE-1"]["f"] == pytest.approx(100 * mean_f1)


def test_stemming_is_on_by_default():
    # "arrested"/"arrests" -> "arrest", "officers"/"officer" -> "offic": every unigram matches with the stemmer only
    hyp, ref = "officers arrested", "officer arrests"
    assert RougeScoreScorer().score([hyp], [[ref]]).metrics["ROUGE-1"]["f"] == pytest.approx(100)
    assert RougeScoreScorer(stemmer=False).score([hyp], [[ref]]).metrics["ROUGE-1"]["f"] == pytest.approx(0)


@needs_perl
def test_perl_and_rouge_score_agree_exactly_without_stemming():
    """Same tokens, same sentence split, same union LCS: without stemming the two paths give the
    same per-summary R/P/F on all 20 pairs (the Perl script prints 5 decimals)."""
    hyps, refs = map(list, zip(*PAIRS))
    _, (_, per_summary) = PerlRougeScorer(stemmer=False).run(hyps, refs)
    segments = rouge_score_segments(hyps, refs, stemmer=False)
    for perl_metric, rouge_type in (("ROUGE-1", "rouge1"), ("ROUGE-2", "rouge2"), ("ROUGE-L", "rougeLsum")):
        for i, (seg, (r, p, f)) in enumerate(zip(segments, per_summary[perl_metric])):
            s = seg[rouge_type]
            assert (r, p, f) == pytest.approx((s.recall, s.precision, s.fmeasure), abs=1e-5), (perl_metric, i)


@needs_perl
def test_perl_and_rouge_score_agree_on_summaries():
    """files2rouge settings (-m) against rouge-score's Porter stemmer on the 20 pairs. The Perl
    stemmer first looks words up in WordNet's irregular forms (held -> hold, fell/fallen -> fall,
    been/were -> be), so it finds a few more matches: measured here 0.6-0.8 points higher on
    every metric (R-1 51.10 vs 50.45); the test allows 1 point. ROUGE-L of the Perl script is
    summary-level and is compared with rougeLsum."""
    hyps, refs = map(list, zip(*PAIRS))
    python = RougeScoreScorer().score(hyps, [refs]).metrics
    perl = PerlRougeScorer().score(hyps, [refs]).metrics
    for perl_metric, python_metric in (("ROUGE-1", "ROUGE-1"), ("ROUGE-2", "ROUGE-2"), ("ROUGE-L", "ROUGE-Lsum")):
        assert abs(perl[perl_metric]["f"] - python[python_metric]["f"]) < 1.0, (perl_metric, perl, python)
        assert abs(perl[perl_metric]["f_mean"] - python[python_metric]["f"]) < 1.0
        low, high = perl[perl_metric]["f_ci"]
        assert low < perl[perl_metric]["f"] < high
    # the multi-sentence pairs make summary-level L differ from sentence-level L somewhere
    assert python["ROUGE-Lsum"]["f"] != pytest.approx(python["ROUGE-L"]["f"])


@needs_perl
def test_perl_stemmer_uses_wordnet_exceptions():
    """The one systematic difference between the paths: "held" is stemmed to "hold" only by Perl."""
    hyp, ref = "rates on hold", "rates held"
    _, (_, per_summary) = PerlRougeScorer().run([hyp], [ref])
    assert per_summary["ROUGE-1"][0][0] == pytest.approx(1.0)  # recall 2/2: rates, held=hold
    assert RougeScoreScorer().score([hyp], [[ref]]).metrics["ROUGE-1"]["r"] == pytest.approx(50)


def test_sentence_split_rules():
    line = "the bank held rates . u.s. stocks rose. markets closed !"
    assert split_sentences(line, "files2rouge") == ["the bank held rates .", "u.s. stocks rose. markets closed !"]
    assert split_sentences(line, "punct") == ["the bank held rates .", "u.s.", "stocks rose.", "markets closed !"]
    assert split_sentences(line, "none") == [line]
    assert split_sentences("我们赢了。明天见！", "punct") == ["我们赢了。", "明天见！"]
    assert split_sentences("   ", "files2rouge") == []


# Chinese, character mode: hyp 我爱北京天安门 (7 characters), ref 我爱天安门广场 (7)
#   characters: 我 爱 天 安 门 shared -> 5 hits; P = R = 5/7
#   bigrams: hyp {我爱, 爱北, 北京, 京天, 天安, 安门}, ref {我爱, 爱天, 天安, 安门, 门广, 广场}: 3 hits; P = R = 3/6
#   LCS: 我爱天安门 -> 5; P = R = 5/7
ZH_HYP, ZH_REF = "我爱北京天安门", "我爱天安门广场"
ZH_EXPECTED = {"ROUGE-1": 5 / 7, "ROUGE-2": 3 / 6, "ROUGE-L": 5 / 7}


def test_chinese_character_mode_rouge_score():
    result = RougeScoreScorer(char=True).score([ZH_HYP], [[ZH_REF]])
    for metric, value in ZH_EXPECTED.items():
        assert result.metrics[metric]["f"] == pytest.approx(100 * value)
    # word mode deletes every Chinese character: nothing left to match
    assert RougeScoreScorer().score([ZH_HYP], [[ZH_REF]]).metrics["ROUGE-1"]["f"] == 0


@needs_perl
def test_chinese_character_mode_perl():
    _, (metrics, per_summary) = PerlRougeScorer(char=True).run([ZH_HYP, "你好 世界"], [ZH_REF, "世界 你好"])
    for metric, value in ZH_EXPECTED.items():
        assert per_summary[metric][0][2] == pytest.approx(value, abs=1e-5)
    # second pair: 你 好 世 界 vs 世 界 你 好 -> 4 of 4 characters, bigrams 你好 and 世界 of 3, LCS 2 of 4
    assert [per_summary[m][1][2] for m in ("ROUGE-1", "ROUGE-2", "ROUGE-L")] == pytest.approx([1, 2 / 3, 0.5], abs=1e-5)


# ---------------------------------------------------------------------------------------------
# the CLI


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _run(argv, capsys):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _table(out):
    """{(scorer label, metric label): headline number} from the Markdown table."""
    rows = {}
    for match in re.finditer(r"^\| (.+?) \| (.+?) \| ([0-9.]+)(?: \(95% CI [0-9.]+-[0-9.]+\))? \|$", out, re.M):
        rows[(match.group(1), match.group(2))] = float(match.group(3))
    return rows


def generate_log(rows, nbest=1):
    """fairseq-generate output for ``rows`` of ``(id, source, target, hypothesis)``, printed in
    batch order (not by id), with the log lines fairseq prints around them. With ``nbest`` > 1 a
    worse hypothesis follows the best one; ``target=None`` leaves out the T- line."""
    lines = ["2026-01-01 00:00:00 | INFO | fairseq_cli.generate | {'_name': None, 'common': {...}}",
             "2026-01-01 00:00:01 | INFO | fairseq.tasks.translation | [src] dictionary: 1000 types"]
    for i, src, tgt, hyp in rows:
        lines.append(f"S-{i}\t{src}")
        if tgt is not None:
            lines.append(f"T-{i}\t{tgt}")
        for k in range(nbest):
            h = hyp if k == 0 else "a worse hypothesis"
            bpe = "\u2581" + h.replace(" ", " \u2581")  # the H- line before --bpe sentencepiece decoding
            lines += [f"H-{i}\t{-0.3 - k:.4f}\t{bpe}", f"D-{i}\t{-0.3 - k:.4f}\t{h}",
                      f"P-{i}\t-0.1000 -0.2000 -0.6000"]
    lines += ["2026-01-01 00:00:02 | INFO | fairseq_cli.generate | NOTE: hypothesis and token scores are output in base 2",
              "Generate test with beam=4: BLEU4 = 12.34, 40.0/20.0/10.0/5.0 (BP=1.000, ratio=1.0, syslen=50, reflen=50)"]
    return "\n".join(lines) + "\n"


@needs_perl
def test_cli_plain_files_markdown_and_json(tmp_path, capsys):
    hyps, refs = map(list, zip(*PAIRS))
    hyp, ref = _write(tmp_path / "test.hypo", hyps), _write(tmp_path / "test.target", refs)
    out_json = tmp_path / "out" / "scores.json"
    rc, out, err = _run(["--hyp", hyp, "--ref", ref, "--metrics", "rouge,rouge-perl,bleu", "--json", out_json], capsys)
    assert rc == 0, err
    table = _table(out)
    report = json.loads(out_json.read_text())
    by_key = {s["scorer"]: s for s in report["scorers"]}
    assert list(by_key) == ["rouge", "rouge-perl", "bleu"] and report["segments"] == len(PAIRS)
    python = RougeScoreScorer().score(hyps, [refs]).metrics
    for metric in ("ROUGE-1", "ROUGE-2", "ROUGE-Lsum"):
        assert by_key["rouge"]["metrics"][metric]["f"] == pytest.approx(python[metric]["f"])
        assert set(by_key["rouge"]["metrics"][metric]) >= {"f", "p", "r"}
    label = by_key["rouge"]["label"]
    assert table[(label, "ROUGE-L (sentence-level)")] == pytest.approx(python["ROUGE-L"]["f"], abs=0.006)
    assert table[(label, "ROUGE-Lsum (summary-level)")] == pytest.approx(python["ROUGE-Lsum"]["f"], abs=0.006)
    perl = by_key["rouge-perl"]
    assert table[(perl["label"], "ROUGE-L (summary-level)")] == pytest.approx(perl["metrics"]["ROUGE-L"]["f"], abs=0.006)
    assert "-c 95 -r 1000 -n 2 -a -m" in perl["settings"]["options"]
    import sacrebleu
    expected_bleu = sacrebleu.corpus_bleu(hyps, [refs]).score
    assert by_key["bleu"]["metrics"]["BLEU"]["score"] == pytest.approx(expected_bleu)
    assert "tok:13a" in by_key["bleu"]["settings"]["signature"]
    assert "files2rouge" in out and "Settings:" in out


def test_cli_multi_reference_bleu(tmp_path, capsys):
    hyps = ["the cat sat on the mat .", "a dog barked loudly ."]
    ref1, ref2 = ["the cat is on the mat .", "the dog barked ."], ["there is a cat on the mat .", "a dog barked loudly ."]
    files = [_write(tmp_path / n, lines) for n, lines in (("h", hyps), ("r1", ref1), ("r2", ref2))]
    out_json = tmp_path / "s.json"
    rc, out, err = _run(["--hyp", files[0], "--ref", files[1], "--ref", files[2], "--metrics", "bleu,rouge",
                         "--json", out_json], capsys)
    assert rc == 0, err
    import sacrebleu
    report = json.loads(out_json.read_text())
    bleu = {s["scorer"]: s for s in report["scorers"]}["bleu"]["metrics"]["BLEU"]
    assert bleu["score"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [ref1, ref2]).score)
    assert bleu["score"] > sacrebleu.corpus_bleu(hyps, [ref1]).score
    assert "nrefs:2" in bleu["signature"]
    assert any("ROUGE uses the first" in note for note in report["notes"])


def test_cli_generate_log_orders_by_id_and_prefers_detokenized(tmp_path, capsys):
    rows = [(2, "s2", "the third summary is here .", "the third summary is there ."),
            (0, "s0", "police arrested the suspect yesterday .", "the suspect confessed yesterday . police arrested two men ."),
            (1, "s1", "the man bit a big dog", "a dog bit the man <unk>")]
    log = tmp_path / "generate-test.txt"
    log.write_text(generate_log(rows, nbest=2))
    data = read_generate_log(log)
    assert data.refs == [[rows[1][2], rows[2][2], rows[0][2]]]
    assert data.hyps == [rows[1][3], "a dog bit the man", rows[0][3]]  # best D- line, <unk> removed
    assert any("1 '<unk>' token(s) removed" in note for note in data.notes)
    out_json = tmp_path / "s.json"
    rc, out, err = _run(["--generate-log", log, "--expect", 3, "--metrics", "rouge", "--json", out_json], capsys)
    assert rc == 0, err
    metrics = json.loads(out_json.read_text())["scorers"][0]["metrics"]
    # segments 0 and 1 are the hand-checked pairs B and A; segment 2 by the oracle (4 of 5 unigrams)
    third = oracle_rouge_n(rows[0][3], rows[0][2], 1)[2]
    expected = (HAND["B"][2]["ROUGE-1"][2] + HAND["A"][2]["ROUGE-1"][2] + third) / 3
    assert metrics["ROUGE-1"]["f"] == pytest.approx(100 * expected)
    # with --ref the log's T- lines are replaced by the file (line i = sample id i)
    ref = _write(tmp_path / "raw.target", ["police arrested the suspect yesterday .", "x", "y"])
    rc, out, err = _run(["--generate-log", log, "--ref", ref, "--metrics", "rouge", "--json", out_json], capsys)
    assert rc == 0, err
    assert json.loads(out_json.read_text())["references"] == [str(ref)]


def test_generate_log_without_detokenized_lines_uses_h_lines(tmp_path):
    log = tmp_path / "gen.out"
    log.write_text("T-0\tthe cat\nH-0\t-0.5\tthe cat\nT-1\ta dog\nH-1\t-0.7\ta do@@ g\n")
    data = read_generate_log(log)
    assert data.hyps == ["the cat", "a do@@ g"] and "H- lines" in data.hyp_source


# error messages: what is wrong, with the counts and the files


def _error(argv, capsys):
    """The ``error:`` line of the InputError that ``main(argv)`` raises: the error hook of
    ``fairseq_tpr.errors`` prints it and exits 2 (tests/test_bad_data.py runs the console script)."""
    with pytest.raises(InputError) as exc:
        cli.main([str(a) for a in argv])
    out, _ = capsys.readouterr()
    assert not out, out  # no table for bad input
    err = one_line(exc.value)
    assert err.startswith("error: ")
    return err


def test_error_mismatched_line_counts(tmp_path, capsys):
    hyp, ref = _write(tmp_path / "h.txt", ["a", "b", "c"]), _write(tmp_path / "r.txt", ["a", "b"])
    err = _error(["--hyp", hyp, "--ref", ref], capsys)
    assert "3 hypotheses" in err and str(hyp) in err and "2 references" in err and str(ref) in err


def test_error_missing_file(tmp_path, capsys):
    ref = _write(tmp_path / "r.txt", ["a"])
    err = _error(["--hyp", tmp_path / "nope.txt", "--ref", ref], capsys)
    assert "hypothesis file" in err and "nope.txt" in err and "does not exist" in err
    err = _error(["--generate-log", tmp_path / "gen.out"], capsys)
    assert "gen.out does not exist" in err


def test_error_empty_hypothesis_file(tmp_path, capsys):
    hyp, ref = _write(tmp_path / "h.txt", []), _write(tmp_path / "r.txt", ["a"])
    err = _error(["--hyp", hyp, "--ref", ref], capsys)
    assert "is empty (0 lines)" in err and str(hyp) in err


def test_error_undecodable_bytes(tmp_path, capsys):
    hyp, ref = tmp_path / "h.txt", _write(tmp_path / "r.txt", ["a", "b"])
    hyp.write_bytes(b"fine\ncaf\xe9\n")
    err = _error(["--hyp", hyp, "--ref", ref], capsys)
    assert "not UTF-8" in err and "line 2, byte column 4 (byte 8 of the file)" in err and "bytes e9" in err


def test_error_generate_log_without_targets(tmp_path, capsys):
    log = tmp_path / "gen.out"
    log.write_text(generate_log([(0, "s", None, "a b"), (1, "s", None, "c d")]))
    err = _error(["--generate-log", log], capsys)
    assert "no T- (target) lines" in err and "--ref" in err


def test_error_generate_log_fewer_hypotheses_than_expected(tmp_path, capsys):
    log = tmp_path / "gen.out"
    log.write_text(generate_log([(i, "s", "a b", "a b") for i in (0, 1, 3)]))
    err = _error(["--generate-log", log, "--expect", 5], capsys)
    assert "holds 3 hypotheses but --expect 5" in err and "missing ids 2, 4" in err
    assert "--required-batch-size-multiple 1" in err
    # ids with a hole cannot be paired with the lines of --ref
    ref = _write(tmp_path / "r.txt", ["a b"] * 3)
    err = _error(["--generate-log", log, "--ref", ref], capsys)
    assert "missing 2" in err


def test_error_not_a_generate_log(tmp_path, capsys):
    log = _write(tmp_path / "plain.txt", ["just a summary", "and another"])
    err = _error(["--generate-log", log], capsys)
    assert "no H-/D- hypothesis lines" in err


def test_error_hypothesis_line_without_score(tmp_path, capsys):
    log = tmp_path / "gen.out"
    log.write_text("S-0\ta b\nT-0\ta b\nH-0\t-0.2\ta b\nS-1\tc d\nT-1\tc d\nH-1\tc d\n")
    err = _error(["--generate-log", log], capsys)
    assert f"{log} line 6:" in err and "H-<id>\\t<score>\\t<text>" in err and "no score column" in err
    with pytest.raises(InputError, match="line 6: an H- line must read"):
        parse_generate_log(log)
    log.write_text("T-0\ta b\nH-0\t-0.2\ta b\nD-0\ta b\n")  # a D- line is held to the same format
    with pytest.raises(InputError, match=r"gen\.out line 3: a D- line must read"):
        parse_generate_log(log)


@pytest.mark.parametrize("kind", ["T", "S"])
def test_error_concatenated_runs_with_conflicting_lines(tmp_path, capsys, kind):
    first = generate_log([(0, "s0", "a b", "a b"), (1, "s1", "c d", "c d")])
    second = generate_log([(0, "s0", "a b", "a b"), (1, "s1", "c d", "c d")])
    second = second.replace(f"{kind}-1\t{'c d' if kind == 'T' else 's1'}", f"{kind}-1\tsomething else")
    log = tmp_path / "two_runs.out"
    log.write_text(first + second)
    conflict = (first + second).splitlines().index(f"{kind}-1\tsomething else") + 1
    err = _error(["--generate-log", log, "--metrics", "rouge"], capsys)
    assert f"{log} line {conflict}: sample id 1 has two different {kind}- lines" in err
    assert "more than one fairseq-generate run" in err
    # the same run twice (identical S-/T- lines) is read, the first hypothesis of an id kept
    log.write_text(first + first)
    assert parse_generate_log(log).tokenized[1] == "\u2581c \u2581d"


def test_unknown_metric_is_rejected(tmp_path, capsys):
    hyp = _write(tmp_path / "h.txt", ["a"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--hyp", str(hyp), "--ref", str(hyp), "--metrics", "rouge,cider"])
    assert exit_info.value.code == 2
    assert "unknown metric(s) cider" in capsys.readouterr().err


def test_chinese_without_char_warns_and_char_mode_scores(tmp_path, capsys):
    hyp, ref = _write(tmp_path / "h.txt", [ZH_HYP]), _write(tmp_path / "r.txt", [ZH_REF])
    rc, out, err = _run(["--hyp", hyp, "--ref", ref, "--metrics", "rouge"], capsys)
    assert rc == 0 and "pass --char" in err
    out_json = tmp_path / "s.json"
    rc, out, err = _run(["--hyp", hyp, "--ref", ref, "--char", "--json", out_json,
                         "--metrics", "rouge,bleu" + (",rouge-perl" if PERL_MISSING is None else "")], capsys)
    assert rc == 0, err
    report = json.loads(out_json.read_text())
    for result in report["scorers"]:
        if result["scorer"].startswith("rouge"):
            assert result["metrics"]["ROUGE-1"]["f"] == pytest.approx(100 * 5 / 7, abs=1e-3)
            assert result["metrics"]["ROUGE-2"]["f"] == pytest.approx(50, abs=1e-3)
        if result["scorer"] == "rouge-perl":
            assert "-m" not in result["settings"]["options"].split()
    assert "tok:char" in {s["scorer"]: s for s in report["scorers"]}["bleu"]["settings"]["signature"]


def _fake_path(tmp_path):
    """A PATH with no java and a perl that cannot load XML::Parser."""
    fake = tmp_path / "bin"
    fake.mkdir()
    perl = fake / "perl"
    perl.write_text(f"#!/bin/sh\ncase \"$*\" in *XML::Parser*) echo \"Can't locate XML/Parser.pm in @INC\" >&2; "
                    f"exit 2;; esac\nexec {shutil.which('perl') or '/usr/bin/perl'} \"$@\"\n")
    perl.chmod(0o755)
    return str(fake)


def test_missing_xml_parser_and_java_say_what_to_install(tmp_path, capsys, monkeypatch):
    hyp, ref = _write(tmp_path / "h.txt", ["a dog bit the man"]), _write(tmp_path / "r.txt", ["the man bit a big dog"])
    monkeypatch.setenv("PATH", _fake_path(tmp_path))
    out_json = tmp_path / "s.json"
    rc, out, err = _run(["--hyp", hyp, "--ref", ref, "--json", out_json], capsys)  # default: all available
    assert rc == 0, err
    assert "rouge-perl not run" in err and "libxml-parser-perl" in err and "XML::Parser" in err
    assert "meteor not run" in err and "default-jre-headless" in err and "Java" in err
    report = json.loads(out_json.read_text())
    assert [s["scorer"] for s in report["scorers"]] == ["rouge", "bleu"]  # the others still ran
    assert set(report["unavailable"]) == {"rouge-perl", "meteor"}
    assert "Not run:" in out
    # named explicitly, a missing scorer makes the exit status 1 (the available ones still print)
    rc, out, err = _run(["--hyp", hyp, "--ref", ref, "--metrics", "rouge,meteor"], capsys)
    assert rc == 1 and "ROUGE-1" in out


# ---------------------------------------------------------------------------------------------
# METEOR (one Java start) and fairseq-generate --scoring rouge (started first, runs alongside)

N_TEST = 11  # not a multiple of 8: all sentences must come out


def _check(proc, what):
    assert proc.returncode == 0, f"{what} failed (rc {proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}"
    return proc


def _generate_pipeline(root, run_cli):
    """synthetic reversal data -> fairseq-preprocess -> 3 updates of transformer_tp_tiny ->
    fairseq-generate --scoring rouge; returns the generate process."""
    langs = ("--source-lang", "src", "--target-lang", "tgt")
    write_reversal_task(root / "raw", n_train=64, n_valid=8, n_test=N_TEST)
    _check(run_cli("fairseq-preprocess", *langs, "--joined-dictionary", "--trainpref", root / "raw/train",
                   "--validpref", root / "raw/valid", "--testpref", root / "raw/test", "--destdir", root / "bin",
                   "--workers", 1, cwd=root), "fairseq-preprocess")
    _check(run_cli("fairseq-train", root / "bin", "--user-dir", USER_DIR, "--task", "translation", *langs,
                   "--arch", "transformer_tp_tiny", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", 2000,
                   "--max-update", 3, "--save-dir", root / "ckpt", "--no-epoch-checkpoints", "--no-save-optimizer-state",
                   "--cpu", "--seed", 1, "--num-workers", 0, "--required-batch-size-multiple", 1,
                   "--disable-validation", "--no-progress-bar", "--log-format", "simple", cwd=root), "fairseq-train")
    return _check(run_cli("fairseq-generate", root / "bin", "--user-dir", USER_DIR, *langs,
                          "--path", root / "ckpt/checkpoint_last.pt", "--gen-subset", "test", "--beam", 2,
                          "--batch-size", 4, "--required-batch-size-multiple", 1, "--max-len-b", 12, "--cpu",
                          "--num-workers", 0, "--scoring", "rouge", cwd=root), "fairseq-generate --scoring rouge")


@pytest.fixture(scope="module")
def generate_run(tmp_path_factory, run_cli):
    """The fairseq pipeline, started in the background when first requested."""
    root = tmp_path_factory.mktemp("scoring_generate")
    with ThreadPoolExecutor(1) as pool:
        yield root, pool.submit(_generate_pipeline, root, run_cli)


@pytest.mark.slow  # a long end-to-end run: make test-slow
@needs_java
def test_meteor(generate_run):
    """One java process, two calls: a segment scores the same alone and next to another; an
    unrelated hypothesis scores 0; identical text scores high (only METEOR's fragmentation
    penalty is left); the jar's corpus score is reported with its command line."""
    same = "the bank of england has kept interest rates on hold at 0.5 % ."
    scorer = MeteorScorer()
    alone = scorer.score([same], [[same]])
    both = scorer.score([same, "zebra quartz lullaby"], [[same, "more people have been forced from their homes ."]])
    assert alone.settings["command"].endswith("meteor-1.5.jar - - -stdio -l en -norm")
    identical = alone.metrics["METEOR"]["score"]
    assert identical == pytest.approx(alone.metrics["METEOR"]["segment_mean"])
    assert 50 < identical <= 100
    assert both.metrics["METEOR"]["segment_mean"] == pytest.approx(identical / 2, abs=1e-6)
    assert 0 < both.metrics["METEOR"]["score"] < identical


def test_meteor_reports_missing_java(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DependencyError, match="default-jre-headless"):
        MeteorScorer().check()


@pytest.mark.slow  # the module's fairseq pipeline (preprocess, train, generate): 14-25 s
def test_fairseq_generate_scoring_rouge(generate_run, tmp_path, capsys):
    """The ROUGE line fairseq-generate prints equals the scores of its own D-/T- lines."""
    root, future = generate_run
    gen = future.result(timeout=600)
    ids = sorted(int(i) for i in re.findall(r"^D-(\d+)\t", gen.stdout, flags=re.M))
    assert ids == list(range(N_TEST))
    line = re.search(r"^Generate test with beam=2: (ROUGE-1 = .*)$", gen.stdout, flags=re.M)
    assert line, gen.stdout[-3000:]
    printed = dict(re.findall(r"(ROUGE-\w+) = ([0-9.]+)", line.group(1)))
    assert set(printed) == {"ROUGE-1", "ROUGE-2", "ROUGE-L", "ROUGE-Lsum"}
    assert "rouge-score" in line.group(1) and "Porter" in line.group(1)
    log = tmp_path / "gen.out"
    log.write_text(gen.stdout)
    data = read_generate_log(log, expect=N_TEST)
    expected = RougeScoreScorer().score(data.hyps, data.refs).metrics
    for metric, value in printed.items():
        assert float(value) == pytest.approx(expected[metric]["f"], abs=0.006), metric
    # the CLI reads the same log
    rc, out, err = _run(["--generate-log", log, "--expect", N_TEST, "--metrics", "rouge"], capsys)
    assert rc == 0 and f"Scores of {N_TEST} segments" in out


def test_scorer_is_registered_with_its_options():
    from fairseq import options

    import fairseq_tpr  # noqa: F401

    parser = options.get_generation_parser()
    args = options.parse_args_and_arch(parser, ["/dev/null", "--scoring", "rouge", "--rouge-char",
                                                "--rouge-sentence-split", "punct"])
    assert args.scoring == "rouge" and args.rouge_char is True and args.rouge_no_stemmer is False
    from fairseq.scoring import build_scorer
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    cfg = convert_namespace_to_omegaconf(args)
    scorer = build_scorer(cfg.scoring, None)
    scorer.add_string(ZH_REF, ZH_HYP)
    assert scorer.scores()["ROUGE-1"] == pytest.approx(100 * 5 / 7)
    assert scorer.sentence_split == "punct"
