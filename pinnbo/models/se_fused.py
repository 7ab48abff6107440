"""The Hermite products of :mod:`pinnbo.models.se_kernel`'s operator blocks and of their lengthscale
gradient, fused on the CPU: the same arithmetic, operation for operation, so the same values bit
for bit, in one pass over each block instead of one pass per factor.

A block Σ_γ C_γ ∘ k Π_i ℓ_i^{−γ_i} He_{γ_i}(u_i) built from whole-matrix tensor operations reads and
writes the block once per Hermite step, per factor and per product: about seventy passes over the
beam's 256 × 256 collocation block per evaluation of the evidence, each bound by memory bandwidth.
Here each entry's Hermite values live in registers while every coefficient group adds its term.
The kernel matrix k and the differences u still come from torch (its exponential is not the C
library's to the last bit), and so do the gradient's sums (a reduction's order sets its rounding):
the kernels write the matrices those sums read.

:func:`pinnbo.models.se_kernel.operator_block` and :func:`pinnbo.models.se_kernel.lengthscale_gradient`
call these where nothing differentiates through them on the CPU; autograd (the acquisition's
gradient) and CUDA take the tensor code.
"""

from __future__ import annotations

import numba
import numpy as np
import torch


class Plan:
    """A block's coefficient groups as flat arrays, in the order the tensor code visits them: for
    each equation pair (e, f), row-major, each (γ, window) group of
    :func:`pinnbo.models.se_kernel.coefficient_products`, and within it each product
    sign · c_α ⊗ c'_β that its C_γ sums (``factors``, that function's ``Products.factors``). The
    kernels form C_γ's entries from the vectors as the tensor code formed the matrix, instead of
    reading a matrix per group."""

    def __init__(self, factors, N: int, M: int, d: int):
        pairs, gammas, windows, first, starts = [], [], [], [], [0]
        signs, left, right, chunks = [], [], [], []
        size = 0

        def vector(c) -> int:
            nonlocal size
            if c is None:
                return -1
            values = np.ascontiguousarray(torch.as_tensor(c, dtype=torch.float64).cpu().numpy()).reshape(-1)
            chunks.append(values)
            size += len(values)
            return size - len(values)

        for e, groups_row in enumerate(factors):
            for f, groups in enumerate(groups_row):
                for g, ((gamma, window), products) in enumerate(groups.items()):
                    r = (0, N) if window is None or window[0] is None else window[0]
                    s = (0, M) if window is None or window[1] is None else window[1]
                    pairs.append((e, f))
                    gammas.append(gamma)
                    windows.append((r[0], r[1], s[0], s[1]))
                    first.append(g == 0 and window is None)
                    for sign, ca, cb in products:
                        signs.append(sign)
                        left.append(vector(ca))
                        right.append(vector(cb))
                    starts.append(len(signs))
        n = len(pairs)
        self.pairs = np.asarray(pairs, dtype=np.int64).reshape(n, 2)
        self.gammas = np.asarray(gammas, dtype=np.int64).reshape(n, d)
        self.windows = np.asarray(windows, dtype=np.int64).reshape(n, 4)
        self.first = np.asarray(first, dtype=np.bool_)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.signs = np.asarray(signs, dtype=np.float64)
        self.left = np.asarray(left, dtype=np.int64)
        self.right = np.asarray(right, dtype=np.int64)
        self.vectors = np.concatenate(chunks) if chunks else np.zeros(0)
        self.shape = (len(factors) * N, (len(factors[0]) if factors else 0) * M)
        self.order = int(self.gammas.max()) if n else 0
        # the gradient's groups: one per (γ, window), its occurrences over the equation pairs in
        # the order the tensor code sums them
        keys: dict = {}
        for index, (gamma, window) in enumerate(zip(gammas, windows)):
            keys.setdefault((tuple(gamma), window), []).append(index)
        self.key_groups = np.asarray([o[0] for o in keys.values()], dtype=np.int64)
        self.key_occurrences = np.concatenate([np.asarray(o, dtype=np.int64) for o in keys.values()]) \
            if keys else np.zeros(0, dtype=np.int64)
        self.key_starts = np.cumsum([0] + [len(o) for o in keys.values()]).astype(np.int64)
        # the gradient's corrections, one per group and input of positive order, each summed over
        # its window's rows into a row of its columns, in one buffer, with the input each entry
        # belongs to (one weighted count then sums every input's at once), and where each group's
        # begin
        inputs, slots, size = [], [], 0
        for gamma, (r0, r1, c0, c1) in keys:
            slots.append(size)
            for i, n in enumerate(gamma):
                if n:
                    inputs += [i] * (c1 - c0)
                    size += c1 - c0
        self.key_slots = np.asarray(slots, dtype=np.int64)
        self.correction_size = size
        self.correction_inputs = np.asarray(inputs, dtype=np.int64)

    def coefficients(self) -> tuple:
        return self.starts, self.signs, self.left, self.right, self.vectors


