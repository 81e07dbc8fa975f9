"""Ways into other frameworks, each an optional extra imported only by its own module:

- :mod:`alignscore.integrations.torchmetrics`: :class:`~alignscore.integrations.torchmetrics.AlignScore`,
  a ``torchmetrics.Metric`` for training loops (``pip install 'alignscore[torchmetrics]'``);
- :mod:`alignscore.integrations.hf_evaluate`: the Hugging Face ``evaluate`` module, a folder
  (:data:`~alignscore.integrations.hf_evaluate.EVALUATE_MODULE`) that ``evaluate.load`` accepts
  (``pip install 'alignscore[evaluate]'``);
- :mod:`alignscore.integrations.ray`: :func:`~alignscore.integrations.ray.score_dataset`, scoring a
  Ray Dataset on a pool of actors (``pip install 'alignscore[ray]'``; ``alignscore score --ray``).
"""
