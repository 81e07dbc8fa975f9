"""Long texts in windows: hidden states of texts longer than the model's limit, without truncation.

A text of ``n`` content tokens between the special tokens its tokenizer adds (``prefix`` at the
start, e.g. [CLS] or <s>; ``suffix`` at the end, e.g. [SEP] or </s>) is cut into windows of
``width = limit - prefix - suffix`` content tokens whose starts are ``stride`` apart (the last
window ends at the text's end); each window is encoded as a text of its own, wrapped in the same
special tokens, so it is exactly ``limit`` tokens long. Each content token's state is taken from
the window where it is most central: the window that maximises its distance to the nearer edge
of the window's content, ``min(t - s, s + width - 1 - t)`` for a window starting at ``s`` (ties:
the earlier window). The text's own leading special tokens come from its first window, its
trailing ones from its last. A text within the limit is one window: its states are those of the
plain forward pass.

Cost: a text of ``n`` content tokens takes ``ceil((n - width) / stride) + 1`` windows of
``limit`` tokens each (with the default ``stride = width // 2``, about ``2 n / width``), i.e.
that many times a full-length forward pass.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

States = Callable[[torch.Tensor, torch.Tensor, Sequence[int]], torch.Tensor]


def window_starts(n: int, width: int, stride: int) -> list[int]:
    """Starts of the windows of ``width`` tokens over ``n`` tokens, ``stride`` apart, the last
    one ending at ``n`` (one window at 0 when ``n <= width``).

    Parameters
    ----------
    n, width, stride : int
        The text's tokens, a window's tokens and the tokens between window starts.

    Returns
    -------
    list of int
        The windows' first tokens, increasing.

    Examples
    --------
    >>> window_starts(10, width=4, stride=2), window_starts(3, width=4, stride=2)
    ([0, 2, 4, 6], [0])
    """
    if n <= width:
        return [0]
    starts = list(range(0, n - width + 1, stride))
    if starts[-1] + width < n:
        starts.append(n - width)
    return starts


def most_central(n: int, starts: Sequence[int], width: int) -> torch.Tensor:
    """``[n]``: for each token, the index (into ``starts``) of the window of ``width`` tokens
    where it is farthest from the window's nearer edge; ties go to the earlier window.

    Parameters
    ----------
    n : int
        The text's tokens.
    starts : sequence of int
        The windows' first tokens (:func:`window_starts`).
    width : int
        A window's tokens.

    Returns
    -------
    torch.Tensor
        ``[n]`` int64 window indices.

    Examples
    --------
    >>> most_central(10, [0, 2, 4, 6], width=4).tolist()
    [0, 0, 0, 1, 1, 2, 2, 3, 3, 3]
    """
    pos = torch.arange(n).unsqueeze(1)
    s = torch.tensor(list(starts)).unsqueeze(0)
    margin = torch.minimum(pos - s, s + width - 1 - pos)
    margin = margin.masked_fill((pos < s) | (pos >= s + width), -1)
    return margin.argmax(1)  # the first of equal maxima


def windowed_states(states: States, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    layers: Sequence[int], limit: int, prefix: int, suffix: int, stride: int) -> torch.Tensor:
    """``states`` (a forward pass over at most ``limit`` tokens per row) of a right-padded batch
    whose rows may be longer than ``limit``: ``[len(layers), B, T, D]``, long rows stitched from
    their windows (see the module's docstring), short rows as they are. Every window of the
    batch goes through one call of ``states``."""
    width = limit - prefix - suffix
    lengths = attention_mask.sum(1).tolist()
    pieces: list[torch.Tensor] = []
    plans: list[tuple[int, list[int]]] = []  # per row: its first piece, and its windows' starts
    for b, length in enumerate(lengths):
        ids = input_ids[b, :length]
        if length <= limit:
            plans.append((len(pieces), []))
            pieces.append(ids)
            continue
        head, content, tail = ids[:prefix], ids[prefix:length - suffix], ids[length - suffix:]
        starts = window_starts(len(content), width, stride)
        plans.append((len(pieces), starts))
        pieces += [torch.cat([head, content[s:s + width], tail]) for s in starts]
    wide = max(len(p) for p in pieces)
    batch = input_ids.new_zeros(len(pieces), wide)
    mask = attention_mask.new_zeros(len(pieces), wide)
    for row, piece in enumerate(pieces):
        batch[row, :len(piece)] = piece
        mask[row, :len(piece)] = 1
    hidden = states(batch, mask, layers)
    out = hidden.new_zeros(hidden.shape[0], input_ids.shape[0], input_ids.shape[1], hidden.shape[-1])
    for b, (first, starts) in enumerate(plans):
        length = lengths[b]
        if not starts:
            out[:, b, :length] = hidden[:, first, :length]
            continue
        n = length - prefix - suffix
        choice = most_central(n, starts, width)
        source = torch.tensor(starts)[choice]
        window = (first + choice).to(hidden.device)
        where = (prefix + torch.arange(n) - source).to(hidden.device)
        out[:, b, prefix:prefix + n] = hidden[:, window, where]
        out[:, b, :prefix] = hidden[:, first, :prefix]
        last = first + len(starts) - 1
        out[:, b, length - suffix:length] = hidden[:, last, limit - suffix:limit]
    return out
