"""The one planner of many runs (:func:`alignscore.config.plan_runs`): runs of one encoder share it
(each text encoded once for all of them), a run whose model is not here is skipped with the reason
or is an error, and every error of every run is collected before any is raised."""

from __future__ import annotations

import pytest

from alignscore.cli.options import FLAGS
from alignscore.config import RunSources, plan_runs, run_spec, sources_of
from alignscore.encoders.layers import model_available
from alignscore.errors import ConfigError, ConfigErrors
from alignscore.scorer import score_together
from helpers import counted_forward

CANDS = ["the cat sat on the mat", "a dog ran in the park", "it rained all day long"]
REFS = ["a cat was sitting on the mat", "the dog was running in a park", "the rain did not stop all day"]
MISSING = "no-such-org/no-such-model-xyz"


def _spec(model: str, **options: object):
    return run_spec({"model": model, "batch_size": 64, "layer": 2, **options})


def test_runs_of_one_encoder_share_it_and_each_text_is_encoded_once(tiny_bert_dir, tiny_roberta_dir):
    specs = [_spec(tiny_bert_dir, layer=1), _spec(tiny_roberta_dir, layer=2),
             _spec(tiny_bert_dir, layer=3, aligner="wmd", n_gram=1), _spec(tiny_bert_dir, layer=2, dtype="bfloat16")]
    plan = plan_runs(specs)
    scorers = plan.scorers()
    assert plan.groups() == [[0, 2], [1], [3]]  # equal encoder specs, one group; another dtype is another encoder
    assert scorers[0].encoder is scorers[2].encoder and scorers[0].encoder is not scorers[3].encoder
    with counted_forward() as alone:
        scorers[0].score(CANDS, REFS)
    with counted_forward() as together:
        both = score_together([scorers[0], scorers[2]], CANDS, REFS)
    assert alone["n"] >= 1 and together["n"] == alone["n"]  # the second run of the encoder encodes nothing more
    assert both[0].f1.tolist() == scorers[0].score(CANDS, REFS).f1.tolist()


def test_a_model_not_on_this_machine_is_skipped_with_the_reason_or_is_an_error(tiny_bert_dir):
    assert model_available(tiny_bert_dir) and not model_available(MISSING)
    specs = [_spec(tiny_bert_dir), _spec(MISSING)]
    plan = plan_runs(specs, download=False, skip_missing=True)
    here, missing = plan.runs
    assert here.scorer is not None and here.skipped is None
    assert missing.scorer is None and missing.spec == specs[1]
    assert missing.skipped == f"model {MISSING!r} is not on this machine (nothing is downloaded without download=)"
    assert plan.scorers() == [here.scorer] and plan.groups() == [[0]]
    with pytest.raises(ConfigError, match=f"^model=: model {MISSING!r} is not on this machine .*skip_missing="):
        plan_runs(specs, download=False)


def test_a_model_path_that_does_not_exist_is_missing_where_the_sources_name_it(tmp_path):
    path = str(tmp_path / "no-such-model")
    run = RunSources(sources_of({"model": path}, FLAGS))
    (skipped,) = plan_runs([run], download=False, skip_missing=True).runs
    assert skipped.spec is None and skipped.skipped == f"model {path!r} is not on this machine " \
                                                       "(nothing is downloaded without download=)"
    with pytest.raises(ConfigError, match=f"^--model: no such model folder or file: {path}; skip_missing="):
        plan_runs([run], download=False)


def test_every_error_of_every_run_is_collected_before_any_is_raised(tiny_bert_dir):
    runs = [_spec(tiny_bert_dir, layer=9), _spec(tiny_bert_dir, layer=2), _spec(MISSING),
            RunSources(sources_of({"model": tiny_bert_dir, "aligner": "greedy", "n_gram": 2}, FLAGS)),
            _spec(tiny_bert_dir, layer=9)]  # the same error twice is said once
    with counted_forward() as calls, pytest.raises(ConfigErrors) as caught:
        plan_runs(runs, download=False)
    assert calls["n"] == 0
    messages = [str(e) for e in caught.value.errors]
    assert len(messages) == 3 and str(caught.value).splitlines() == messages
    assert messages[0].startswith("layer=: layer 9 does not exist: the model has layers 0..4")
    assert messages[1].startswith(f"model=: model {MISSING!r} is not on this machine")
    assert messages[2].startswith("--n-gram: ")
    # with the missing model skipped, the option errors are still every one reported
    with pytest.raises(ConfigErrors) as caught:
        plan_runs(runs, download=False, skip_missing=True)
    assert len(caught.value.errors) == 2


def test_one_error_is_raised_as_itself(tiny_bert_dir):
    with pytest.raises(ConfigError, match="^layer=: layer 9 does not exist") as caught:
        plan_runs([_spec(tiny_bert_dir, layer=9), _spec(tiny_bert_dir, layer=9)])
    assert not isinstance(caught.value, ConfigErrors)