def powers(lengthscale: torch.Tensor, order: int) -> tuple[np.ndarray, np.ndarray]:
    """ℓ_i^{−n} and −n ℓ_i^{−n−1} for n ≤ ``order``, each computed as the tensor code computes it
    (a 0-d tensor's power) so that the products round alike. An evaluation's blocks and their
    gradients share one lengthscale: the last few are kept."""
    key = (tuple(lengthscale.tolist()), order)
    cached = _POWERS.get(key)
    if cached is not None:
        return cached
    d = len(lengthscale)
    factor, correction = np.ones((d, order + 1)), np.zeros((d, order + 1))
    for i in range(d):
        for n in range(1, order + 1):
            factor[i, n] = float(lengthscale[i] ** (-n))
            correction[i, n] = float(-n * lengthscale[i] ** (-n - 1))
    if len(_POWERS) >= 8:
        _POWERS.clear()
    _POWERS[key] = (factor, correction)
    return factor, correction


_POWERS: dict = {}


def block(derivatives, plan: Plan, symmetric: bool = False) -> torch.Tensor:
    """The operator block of ``plan`` on ``derivatives`` (a
    :class:`pinnbo.models.se_kernel.SEDerivatives`), as the tensor code builds it. ``symmetric``:
    one operator on one point set, so the block is symmetric: its lower triangle (of the equations
    stacked) is built and mirrored, half the work."""
    u, k = _arrays(derivatives)
    factor, _ = powers(derivatives.lengthscale, plan.order)
    out = np.zeros(plan.shape)
    _block(u, k, factor, plan.pairs, plan.gammas, plan.windows, *plan.coefficients(), plan.first, plan.order,
           symmetric, out)
    return torch.from_numpy(out)


def gradient_terms(derivatives, plan: Plan, weights: torch.Tensor, lower: bool = False) -> tuple[torch.Tensor, list]:
    """What :func:`pinnbo.models.se_kernel.lengthscale_gradient` sums: the weighted block Σ_γ W_γ ∘
    K_γ (N, M), and each input's correction, the sum over the groups of W_γ ∘ K_γ's other factors ∘
    its correction. The corrections are summed over the rows in the loops, column by column, as
    they are made: a matrix per group and input written out and summed again would move more memory
    than the loops compute (their sums then agree with the tensor code's to round-off, not to the
    bit). ``lower``: the weights vanish above the diagonal of the equations stacked, whose entries
    are then left out."""
    u, k = _arrays(derivatives)
    N, M = k.shape
    factor, correction = powers(derivatives.lengthscale, plan.order)
    W = np.ascontiguousarray(weights.detach().cpu().numpy())
    buffer = np.zeros(plan.correction_size)
    total = np.zeros((N, M))
    _gradient(u, k, factor, correction, plan.pairs, plan.gammas, plan.windows, *plan.coefficients(),
              plan.key_groups, plan.key_occurrences, plan.key_starts, plan.key_slots, plan.order, W, lower,
              total, buffer)
    corrections = np.bincount(plan.correction_inputs, weights=buffer, minlength=len(u))
    return torch.from_numpy(total), list(torch.from_numpy(corrections))


