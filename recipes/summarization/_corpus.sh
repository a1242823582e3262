# Sourced by the summarization recipes: per-corpus preprocessing and decoding settings.
# Sets trunc (source tokens kept by preprocess --truncate-source; 0 = none) and gen_args
# (fairseq-generate length limits and beam; lengths are in subword tokens). Neither paper gives
# decoding settings (Jiang et al. decode with T5's defaults); these are the usual fairseq values
# for each corpus, recorded in docs/results.md.
set_corpus() {
    case "$1" in
        xsum)     trunc=512;  gen_args=(--beam 6 --lenpen 1.0 --min-len 10 --max-len-b 60 --no-repeat-ngram-size 3) ;;
        cnndm)    trunc=512;  gen_args=(--beam 4 --lenpen 2.0 --min-len 55 --max-len-b 140 --no-repeat-ngram-size 3) ;;
        wikihow)  trunc=512;  gen_args=(--beam 4 --lenpen 1.0 --min-len 20 --max-len-b 128 --no-repeat-ngram-size 3) ;;
        arxiv)    trunc=1024; gen_args=(--beam 4 --lenpen 1.0 --min-len 50 --max-len-b 256 --no-repeat-ngram-size 3) ;;
        gigaword) trunc=0;    gen_args=(--beam 5 --lenpen 1.0 --min-len 1 --max-len-b 30) ;;
        lcsts)    trunc=0;    gen_args=(--beam 5 --lenpen 1.0 --min-len 1 --max-len-b 40) ;;
        debian)   trunc=256;  gen_args=(--beam 5 --lenpen 1.0 --min-len 1 --max-len-b 32 --no-repeat-ngram-size 3) ;;
        *) echo "error: unknown corpus '$1' (xsum, cnndm, wikihow, arxiv, gigaword, lcsts, debian)" >&2; return 2 ;;
    esac
}
