"""The greedy steps of llama-server's /completion with each step's top-n log-probabilities,
for the reference files that scripts/arch-reference.sh and scripts/lora-reference.sh write.

  prompts(seed)                      three prompts: one token, a short one, one of 40 tokens
  greedy_steps(port, prompt, n_probs) the "step ID id:logprob ..." lines of 32 greedy steps

Byte tokens (ids 3..258 in every generated vocabulary) are banned from the greedy choice:
the server leaves out the probabilities of a step whose token ends in an unfinished UTF-8
character, which would put the steps out of line. The top-n are the raw logits'
(post_sampling_probs off); the bias does not touch them.
"""
import json
import random
import urllib.request


def prompts(seed):
    # Token ids from the vocabulary's byte and word-piece range, which every generated model has.
    rng = random.Random(seed)
    return [[1], [1] + [rng.randrange(3, 259) for _ in range(6)], [1] + [rng.randrange(3, 1000) for _ in range(39)]]


def greedy_steps(port, prompt, n_probs):
    ban = [[i, False] for i in range(3, 259)]
    body = {"prompt": prompt, "n_predict": 32, "n_probs": n_probs, "temperature": 0, "top_k": 1, "ignore_eos": True,
            "cache_prompt": False, "repeat_penalty": 1.0, "post_sampling_probs": False, "logit_bias": ban,
            "return_tokens": True}
    req = urllib.request.Request(f"http://localhost:{port}/completion", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req))
    assert r["tokens_evaluated"] == len(prompt), (len(prompt), {k: v for k, v in r.items() if k != "completion_probabilities"})
    steps = r["completion_probabilities"]
    assert [s["id"] for s in steps] == r["tokens"] and len(steps) == 32, (r["tokens"], [s["id"] for s in steps])
    return [f"step {s['id']} " + " ".join(f"{t['id']}:{t['logprob']:.7f}" for t in s["top_logprobs"]) for s in steps]