def usable(*tensors: torch.Tensor) -> bool:
    """Whether the fused kernels can stand in for the tensor code: on the CPU in float64, with
    nothing to differentiate through."""
    for t in tensors:
        if t.device.type != "cpu" or t.dtype != torch.float64:
            return False
        if torch.is_grad_enabled() and t.requires_grad:
            return False
    return True


def _arrays(derivatives) -> tuple[np.ndarray, np.ndarray]:
    return (np.ascontiguousarray(derivatives.u.detach().numpy()),
            np.ascontiguousarray(derivatives.k.detach().numpy()))


def _compiled(function):
    """``function`` compiled by numba and cached where numba finds a writable directory (beside the
    module, or the user's cache); compiled afresh in each process where it finds none, rather than
    failing on a read-only installation."""
    try:
        return numba.njit(cache=True)(function)
    except RuntimeError:
        return numba.njit(function)


# Every inner loop runs from 0 over views: numba wraps negative indices, and only an index that
# LLVM can see is non-negative lets it drop that test and vectorise the loop.

@_compiled
def _hermite_row(u, a, order, H):
    """He₀ … He_order of row a of u, (d, order + 1, M), as :class:`SEDerivatives` recurses:
    He₂ = u·He₁ − 1, Heₙ = u·Heₙ₋₁ − (n − 1)·Heₙ₋₂."""
    d, _, M = u.shape
    for i in range(d):
        x, h = u[i, a], H[i]
        for b in range(M):
            h[0, b] = 1.0
        if order >= 1:
            for b in range(M):
                h[1, b] = x[b]
        if order >= 2:
            for b in range(M):
                h[2, b] = x[b] * x[b] - 1.0
        for n in range(3, order + 1):
            m = float(n - 1)
            h2, h1, h0 = h[n], h[n - 1], h[n - 2]
            for b in range(M):
                h2[b] = x[b] * h1[b] - m * h0[b]


@_compiled
def _factors(k, factor, gammas, g, skip, a, c0, c1, H, out):
    """k ∏_i (·ℓ_i^{−n_i})(·He_{n_i}(u_i)) over the inputs of positive order but ``skip``, in input
    order (:meth:`SEDerivatives.combined`), on row a's columns c0 … c1 − 1, into out[:c1 − c0]; the
    first factor multiplies k's row as it is read, the same product."""
    width = c1 - c0
    row = k[a, c0:c1]
    started = False
    for i in range(gammas.shape[1]):
        n = gammas[g, i]
        if n and i != skip:
            p, x = factor[i, n], H[i, n, c0:c1]
            if started:
                for b in range(width):
                    out[b] = (out[b] * p) * x[b]
            else:
                for b in range(width):
                    out[b] = (row[b] * p) * x[b]
                started = True
    if not started:
        for b in range(width):
            out[b] = row[b]


@_compiled
def _coefficients(starts, signs, left, right, vectors, g, a, width, out):
    """Group g's coefficients on row a of its window (``width`` columns), into out[:width]:
    Σ_p (sign_p · c_α,p[a]) · c'_β,p[b], summed in order, as the tensor code formed C_γ."""
    for p in range(starts[g], starts[g + 1]):
        t = signs[p]
        if left[p] >= 0:
            t = t * vectors[left[p] + a]
        first = p == starts[g]
        if right[p] >= 0:
            c = vectors[right[p]:right[p] + width]
            if first:
                for b in range(width):
                    out[b] = t * c[b]
            else:
                for b in range(width):
                    out[b] = out[b] + t * c[b]
        elif first:
            for b in range(width):
                out[b] = t
        else:
            for b in range(width):
                out[b] = out[b] + t


@_compiled
def _stop(pair_row, pair_column, a, c1):
    """Where row a's columns of a window stop within the lower triangle of the equations stacked
    (row e·N + a, column f·N + b): all of them below the diagonal's blocks (e > f), up to b = a on
    them (e = f), none above (e < f, −1)."""
    if pair_row > pair_column:
        return c1
    if pair_row == pair_column:
        return min(c1, a + 1)
    return -1


