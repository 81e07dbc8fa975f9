"""The moverscore 1.0.3 package's ``moverscore_v2`` module, loaded with all-MiniLM-L6-v2.

Used only by the parity tests and ``benchmarks/bench_wmd.py`` (never by ``alignscore``).
``moverscore_v2`` loads distilbert-base-uncased from the Hugging Face hub onto ``cuda:0`` when it
is imported, reads the ``tokenizer.max_len`` attribute that transformers has since removed,
unpacks the model's output as a 3-tuple, uses ``np.float`` (gone from numpy 2) and builds idf
dictionaries in a multiprocessing pool. We execute the module's own source in a fresh module
namespace with exactly those lines redirected:

- the ``transformers`` star import and the four loading lines are replaced by objects we inject:
  its own tokenizer class (``DistilBertTokenizer``, a WordPiece tokenizer) loaded from the local
  MiniLM directory with ``max_len`` set to the model's limit, and MiniLM's ``BertModel`` wrapped
  to return ``(last_hidden_state, hidden_states, attentions)`` like the DistilBERT the module
  expects;
- ``device`` defaults become ``cpu``; ``np.float`` becomes ``np.float64`` (the same type);
- ``Pool`` is a serial stand-in (same results; no fork of a process that holds torch threads);
- the plotting helper at the end (matplotlib) is not loaded.

Everything that computes a score (tokenisation with [CLS]/[SEP], idf dictionaries, the zero
masses of punctuation / "##" subwords / stop words, the square union transport problem solved
by pyemd, ``1 - sum(flow * dist)``) runs as published.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterable

_LOADING = """model_name = 'distilbert-base-uncased'
device = 'cuda:0'
config = DistilBertConfig.from_pretrained(model_name, output_hidden_states=True, output_attentions=True)
tokenizer = DistilBertTokenizer.from_pretrained(model_name, do_lower_case=True)
model = DistilBertModel.from_pretrained(model_name, config=config)
model.eval()
model.to(device) """


class _SerialPool:
    """``multiprocessing.Pool`` stand-in that maps in this process."""

    def __init__(self, processes: int | None = None) -> None:
        pass

    def __enter__(self) -> "_SerialPool":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        return [fn(x) for x in items]


def _source() -> str:
    spec = importlib.util.find_spec("moverscore_v2")
    if spec is None or spec.origin is None:
        raise ImportError("the moverscore package (1.0.3) is not installed")
    return Path(spec.origin).read_text(encoding="utf-8")


def load_moverscore_v2(model_dir: str) -> types.ModuleType:
    """A private copy of ``moverscore_v2`` whose model is the BERT in ``model_dir`` (on CPU)."""
    import torch
    from transformers import AutoModel, DistilBertTokenizer

    src = _source()
    for old in (_LOADING, "from transformers import *", "import matplotlib.pyplot as plt"):
        if old not in src:
            raise RuntimeError(f"moverscore_v2 source changed; cannot find {old[:40]!r}")
    src = src.replace(_LOADING, "").replace("from transformers import *", "")
    src = src[: src.index("import matplotlib.pyplot as plt")]
    src = src.replace("np.float)", "np.float64)").replace("device='cuda:0'", "device='cpu'")

    tokenizer = DistilBertTokenizer.from_pretrained(model_dir, do_lower_case=True)
    tokenizer.max_len = tokenizer.model_max_length
    bert = AutoModel.from_pretrained(model_dir).eval()

    class TupleOutput(torch.nn.Module):
        """DistilBertModel(output_hidden_states, output_attentions) returned a 3-tuple."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple:
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask,
                             output_hidden_states=True, return_dict=True)
            return out.last_hidden_state, out.hidden_states, None

    name = f"moverscore_v2_local_{abs(hash(model_dir))}"
    module = types.ModuleType(name)
    module.__dict__.update(tokenizer=tokenizer, model=TupleOutput(bert).eval(), device="cpu",
                           model_name=model_dir)
    sys.modules[name] = module
    exec(compile(src, f"<moverscore_v2 ({model_dir})>", "exec"), module.__dict__)
    module.Pool = _SerialPool
    return module
