"""Which functions are finite wherever their arguments are: the per-step energy check is skipped
for them (:func:`dalembert.engine.loop.step_energy`).

The engine checks after every step that the new state is finite and that the node's energy is
(a potential log(x) goes NaN where its gradient does not). The energy costs what the state's
check does not: evaluating a potential with transcendental functions is a large share of a cheap
step (docs/benchmarks.md, "Measurements behind the code"). But a function built only from
operations that map finite numbers to finite numbers — sums, products, integer powers, sin, cos,
… — is finite at a finite state, and checking it again tells nothing. :func:`finite_on_finite` reads the function's
jaxpr and says whether it is such a function.

The one exception is overflow: a product or power of finite numbers above ~1e308 is inf (for a
polynomial, a state above ~1e77 or so). Such a run is checked at its next saved node, whose
energy is checked as every node output is, and that node's last step is named as the failed one.
"""
from __future__ import annotations

import jax
import jax.extend.core as jcore
import numpy as np

#: Primitives that give finite results for finite arguments (up to overflow, module doc).
#: Not here: div, rem, log, log1p, sqrt, rsqrt, pow, exp, expm1, acos, asin, acosh, atanh, erf_inv,
#: lgamma, digamma, cholesky and the other linear-algebra primitives, and anything unknown.
FINITE_ON_FINITE = frozenset({
    "add", "sub", "mul", "neg", "integer_pow", "square", "abs", "sign", "max", "min", "clamp",
    "sin", "cos", "tanh", "atan", "atan2", "asinh", "logistic", "floor", "ceil", "round",
    "tan", "erf", "erfc", "is_finite", "select_n", "broadcast_in_dim", "reshape", "squeeze",
    "expand_dims", "concatenate", "stack", "split", "slice", "cumsum", "argmax", "argmin", "sort",
    "dynamic_slice", "dynamic_update_slice", "gather", "pad", "transpose", "rev", "iota", "copy",
    "copy_p", "convert_element_type", "reduce_sum", "reduce_max", "reduce_min", "dot_general",
    "stop_gradient", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "xor",
    "pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
    "custom_vjp_call_jaxpr", "remat", "checkpoint",
})


def _subjaxprs(eqn):
    for v in eqn.params.values():
        for x in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(x, jcore.ClosedJaxpr):
                yield x
            elif isinstance(x, jcore.Jaxpr):
                yield jcore.ClosedJaxpr(x, ())


def _finite_jaxpr(closed) -> bool:
    for c in closed.consts:
        try:
            a = np.asarray(c)
        except Exception:              # noqa: BLE001 - a traced constant: its value is unknown
            return False
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            return False
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive.name not in FINITE_ON_FINITE:
            return False
        for v in eqn.invars:           # constants written into the equation (scalars)
            if isinstance(v, jcore.Literal) and not np.all(np.isfinite(np.asarray(v.val, float))):
                return False
        if not all(_finite_jaxpr(sub) for sub in _subjaxprs(eqn)):
            return False
    return True


def finite_on_finite(fn, *args) -> bool:
    """Whether ``fn(*args)`` (``args``: arrays or shape structs) is made only of operations in
    :data:`FINITE_ON_FINITE` and finite constants, so that it is finite wherever its arguments
    are (short of overflow). Only the operations the outputs use count. False when it cannot be
    traced."""
    try:
        closed = jax.make_jaxpr(fn)(*args)
    except Exception:                  # noqa: BLE001 - anything untraceable is checked as before
        return False
    return _finite_jaxpr(dce(closed))


def reads_inputs(closed) -> bool:
    """Whether the outputs of ``closed`` depend on its inputs (False: they are constants, e.g.
    an explicit step's ``converged``, even when computed by equations such as ``True & True``)."""
    used = _dead_code_pass(closed)[1]
    if used is None:                   # conservative without the dead-code pass
        return bool(closed.jaxpr.eqns) or any(v in closed.jaxpr.invars for v in closed.jaxpr.outvars)
    return any(used)


def output_reads_inputs(closed, index: int) -> bool:
    """Whether output ``index`` of ``closed`` depends on its inputs (:func:`reads_inputs` of that
    output alone; conservative where JAX's dead-code pass is not available)."""
    try:
        from jax._src.interpreters import partial_eval as pe
        mask = [k == index for k in range(len(closed.jaxpr.outvars))]
        return any(pe.dce_jaxpr(closed.jaxpr, mask)[1])
    except Exception:                  # noqa: BLE001 - conservative
        return True


def dce(closed):
    """``closed`` without the equations its outputs do not use (e.g. the parts of a node that
    the checked value does not read); unchanged where JAX's dead-code pass is not available."""
    return _dead_code_pass(closed)[0]


def _dead_code_pass(closed):
    """(``closed`` without its dead equations, which inputs its outputs use), or (``closed``,
    None) where JAX's dead-code pass is not available."""
    try:
        from jax._src.interpreters import partial_eval as pe
        jaxpr, used = pe.dce_jaxpr(closed.jaxpr, [True] * len(closed.jaxpr.outvars))
        return jcore.ClosedJaxpr(jaxpr, closed.consts), used
    except Exception:                  # noqa: BLE001 - a conservative answer without it
        return closed, None