@_compiled
def _positive_inputs(gammas):
    """Per group, once per call rather than per row: how many inputs have positive order (three
    standing for three or more) and the first two of them in input order (−1 where absent)."""
    out = np.full((gammas.shape[0], 3), -1, dtype=np.int64)
    for g in range(gammas.shape[0]):
        count = 0
        for i in range(gammas.shape[1]):
            if gammas[g, i]:
                if count < 2:
                    out[g, 1 + count] = i
                count += 1
        out[g, 0] = min(count, 3)
    return out


@_compiled
def _block(u, k, factor, pairs, gammas, windows, starts, signs, left, right, vectors, first, order, lower, out):
    """Row by row, each group in the tensor code's order, so each entry sums its terms alike;
    ``lower``: the lower triangle alone, then mirrored."""
    d, N, M = u.shape
    H = np.empty((d, order + 1, M))
    value = np.empty(M)
    c = np.empty(M)
    positive = _positive_inputs(gammas)
    for a in range(N):
        _hermite_row(u, a, order, H)
        for g in range(pairs.shape[0]):
            r0, r1, c0, c1 = windows[g, 0], windows[g, 1], windows[g, 2], windows[g, 3]
            if a < r0 or a >= r1:
                continue
            if lower:
                c1 = _stop(pairs[g, 0], pairs[g, 1], a, c1)
                if c1 <= c0:
                    continue
            width = c1 - c0
            _coefficients(starts, signs, left, right, vectors, g, a - r0, width, c)
            target = out[pairs[g, 0] * N + a, pairs[g, 1] * M + c0:pairs[g, 1] * M + c1]
            count, i1, i2 = positive[g, 0], positive[g, 1], positive[g, 2]
            if count == 1 or count == 2:        # one or two inputs of positive order: one pass
                n1 = gammas[g, i1]
                p1, h1 = factor[i1, n1], H[i1, n1, c0:c1]
                row = k[a, c0:c1]
                if count == 1:
                    if first[g]:
                        for b in range(width):
                            target[b] = ((row[b] * p1) * h1[b]) * c[b]
                    else:
                        for b in range(width):
                            target[b] += ((row[b] * p1) * h1[b]) * c[b]
                    continue
                n2 = gammas[g, i2]
                p2, h2 = factor[i2, n2], H[i2, n2, c0:c1]
                if first[g]:
                    for b in range(width):
                        target[b] = ((((row[b] * p1) * h1[b]) * p2) * h2[b]) * c[b]
                else:
                    for b in range(width):
                        target[b] += ((((row[b] * p1) * h1[b]) * p2) * h2[b]) * c[b]
                continue
            _factors(k, factor, gammas, g, -1, a, c0, c1, H, value)
            if first[g]:
                for b in range(width):
                    target[b] = value[b] * c[b]
            else:
                for b in range(width):
                    target[b] += value[b] * c[b]
    if lower:
        for r in range(out.shape[0]):
            for s in range(r + 1, out.shape[1]):
                out[r, s] = out[s, r]


