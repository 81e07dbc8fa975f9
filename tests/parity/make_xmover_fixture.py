"""Write the XMoverScore parity fixture (``xmover_reference_scores.json``) by running the
reference code's scoring functions (not part of alignscore, not shipped with it).

The reference is ``word_mover_score`` and ``lm_perplexity`` in ``score_utils_2.py`` of the public repository
AIPHES/ACL20-Reference-Free-MT-Evaluation (Apache-2.0; Zhao et al., ACL 2020). Clone it and
give its folder (or the folder holding a copy of that one file)::

    git clone https://github.com/AIPHES/ACL20-Reference-Free-MT-Evaluation ref
    PYTHONPATH=$PWD python tests/parity/make_xmover_fixture.py ref

It needs ``pyemd`` (the reference's solver). The reference runs here on the CPU with the
packaged real model all-MiniLM-L6-v2 (BERT-type, so the reference's literal ``[CLS]``, ``[SEP]``
and ``[PAD]`` tokens exist in its vocabulary), at layer 4, on the first 20 short German sources of
WMT16 de-en and their MT outputs, for every remapping (none, CLP with a random orthogonal matrix,
UMD with a random unit vector; both regenerated from a seed by :func:`clp_matrix` and
:func:`umd_vector`) and for n-grams and flow dropout as in :data:`CASES`. Two shims adapt the
current ``transformers`` to what the reference was written for (documented where defined).

The LM term: ``lm_perplexity`` (batch size 1, as the reference's ``demo.py`` calls it) on the same
translations with a tiny causal LM that :func:`byte_gpt2` builds from a seed (a one-block GPT-2 over
the 256 bytes, no merges, its weights drawn by numpy, so that a test rebuilds the same model
without a download), and the reference's ``metric_combination(xmoverscores, lm_scores, [1, 0.1])``
of the paper's run (CLP, bigrams, dropout 0.3) with it (``lm`` in the fixture).

Each run records the reference's scores and, from the flows its solver returned (recorded by
:class:`FlowRecorder`), per pair the number of flows its dropout split off from equal ones by
rounding and the score with those kept (:func:`tie_analysis`). Runs marked ``states=unit`` give
the reference unit-length token states (its n-gram vectors are means of raw states, alignscore's
``ngram_mean="states"``; they are not the reference's numbers: they check ``ngram_mean="unit"``).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "xmover_reference_scores.json"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "wmt16-da-seg"
MODEL, LAYER, SEED, PAIRS, MAX_WORDS = "all-MiniLM-L6-v2", 4, 46, 20, 20
CASES = [(2, 0.3), (1, 0.3), (2, 0.0)]  # (n_gram, dropout_rate); the paper's is (2, 0.3)
MAPPINGS = ("none", "CLP", "UMD")


def clp_matrix(dim: int, seed: int = SEED) -> np.ndarray:
    """A random orthogonal ``[dim, dim]`` float64 matrix: ``Q`` of the QR decomposition of
    ``numpy.random.default_rng(seed).standard_normal((dim, dim))``, its columns signed so that
    ``R`` has a positive diagonal (so it does not depend on the LAPACK build's sign choices)."""
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
    return q * np.sign(np.diag(r))


def umd_vector(dim: int, seed: int = SEED) -> np.ndarray:
    """A random unit ``[dim]`` float64 vector from ``numpy.random.default_rng(seed + 1)``."""
    b = np.random.default_rng(seed + 1).standard_normal(dim)
    return b / np.linalg.norm(b)


def byte_gpt2(out: Path, seed: int = SEED) -> str:
    """A one-block GPT-2 (64 wide, 256 positions) over byte-level tokens (the 256 bytes, no merges:
    every text tokenizes, one token a byte) with weights drawn from
    ``numpy.random.default_rng(seed + 2)`` in the order of the parameters' sorted names (layer norm
    gains about 1), saved with its tokenizer into ``out``; returns the folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {ch: i for i, ch in enumerate(alphabet)} | {"<|endoftext|>": len(alphabet)}
    tok = Tokenizer(models.BPE(vocab, []))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", unk_token="<|endoftext|>",
                            bos_token="<|endoftext|>").save_pretrained(out)
    config = GPT2Config(vocab_size=len(vocab), n_layer=1, n_embd=64, n_head=4, n_positions=256, n_inner=128,
                        bos_token_id=len(alphabet), eos_token_id=len(alphabet))
    model = GPT2LMHeadModel(config).eval()
    rng = np.random.default_rng(seed + 2)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            values = rng.standard_normal(tuple(param.shape))
            gain = name.endswith(".weight") and ("ln_" in name or "ln_f" in name)
            param.copy_(torch.from_numpy(1.0 + 0.1 * values if gain else 0.3 * values))
    model.save_pretrained(out)
    return str(out)


def pairs(data: Path = DATA, n: int = PAIRS) -> tuple[list[str], list[str]]:
    """The first ``n`` WMT16 de-en (source, MT output) pairs whose both sides have at most
    :data:`MAX_WORDS` words."""
    src = (data / "DAseg.newstest2016.source.de-en").read_text(encoding="utf-8").splitlines()
    mt = (data / "DAseg.newstest2016.mt-system.de-en").read_text(encoding="utf-8").splitlines()
    keep = [(s, h) for s, h in zip(src, mt) if len(s.split()) <= MAX_WORDS and len(h.split()) <= MAX_WORDS][:n]
    return [s for s, _ in keep], [h for _, h in keep]


class TokenizerShim:
    """What the reference calls on its tokenizer (pytorch-pretrained-bert's ``BertTokenizer``):
    ``tokenize(text)`` (no special tokens) and ``convert_tokens_to_ids(tokens)``, where its
    literal ``"[CLS]"``, ``"[SEP]"`` and ``"[PAD]"`` stand for the model's own special tokens."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.special = {"[CLS]": tokenizer.cls_token, "[SEP]": tokenizer.sep_token, "[PAD]": tokenizer.pad_token}

    def tokenize(self, text: str) -> list[str]:
        return self.tokenizer.tokenize(text)

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        return self.tokenizer.convert_tokens_to_ids([self.special.get(t, t) for t in tokens])


class ModelShim(torch.nn.Module):
    """The model as the reference unpacks it, ``output, _, hidden_states, _ = model(...)``:
    (last states, pooled output, all layers' states with the embeddings first, attentions).
    ``unit``: every token's states scaled to unit length (not the reference's input: the runs
    that show what its n-gram pooling of raw states makes of the scores)."""

    def __init__(self, model: torch.nn.Module, unit: bool = False) -> None:
        super().__init__()
        self.model, self.unit = model, unit

    def forward(self, input_ids: torch.Tensor, token_type_ids: Any = None,
                attention_mask: torch.Tensor | None = None) -> tuple[Any, ...]:
        out = self.model(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                         output_hidden_states=True)
        states = out.hidden_states
        if self.unit:
            states = tuple(h / h.norm(dim=-1, keepdim=True) for h in states)
        return out.last_hidden_state, None, states, None


class FlowRecorder:
    """Stands in for the reference's ``emd_with_flow`` (pyemd's), recording each pair's
    source-to-translation block of the flow and the distances, so that the script can say
    where the reference's flow dropout split flows that are equal in exact arithmetic."""

    def __init__(self, solve: Any) -> None:
        self.solve, self.blocks = solve, []

    def __call__(self, c1: np.ndarray, c2: np.ndarray, dist: np.ndarray) -> Any:
        out = self.solve(c1, c2, dist)
        n = int((np.asarray(c1) > 1e-6).sum())  # the source's units carry 1/n + 1e-9, the others 1e-9
        self.blocks.append((np.stack(out[1])[:n, n:], np.asarray(dist)[:n, n:]))
        return out


def tie_analysis(flow: np.ndarray, dist: np.ndarray, rate: float, tie: float = 1e-12) -> tuple[int, float]:
    """For one pair's recorded flow: how many nonzero flows the reference's rule (every flow
    below the ``max(int(q * rate), 1)``-th smallest of the ``q`` nonzero ones goes) drops
    although they are within ``tie`` of that threshold (equal in exact arithmetic), and the
    score ``1 / (1 + sum flow * dist)`` with those kept."""
    flows = np.sort(flow[flow != 0])
    threshold = flows[max(int(len(flows) * rate), 1) - 1]
    split = int(((flow < threshold) & (flow >= threshold - tie) & (flow != 0)).sum())
    kept = np.where(flow < threshold - tie, 0.0, flow)
    return split, float(1.0 / (1.0 + (kept * dist).sum()))


def load_reference(folder: Path) -> Any:
    """The reference's ``score_utils_2`` module, imported from ``folder``."""
    spec = importlib.util.spec_from_file_location("score_utils_2", folder / "score_utils_2.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no score_utils_2.py in {folder}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def commit_of(folder: Path) -> str | None:
    """The reference's git commit, when ``folder`` is (in) a git checkout or a bare repository."""
    try:
        return subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference", type=Path, help="the folder holding the reference's score_utils_2.py")
    parser.add_argument("--commit", help="the reference's commit, where the folder is not a git checkout")
    parser.add_argument("--data", type=Path, default=DATA, help="the WMT16 DAseg folder (with its source files)")
    parser.add_argument("-o", "--output", type=Path, default=FIXTURE)
    args = parser.parse_args(argv)

    import pyemd
    import transformers
    from transformers import AutoModel, AutoTokenizer

    from alignscore.encoders.layers import packaged_model_dir

    reference = load_reference(args.reference)
    folder = packaged_model_dir(MODEL)
    if folder is None:
        raise SystemExit(f"the packaged model {MODEL} is not installed")
    torch.manual_seed(0)
    encoder = AutoModel.from_pretrained(str(folder)).eval()
    recorder = FlowRecorder(reference.emd_with_flow)
    reference.emd_with_flow = recorder
    tokenizer = TokenizerShim(AutoTokenizer.from_pretrained(str(folder)))
    src, hyps = pairs(args.data)
    dim = int(encoder.config.hidden_size)
    projection = torch.tensor(clp_matrix(dim), dtype=torch.float)
    bias = torch.tensor(umd_vector(dim), dtype=torch.float).unsqueeze(0)  # the reference reads bias[0]
    import tempfile

    from transformers import AutoModelForCausalLM

    with tempfile.TemporaryDirectory() as tmp:
        lm_dir = byte_gpt2(Path(tmp))
        lm = AutoModelForCausalLM.from_pretrained(lm_dir).eval()
        lm_scores = [float(v) for v in reference.lm_perplexity(lm, hyps, AutoTokenizer.from_pretrained(lm_dir),
                                                                 batch_size=1, device="cpu")]
    runs = {}
    for states, n_gram, rate in [("raw", n, r) for n, r in CASES] + [("unit", n, r) for n, r in CASES if n > 1]:
        model = ModelShim(encoder, unit=states == "unit")
        for mapping in MAPPINGS:
            recorder.blocks = []
            got = reference.word_mover_score(mapping, projection, bias, model, tokenizer, src, hyps, n_gram=n_gram,
                                             layer=LAYER, dropout_rate=rate, batch_size=256, device="cpu")
            ties = [tie_analysis(flow, dist, rate) for flow, dist in recorder.blocks]
            runs[f"{mapping},n={n_gram},dropout={rate},states={states}"] = {
                "mapping": mapping, "n_gram": n_gram, "dropout_rate": rate, "states": states,
                "scores": [float(s) for s in got],
                "split_ties": [t[0] for t in ties], "scores_ties_kept": [t[1] for t in ties]}
    fixture = {
        "produced_by": {
            "script": "tests/parity/make_xmover_fixture.py",
            "reference": "https://github.com/AIPHES/ACL20-Reference-Free-MT-Evaluation score_utils_2.py "
                         "word_mover_score",
            "reference_commit": args.commit or commit_of(args.reference),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                         "transformers": transformers.__version__, "numpy": np.__version__,
                         "pyemd": getattr(pyemd, "__version__", "?")},
            "device": "cpu",
        },
        "model": MODEL, "layer": LAYER, "seed": SEED,
        "clp": "clp_matrix(hidden size, seed): orthogonal, float64 (float32 in the reference)",
        "umd": "umd_vector(hidden size, seed): unit, float64 (float32 in the reference)",
        "sources": src, "translations": hyps,
        "runs": runs,
        "lm": {"model": "byte_gpt2(folder, seed)", "scores": lm_scores, "weight": 0.1,
               "combined_run": "CLP,n=2,dropout=0.3,states=raw",
               "combined": [float(v) for v in np.asarray(runs["CLP,n=2,dropout=0.3,states=raw"]["scores"])
                            + 0.1 * np.asarray(lm_scores)],
               "combined_ties_kept": [float(v) for v in
                                      np.asarray(runs["CLP,n=2,dropout=0.3,states=raw"]["scores_ties_kept"])
                                      + 0.1 * np.asarray(lm_scores)],
               "how": "metric_combination(xmoverscores, lm_scores, [1, 0.1]) as in the reference's demo.py"},
    }
    args.output.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.output}: {len(runs)} runs of {len(src)} pairs")


if __name__ == "__main__":
    main()
