# Sourced by the adaptive-compute evaluation scripts (prune-eval.sh, early-exit-eval.sh,
# precision-eval.sh): sets `here`, `llmserve`, `model` (LLMSERVE and MODEL override
# them), `work` (the first argument, else a temporary directory removed at exit) and
# `text`, the evaluation text sampled from the model by sampled-eval-text.sh.
# Call: eval_text_setup "$@"
eval_text_setup() {
  here=$(cd "$(dirname "${BASH_SOURCE[1]}")/.." && pwd)
  llmserve=${LLMSERVE:-$here/build/release/src/cli/llmserve}
  model=${MODEL:-$here/../shared/models/stories260K.gguf}
  if [[ $# -ge 1 ]]; then
    work=$1
    mkdir -p "$work"
  else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
  fi
  text=$work/eval_samples.txt
  LLMSERVE=$llmserve MODEL=$model "$here/scripts/sampled-eval-text.sh" "$text"
}