@_compiled
def _gradient(u, k, factor, correction, pairs, gammas, windows, starts, signs, left, right, vectors, key_groups,
              key_occurrences, key_starts, key_slots, order, W, lower, total, buffer):
    """``lower``: a group's columns end where every equation pair's end within the lower triangle
    (:func:`_stop`); the weights are zero beyond each pair's own end, as in the tensor code."""
    d, N, M = u.shape
    H = np.empty((d, order + 1, M))
    weight = np.empty(M)
    value = np.empty(M)
    c = np.empty(M)
    positive = _positive_inputs(gammas)
    for a in range(N):
        _hermite_row(u, a, order, H)
        for key in range(key_groups.shape[0]):
            g0 = key_groups[key]
            r0, r1, c0, c1 = windows[g0, 0], windows[g0, 1], windows[g0, 2], windows[g0, 3]
            stride, size = c1 - c0, (r1 - r0) * (c1 - c0)
            slot = key_slots[key]
            if a < r0 or a >= r1:
                continue
            if lower:
                stop = -1
                for o in range(key_starts[key], key_starts[key + 1]):
                    g = key_occurrences[o]
                    stop = max(stop, _stop(pairs[g, 0], pairs[g, 1], a, c1))
                c1 = stop
                if c1 <= c0:
                    continue
            width = c1 - c0
            # Σ over the equation pairs of W_block ∘ C, in order
            for o in range(key_starts[key], key_starts[key + 1]):
                g = key_occurrences[o]
                _coefficients(starts, signs, left, right, vectors, g, a - r0, width, c)
                w = W[pairs[g, 0] * N + a, pairs[g, 1] * M + c0:pairs[g, 1] * M + c1]
                if o == key_starts[key]:
                    for b in range(width):
                        weight[b] = w[b] * c[b]
                else:
                    for b in range(width):
                        weight[b] = weight[b] + w[b] * c[b]
            # The inputs of positive order: one pass makes the value and both inputs' corrections
            # where there are at most two (a second-order operator's blocks), the products as the
            # general path forms them; more, each input's others in a pass of its own.
            count, i1, i2 = positive[g0, 0], positive[g0, 1], positive[g0, 2]
            target = total[a, c0:c1]
            overwrite = key == 0 and size == N * M
            row = k[a, c0:c1]
            if count == 0:
                if overwrite:
                    for b in range(width):
                        target[b] = weight[b] * row[b]
                else:
                    for b in range(width):
                        target[b] += weight[b] * row[b]
                continue
            if count <= 2:
                n1 = gammas[g0, i1]
                p1, s1 = factor[i1, n1], correction[i1, n1]
                x1, h1, g1 = u[i1, a, c0:c1], H[i1, n1, c0:c1], H[i1, n1 - 1, c0:c1]
                into1 = buffer[slot:slot + width]
                if count == 1:
                    # He₀ = 1 exactly: u He₀ + He₁ rounds as u + He₁, so one form serves every order
                    if overwrite:
                        for b in range(width):
                            target[b] = weight[b] * ((row[b] * p1) * h1[b])
                    else:
                        for b in range(width):
                            target[b] += weight[b] * ((row[b] * p1) * h1[b])
                    for b in range(width):
                        into1[b] += (weight[b] * row[b]) * (s1 * (x1[b] * g1[b] + h1[b]))
                    continue
                n2 = gammas[g0, i2]
                p2, s2 = factor[i2, n2], correction[i2, n2]
                x2, h2, g2 = u[i2, a, c0:c1], H[i2, n2, c0:c1], H[i2, n2 - 1, c0:c1]
                into2 = buffer[slot + stride:slot + stride + width]
                for b in range(width):
                    others2 = (row[b] * p1) * h1[b]
                    others1 = (row[b] * p2) * h2[b]
                    w = weight[b]
                    if overwrite:
                        target[b] = w * ((others2 * p2) * h2[b])
                    else:
                        target[b] += w * ((others2 * p2) * h2[b])
                    into1[b] += (w * others1) * (s1 * (x1[b] * g1[b] + h1[b]))
                    into2[b] += (w * others2) * (s2 * (x2[b] * g2[b] + h2[b]))
                continue
            _factors(k, factor, gammas, g0, -1, a, c0, c1, H, value)
            if overwrite:
                for b in range(width):
                    target[b] = weight[b] * value[b]
            else:
                for b in range(width):
                    target[b] += weight[b] * value[b]
            # each correction: (W ∘ others) ∘ (−n ℓ^{−n−1} (u He_{n−1} + Heₙ))
            for i in range(d):
                n = gammas[g0, i]
                if n == 0:
                    continue
                _factors(k, factor, gammas, g0, i, a, c0, c1, H, value)
                s = correction[i, n]
                x, h, h1 = u[i, a, c0:c1], H[i, n, c0:c1], H[i, n - 1, c0:c1]
                into = buffer[slot:slot + width]
                for b in range(width):
                    into[b] += (weight[b] * value[b]) * (s * (x[b] * h1[b] + h[b]))
                slot += stride
