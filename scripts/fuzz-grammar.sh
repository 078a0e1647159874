#!/usr/bin/env bash
# Fuzzes the grammar front ends (GBNF, JSON Schema, regex) with clang, ASan + UBSan,
# in one of two modes:
#   scripts/fuzz-grammar.sh [SECONDS]        properties (grammar_fuzz): any text parses or
#       fails with a Status; over whatever compiles, a matcher walk where the mask agrees
#       with accept_token and rollback restores the mask
#   scripts/fuzz-grammar.sh time [SECONDS]   time (grammar_time_fuzz): every input parses and
#       compiles, or is refused, within the budget (src/grammar/grammar_budget.h), with the
#       server's size limits; its points and masks each within theirs
# SECONDS defaults to 600. A broken property or an input past its budget stops the run
# and leaves its reproducer in build/fuzz/crashes/TARGET/ (scripts/fuzz-lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-lib.sh
target=grammar_fuzz
timeout_s=10
if [ "${1:-}" = time ]; then
  target=grammar_time_fuzz
  timeout_s=30
  shift
fi
fuzz_build "$target"
corpus="$(fuzz_corpus "$target")"
mkdir -p "$corpus"
# Seeds: byte 0 picks the front end (0 GBNF, 1 JSON Schema, 2 regex), the text, a NUL,
# then bytes that choose tokens.
seed() { { printf "\\x$1"; printf '%s' "$2"; printf '\0\x01\x04\x10\x05\x07\x13\xf1\x02\x21'; } >"$corpus/seed-$3"; }
for g in tests/data/grammars/*.gbnf; do seed 00 "$(cat "$g")" "gbnf-$(basename "$g" .gbnf)"; done
seed 00 'root ::= "a" [0-9]{1,3} ("x" | "yz")* "\n"' gbnf-small
seed 01 '{"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"type":"array","items":{"type":"integer","minimum":-5}}},"required":["a"]}' schema-object
seed 01 '{"$defs":{"n":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"oneOf":[{"type":"string","format":"date"},{"type":"boolean"}]}' schema-defs
seed 01 '{"enum":["a\"b",1,null,{"k":[true]}]}' schema-enum
seed 01 '{"type":"string","pattern":"^[a-z]+(-[0-9]{2})?$"}' schema-pattern
seed 02 '[A-Z][a-z]{2,5} (ab|c+)?\d{4}' regex
if [ "$target" = grammar_time_fuzz ]; then
  # Nested counted repetitions, the costs the budget is for.
  seed 02 '(x{1,4096}){1,4096}' regex-nested
  seed 02 '((a{0,99}b?){1,99}|c){0,99}' regex-nested-optional
  seed 00 'root ::= ( [a-z]{0,4096} "," ){0,4096}' gbnf-nested
  seed 01 '{"type":"array","items":{"type":"array","items":{"type":"string","maxLength":4096},"maxItems":4096},"maxItems":4096}' schema-nested
fi
fuzz_run "$target" "${1:-600}" -max_len=4096 -timeout="$timeout_s"
