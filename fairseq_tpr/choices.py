"""The choices and defaults that both a console script's ``--help`` and the library use: one copy,
which the scripts read before they import the library (torch and fairseq load only after the
arguments are parsed; ``tests/test_cli_startup.py``). Each library module imports its constants
from here under the names it has always used."""

# fairseq-tpr-score; scoring/ (SCORERS there maps these keys to the scorer classes)
SCORER_KEYS = ("rouge", "rouge-perl", "meteor", "bleu")
SENTENCE_SPLITS = ("files2rouge", "punct", "none")  # scoring/text.py
DEFAULT_SENTENCE_SPLIT = "files2rouge"

# fairseq-tpr-caption-score; scoring/captions.py
CAPTION_METRICS = ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr")

# fairseq-tpr-probe; analysis/layer_probe.py
PROBE_REPRESENTATIONS = ("role", "filler", "tpr", "layer")

# fairseq-tpr-roles; analysis/capture.py and analysis/dump.py
CAPTURE_COMPONENTS = ("role", "filler", "tpr", "role_attn", "attn", "out")
ROLE_COMPONENTS = ("role", "filler", "tpr", "role_attn")

# fairseq-tpr-pos-tagger; grammar/tagger_model.py
POS_FEATURES = ("unbinding", "words", "both")
POS_SCORERS = ("factored", "linear")
POS_CONTEXTS = ("blstm", "none")

# fairseq-tpr-template-similarity; analysis/template_similarity.py
SIMILARITY_BATCH_SIZE = 64

# fairseq-tpr-pos-tagger and fairseq-tpr-parse: the splits they train and score (grammar/, cli/__init__.py)
GRAMMAR_SPLITS = ("train", "valid", "test")

# fairseq-tpr-parse; grammar/parser_model.py
PARSER_FEATURES = ("unbinding", "words")
SEGMENT_TARGETS = ("parity", "boundary")
LAYER_INPUTS = ("u", "u+prev")
