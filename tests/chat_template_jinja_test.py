#!/usr/bin/env python3
"""Every chat template in tests/data/chat_templates, rendered by llmserve's Jinja
interpreter (`llmserve chat-template`) and by python3-jinja2 (an independent
implementation) set up as Hugging Face's transformers sets it up: a sandboxed
environment with trim_blocks, lstrip_blocks and loop controls, tojson as
json.dumps(ensure_ascii=False), raise_exception and strftime_now. Each template
meets several conversations, with and without tools; the two renderings must be
byte-identical, or both must refuse the conversation.

Each template is also loaded the way a Hugging Face model directory carries it
(`llmserve chat-template -m DIR`): tokenizer_config.json's "chat_template" as a
string, as a list of named templates, or a chat_template.jinja file, in turn, with
the BOS/EOS texts taken from tokenizer_config.json instead of the request.

The server's side of the conversion is tested too: the request goes to llmserve in
the OpenAI shape (tool-call arguments as JSON text), while the context given to
jinja2 is built here, independently, in the shape transformers documents (arguments
as objects).

Usage: chat_template_jinja_test.py LLMSERVE_BIN TEMPLATES_DIR
Exit 77 (skipped) when jinja2 is not installed.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime

try:
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2.exceptions import TemplateError
except ImportError:
    print("SKIP: python3-jinja2 is not installed (apt-get install python3-jinja2)")
    sys.exit(77)

BOS, EOS = "<s>", "</s>"

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two numbers",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}},
]

CALL = {"id": "abcDEF123", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}

CONVERSATIONS = {
    "system_and_turns": {"messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello there."},
        {"role": "user", "content": "What is 2+2?"}]},
    "user_only_no_generation_prompt": {"add_generation_prompt": False, "messages": [
        {"role": "user", "content": "  spaced text \n"},
        {"role": "assistant", "content": "ok"}]},
    "unicode_and_quotes": {"messages": [
        {"role": "user", "content": "Caf\u00e9 \"quoted\" 'single' <tag> {{ not a tag }} \u4f60\u597d"}]},
    "tools": {"tools": TOOLS, "messages": [
        {"role": "system", "content": "Use tools when they help."},
        {"role": "user", "content": "Weather in Paris?"}]},
    "tool_history": {"tools": TOOLS, "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "abcDEF123", "content": "{\"temp\": 21}"},
        {"role": "user", "content": "Thanks. And 2+3?"}]},
    "parallel_calls_with_text": {"tools": TOOLS, "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris, and 2+3?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            CALL, {"id": "xyzXYZ789", "type": "function",
                   "function": {"name": "add", "arguments": "{\"a\": 2.5, \"b\": 3}"}}]},
        {"role": "tool", "tool_call_id": "abcDEF123", "content": "sunny"},
        {"role": "tool", "tool_call_id": "xyzXYZ789", "content": "5.5"}]},
}


def hf_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


def hf_context(conv):
    """The variables transformers passes: tool-call arguments as objects."""
    messages = copy.deepcopy(conv["messages"])
    for m in messages:
        for call in m.get("tool_calls", []):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return {"messages": messages, "tools": conv.get("tools"), "bos_token": BOS, "eos_token": EOS,
            "add_generation_prompt": conv.get("add_generation_prompt", True)}


# A tokenizer.json just large enough to name the BOS and EOS tokens.
TINY_TOKENIZER = {
    "version": "1.0", "normalizer": None, "pre_tokenizer": None, "post_processor": None,
    "added_tokens": [{"id": i, "content": t, "special": True, "normalized": False} for i, t in
                     enumerate(["<unk>", BOS, EOS])],
    "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
    "model": {"type": "BPE", "unk_token": "<unk>", "vocab": {"<unk>": 0, BOS: 1, EOS: 2, "\u2581": 3}, "merges": []},
}


def model_dir(workdir, source, form):
    """A tokenizer-only model directory holding `source` in one of the three forms."""
    d = os.path.join(workdir, "model")
    os.makedirs(d, exist_ok=True)
    jinja_file = os.path.join(d, "chat_template.jinja")
    if os.path.exists(jinja_file):
        os.remove(jinja_file)
    config = {"bos_token": {"__type": "AddedToken", "content": BOS}, "eos_token": EOS}
    if form == 0:
        config["chat_template"] = source
    elif form == 1:
        config["chat_template"] = [{"name": "tool_use", "template": "unused"}, {"name": "default", "template": source}]
    else:
        with open(jinja_file, "w", encoding="utf-8") as f:
            f.write(source)
    for name, data in (("tokenizer.json", TINY_TOKENIZER), ("tokenizer_config.json", config)):
        with open(os.path.join(d, name), "w", encoding="utf-8") as f:
            json.dump(data, f)
    return d


def llmserve_render(binary, template_path, conv, workdir, directory=None):
    request = dict(conv)
    if directory is None:
        request["bos_token"], request["eos_token"] = BOS, EOS
    path = os.path.join(workdir, "request.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(request, f)
    source = ["-m", directory] if directory else ["--template", template_path]
    p = subprocess.run([binary, "chat-template", *source, "--request", path], capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "surrogateescape"), p.stderr.decode("utf-8", "replace")


def main():
    binary, templates = sys.argv[1], sys.argv[2]
    env = hf_environment()
    names = sorted(n for n in os.listdir(templates) if n.endswith(".jinja"))
    if not names:
        print(f"FAIL: no templates in {templates}")
        return 1
    failures, compared, refused, tool_renders = [], 0, 0, 0
    with tempfile.TemporaryDirectory() as workdir:
        for index, name in enumerate(names):
            path = os.path.join(templates, name)
            with open(path, encoding="utf-8") as f:
                source = f.read()
            template = env.from_string(source)
            directory = model_dir(workdir, source, index % 3)
            runs = [(c, conv, None) for c, conv in CONVERSATIONS.items()]
            runs += [(c + " (model directory)", conv, directory) for c, conv in CONVERSATIONS.items()
                     if c in ("system_and_turns", "tools")]
            for conv_name, conv, from_dir in runs:
                try:
                    expected, expected_error = template.render(**hf_context(conv)), None
                except Exception as e:  # the template refuses the conversation
                    expected, expected_error = None, f"{type(e).__name__}: {e}"
                rc, got, err = llmserve_render(binary, path, conv, workdir, from_dir)
                where = f"{name} / {conv_name}"
                if expected_error is not None:
                    refused += 1
                    if rc == 0:
                        failures.append(f"{where}: jinja2 refused ({expected_error}) but llmserve rendered:\n{got!r}")
                    continue
                compared += 1
                tool_renders += conv_name == "tools" and "get_weather" in expected
                if rc != 0:
                    failures.append(f"{where}: llmserve failed: {err.strip()}")
                elif got != expected:
                    at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
                    failures.append(f"{where}: differs at {at}:\n  jinja2:   {expected[max(0, at - 60):at + 60]!r}\n"
                                    f"  llmserve: {got[max(0, at - 60):at + 60]!r}")
    print(f"{len(names)} templates x {len(CONVERSATIONS)} conversations (and 2 each from a model directory): "
          f"{compared} renderings compared, "
          f"{refused} refused by both")
    for f in failures:
        print("FAIL:", f)
    # The tool cases test something only where templates write the tools.
    print(f"{tool_renders} templates write the tools they are given")
    if tool_renders < 4:
        failures.append(f"only {tool_renders} templates rendered the tools")
    print(f"{compared - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
