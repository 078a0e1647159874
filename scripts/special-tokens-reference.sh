#!/usr/bin/env bash
# Writes tests/data/special_tokens_ref.txt: llama.cpp's llama-tokenize on prompts with
# control tokens written in them, with control-token parsing (its default) and without
# (--no-parse-special), for every vocabulary in ../shared/tokenizer and stories260K.
# tokenizer/special_tokens_test.cc reads it; nothing in the tests needs llama.cpp.
#   scripts/special-tokens-reference.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${LLAMA_BIN:-$here/../shared/peers/llama.cpp/bin}
out=$here/tests/data/special_tokens_ref.txt
texts=(
  '<s>Hi<|endoftext|> there</s>'
  $'<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n'
  'a<unk>b</s></s>c'
  '<|endoftext|><|endoftext|>x <s> y'
  $'<\xef\xbd\x9cbegin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>x<\xef\xbd\x9cend\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>'
  '<<s>> <s<s>>'
)
{
  echo "# llama-tokenize (llama.cpp c392e50) ids, written by scripts/special-tokens-reference.sh"
  echo "# vocab FILE (under ../shared); text HEX; parsed IDS (default); split IDS (--no-parse-special)"
  for vocab in tokenizer/ggml-vocab-deepseek-coder.gguf tokenizer/ggml-vocab-gpt-2.gguf \
               tokenizer/ggml-vocab-llama-spm.gguf models/stories260K.gguf; do
    echo "vocab $vocab"
    for t in "${texts[@]}"; do
      echo "text $(printf '%s' "$t" | od -An -tx1 | tr -d ' \n')"
      for mode in parsed split; do
        flag=(); [[ $mode == split ]] && flag=(--no-parse-special)
        ids=$(LD_LIBRARY_PATH=$bin "$bin/llama-tokenize" -m "$here/../shared/$vocab" -p "$t" --ids --log-disable \
          "${flag[@]}" 2>/dev/null | tail -1 | tr -d '[],')
        echo "$mode $ids"
      done
    done
  done
} >"$out"
echo "wrote $out"
