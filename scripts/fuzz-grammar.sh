#!/usr/bin/env bash
# Builds the grammar front-end fuzzer (clang, ASan + UBSan) and runs it: GBNF, JSON
# Schema and regex texts, and a matcher walk over whatever compiles (the mask must
# agree with accept_token, rollback must restore the mask).
#   scripts/fuzz-grammar.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-600}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target grammar_fuzz
CORPUS=build/fuzz/grammar-corpus
mkdir -p "$CORPUS"
# Seeds: byte 0 picks the front end (0 GBNF, 1 JSON Schema, 2 regex), the text, a NUL,
# then bytes that choose tokens.
seed() { { printf "\\x$1"; printf '%s' "$2"; printf '\0\x01\x04\x10\x05\x07\x13\xf1\x02\x21'; } >"$CORPUS/seed-$3"; }
for g in tests/data/grammars/*.gbnf; do seed 00 "$(cat "$g")" "gbnf-$(basename "$g" .gbnf)"; done
seed 00 'root ::= "a" [0-9]{1,3} ("x" | "yz")* "\n"' gbnf-small
seed 01 '{"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"type":"array","items":{"type":"integer","minimum":-5}}},"required":["a"]}' schema-object
seed 01 '{"$defs":{"n":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"oneOf":[{"type":"string","format":"date"},{"type":"boolean"}]}' schema-defs
seed 01 '{"enum":["a\"b",1,null,{"k":[true]}]}' schema-enum
seed 01 '{"type":"string","pattern":"^[a-z]+(-[0-9]{2})?$"}' schema-pattern
seed 02 '[A-Z][a-z]{2,5} (ab|c+)?\d{4}' regex
build/fuzz/fuzz/grammar_fuzz "$CORPUS" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -print_final_stats=1 -rss_limit_mb=2048 -timeout=10
