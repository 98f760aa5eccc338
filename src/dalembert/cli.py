"""The command line: ``dalembert list | run | convergence | reproduce | bench``.

Every error ends the program with one line on stderr (``dalembert: error: ...``) and a non-zero
exit status; set ``DALEMBERT_DEBUG=1`` for the traceback. The persistent JAX compilation cache is
on (``$DALEMBERT_CACHE_DIR``, default ``~/.cache/dalembert/jax``), so a second run of the same
model and method does not compile again.
"""
from __future__ import annotations

import errno
import json
import math
import os
import re
import sys
import time
from pathlib import Path

import click
import numpy as np

EXIT_USAGE = 2
EXIT_ERROR = 1


# ---------------------------------------------------------------------------------------------
# parsing helpers
# ---------------------------------------------------------------------------------------------

def _parse_params(items) -> dict:
    out = {}
    for it in items:
        if "=" not in it:
            raise click.UsageError(f"--param expects NAME=VALUE; got {it!r}")
        k, v = it.split("=", 1)
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise click.UsageError(f"--param {k}: {v!r} is not a number") from None
    return out


def _parse_inits(items, model) -> dict:
    """``--init NAME=V1,V2,...`` for the model's initial-state names (q0, v0; R0, omega0; ...),
    each reshaped to the shape of the model's default."""
    out = {}
    names = list(model.initial_state)
    for it in items:
        k, vals = _init_item(it, names)
        default = np.asarray(model.initial_state[k], float)
        if len(vals) != default.size:
            what = (f"{model.name} has {default.size} coordinates ({', '.join(model.coordinates)})"
                    if _is_coordinate_state(model, k) else f"{k} of {model.name} has {default.size} entries (shape {default.shape})")
            raise click.UsageError(f"--init {k}: {what}; got {len(vals)} values")
        out[k] = np.asarray(vals).reshape(default.shape)
    return out


def _init_item(item: str, names) -> tuple:
    """(NAME, [values]) of one ``--init NAME=V1,V2,...``, NAME one of ``names`` (UsageError otherwise)."""
    if "=" not in item:
        raise click.UsageError(f"--init expects NAME=V1,V2,...; got {item!r} (names: {', '.join(names)})")
    k, v = (s.strip() for s in item.split("=", 1))
    if k not in names:
        raise click.UsageError(f"--init: unknown initial-state name {k!r}; valid: {', '.join(names)}")
    try:
        return k, [float(x) for x in v.split(",") if x.strip() != ""]
    except ValueError:
        raise click.UsageError(f"--init {k}: {v!r} is not a comma-separated list of numbers") from None


def _is_coordinate_state(model, state_name: str) -> bool:
    """Whether an initial-state entry has one value per coordinate of the model (its node array
    is the kind's configuration or velocity in Rⁿ)."""
    from dalembert.declarations import Role
    kind = type(model.system)
    name = kind.state_array(state_name)
    return name in kind.arrays_with(Role.CONFIGURATION, Role.VELOCITY) and len(model.coordinates) == \
        np.asarray(model.initial_state[state_name]).size


def _floats(text: str, what: str) -> list:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.UsageError(f"{what}: {text!r} is not a comma-separated list of numbers") from None
    if not vals:
        raise click.UsageError(f"{what}: empty list")
    return vals


#: Columns of the command's output when it is not a terminal (piped, redirected): wide enough that
#: no table or line is wrapped (rich's default there is 80); $COLUMNS, when set, wins.
PIPE_WIDTH = 240


def _console(stderr: bool = False):
    """A rich Console on stdout (stderr): the terminal's width, or, piped or redirected,
    :data:`PIPE_WIDTH` columns and long lines not wrapped (``$COLUMNS`` when set)."""
    from rich.console import Console
    con = Console(stderr=stderr)
    if not con.is_terminal and not os.environ.get("COLUMNS"):
        con = Console(stderr=stderr, width=PIPE_WIDTH, soft_wrap=True)
    return con


# ---------------------------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------------------------

SHORT_HELP = """\
dalembert — structure-preserving integrators for nonholonomic mechanical systems.

  dalembert list                      models and methods, one line each
  dalembert list --model NAME         a model's parameters, data and the methods that accept it
  dalembert list --method NAME        a method's traits and source
  dalembert run MODEL                 integrate a model (--method, --h, --t-final, --param, --init)
  dalembert run --resume DIR          continue an interrupted run
  dalembert convergence MODEL         fitted orders of methods on a model against its solution
  dalembert sweep MODEL --members B   an ensemble as tasks on a Dask cluster
  dalembert reproduce --quick         the papers' experiments and their checks, as an HTML report
  dalembert bench                     steps per second against NumPy and SciPy baselines

`dalembert COMMAND --help` for a command's options."""


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(package_name="dalembert")
@click.pass_context
def cli(ctx):
    """dalembert — structure-preserving integrators for nonholonomic mechanical systems."""
    if ctx.invoked_subcommand is None:
        click.echo(SHORT_HELP)


def _columns(rows, header) -> list:
    """Rows of strings as left-aligned columns (no truncation, no wrapping)."""
    rows = [header] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    return ["  ".join([c.ljust(w[i]) for i, c in enumerate(r[:-1])] + [r[-1]]).rstrip() for r in rows]


def _method_lines(names=None) -> list:
    import dalembert as dl
    rows = []
    for name, tr in dl.methods.available().items():
        if names is not None and name not in names:
            continue
        step = "implicit" if tr.implicit else "explicit"
        if tr.implicit and tr.explicit_when:
            step += "*"
        rows.append([name, str(tr.order), "sym" if tr.symmetric else "", step, ", ".join(tr.integrates) or "any"])
    return _columns(rows, ["method", "order", "sym", "step", "integrates"])


def _model_lines() -> list:
    import dalembert as dl
    rows = [[name, s.title] for name, s in dl.models.available().items()]
    return _columns(rows, ["model", "description"])


def _model_details(name) -> list:
    import dalembert as dl
    from dalembert.methods.kinds import methods_for
    from dalembert.systems.kind import kind_name
    s = dl.models.spec(name)
    mdl = dl.models.get(s.name)
    out = [f"{s.name} — {s.title}", f"  source: {s.source}"]
    if s.description:
        out.append(f"  {s.description}")
    out.append(f"  system kind: {kind_name(mdl.system)}; coordinates: {', '.join(mdl.coordinates)}")
    out.append("  parameters (--param NAME=VALUE):" if s.parameters else "  parameters: none")
    out += [f"    {p.name} = {p.default:g} {p.unit}".rstrip() + f"  — {p.doc}" for p in s.parameters]
    if s.system is not None and s.parameters:
        out.append("    traceable factory: --reuse-compiled runs every value with one compiled program")
    out.append("  initial state (--init NAME=V1,V2,...):")
    out += [f"    {k}=" + ",".join(f"{x:.10g}" for x in np.asarray(v, float).ravel())
            for k, v in mdl.initial_state.items()]
    sol = ("exact" if mdl.has_exact_solution else
           "the model's reference solution" if mdl.reference is not None else "reference ODE (DOP853, rtol = atol = 1e-13)")
    opts = (" (options " + ", ".join(f"{k}={v!r}" for k, v in mdl.default_options.items()) + ")"
            if mdl.default_options else "")
    out.append(f"  defaults: --method {mdl.default_method}{opts} --h {mdl.default_h:g} "
               f"--t-final {mdl.default_t_final:g}")
    out.append(f"  solution: {sol}")
    fits = methods_for(mdl.system, mdl.state0())
    out.append(f"  methods that accept it ({len(fits)}; `dalembert list --method NAME` for one):")
    out += ["    " + line for line in _method_lines(set(fits))]
    return out


def _method_details(name) -> list:
    import dalembert as dl
    m = dl.methods.get(name)
    tr = m.traits
    step = "explicit"
    if tr.implicit:
        step = "implicit" + (f" (explicit for {tr.explicit_when})" if tr.explicit_when else "")
    views = [f"{src} (through a view)" for (src, dst) in dl.systems.views() if dst in tr.integrates
             and src not in tr.integrates]
    models = [n for n in dl.models.available() if m.name in _accepting(n)]
    out = [f"{m.name} — {m.description}".rstrip(" —"),
           f"  order {tr.order}; {'symmetric' if tr.symmetric else 'not symmetric'}; {step}",
           f"  integrates: {', '.join(list(tr.integrates) + views) or 'any system'}",
           f"  preserves: {'; '.join(map(str, tr.preserves)) or '—'}",
           f"  accepts: {', '.join(sorted(f.label for f in tr.accepts)) if tr.accepts else 'no feature beyond the plain kind' if tr.accepts is not None else 'not declared'}",
           f"  source: {tr.source or '—'}",
           f"  built-in models it accepts: {', '.join(models) or 'none'}"]
    return out


def _accepting(model_name) -> list:
    import dalembert as dl
    from dalembert.methods.kinds import methods_for
    mdl = dl.models.get(model_name)
    return methods_for(mdl.system, mdl.state0())


@cli.command("list")
@click.option("--models", "only_models", is_flag=True, help="Only the models.")
@click.option("--methods", "only_methods", is_flag=True, help="Only the methods.")
@click.option("--model", "model_name", default=None, metavar="NAME",
              help="One model: parameters, initial state, defaults, and the methods that accept it.")
@click.option("--method", "method_name", default=None, metavar="NAME", help="One method: its traits and source.")
@click.option("--json", "as_json", is_flag=True, help="Everything as JSON (models, methods, views).")
def list_cmd(only_models, only_methods, model_name, method_name, as_json):
    """The models and the methods, one line each (--model NAME, --method NAME for details).

    Methods: order is the global order; sym: symmetric (self-adjoint); step: explicit, or implicit
    (a Newton solve per step; * explicit in a special case, see --method NAME); integrates: the
    system kinds it takes (other kinds through registered views).
    """
    import dalembert as dl
    if as_json:
        models = {name: {"title": s.title, "source": s.source,
                         "parameters": {p.name: {"default": p.default, "doc": p.doc, "unit": p.unit}
                                        for p in s.parameters}}
                  for name, s in dl.models.available().items()}
        meths = {name: t.as_dict() for name, t in dl.methods.available().items()}
        kinds = {f"{src} -> {dst}": v.description for (src, dst), v in dl.systems.views().items()}
        click.echo(json.dumps({"models": models, "methods": meths, "views": kinds}, indent=2, ensure_ascii=False))
        return
    if model_name is not None:
        click.echo("\n".join(_model_details(model_name)))
        return
    if method_name is not None:
        click.echo("\n".join(_method_details(method_name)))
        return
    lines = []
    if not only_methods:
        lines += _model_lines()
    if not only_models:
        lines += ([""] if lines else []) + _method_lines()
    if not (only_models or only_methods):
        lines += ["", "implicit*: explicit in a special case (e.g. a constant metric). `dalembert list --model NAME`",
                  "/ `--method NAME` for the details; --json for everything."]
    click.echo("\n".join(lines))


@cli.command()
@click.argument("model", required=False)
@click.option("--method", "method_name", default=None, metavar="NAME",
              help="Method name; auto (the default): the model's default method.")
@click.option("--h", "h", type=float, default=None, help="Step size (default: the model's).")
@click.option("--t-final", "t_final", type=float, default=None,
              help="Final time, a whole number of steps of --h (default: the model's).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Model parameter.")
@click.option("--init", "inits", multiple=True, metavar="NAME=V1,V2,...", help="Initial state: q0=... or v0=...")
@click.option("--save-every", type=int, default=1, show_default=True,
              help="Keep every K-th node (a last partial node at --t-final if K does not divide the steps).")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Output directory (default runs/MODEL-METHOD).")
@click.option("--project", is_flag=True, help="Project v0 onto the constraint space if it violates it.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG figures.")
@click.option("--animate", is_flag=True,
              help="Also write an animation (contact path + orientation) for models with x and R, e.g. rolling-ball.")
@click.option("--animation-format", type=click.Choice(["gif", "mp4"]), default="gif", show_default=True,
              help="Animation file format (mp4 needs ffmpeg).")
@click.option("--checkpoint", "checkpoint", is_flag=True,
              help="Write OUT/checkpoint.npz every --checkpoint-every seconds (an interrupt always writes one).")
@click.option("--checkpoint-every", type=float, default=60.0, show_default=True, metavar="SECONDS",
              help="Seconds between checkpoints with --checkpoint.")
@click.option("--check-every", type=int, default=1000, show_default=True, metavar="K",
              help="Check the system's invariants and the node's values every K steps as well as at the "
                   "saved nodes (0: only at the saved nodes).")
@click.option("--on-parasitic", type=click.Choice(["warn", "stop"]), default="warn", show_default=True,
              help="Two-step methods: warn after the run, or stop at the step where a parasitic period-2 "
                   "mode grows.")
@click.option("--stream", is_flag=True,
              help="Append the nodes to OUT/trajectory.h5 (HDF5) as the run goes instead of keeping them in "
                   "memory: for runs whose nodes do not fit (a checkpoint then holds the state only).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Continue the interrupted run in DIR (its checkpoint.npz); no MODEL or other run options.")
@click.option("--stop-when", "stop_when", default=None, metavar="EXPR",
              help="End the run when a condition in t, q, v first holds, e.g. 'abs(q[3]) > 1.0' or "
                   "'q[1] < -1.5' (an event located to round-off on the interpolant; jnp functions: sin, "
                   "cos, tan, abs, sqrt, exp, log, arctan2, pi).")
@click.option("--reuse-compiled", is_flag=True,
              help="Compile the model's parameters as arguments of the program, so that a run with other "
                   "--param values (in a new process too, through the compilation cache) does not compile "
                   "again. Models with a traceable factory (dalembert list --model NAME); the results "
                   "equal the default path's to round-off, not bit for bit, and the steps are slower "
                   "(the parameters are no longer constants of the program): for short runs of many "
                   "values.")
def run(**kwargs):
    """Integrate a built-in MODEL; write trajectory.npz (trajectory.h5 with --stream), summary.json
    and PNG plots.

    SIGINT (Ctrl-C) or SIGTERM finishes the current chunk of steps, writes the partial trajectory
    and OUT/checkpoint.npz, and exits with status 130 / 143; `dalembert run --resume OUT`
    continues, with a result equal to the uninterrupted run's bit for bit.
    """
    try:
        return _run(**kwargs)
    finally:        # the output directory's lock (held from the checks to the last file written)
        while _LOCKS:
            _LOCKS.pop().close()


def _run(model, method_name, h, t_final, params, inits, save_every, out, project, no_plots, animate,
         animation_format, checkpoint, checkpoint_every, check_every, on_parasitic, stream, resume_dir,
         reuse_compiled=False, stop_when=None):
    """Integrate a built-in MODEL; write trajectory.npz (trajectory.h5 with --stream), summary.json
    and PNG plots.

    SIGINT (Ctrl-C) or SIGTERM finishes the current chunk of steps, writes the partial trajectory
    and OUT/checkpoint.npz, and exits with status 130 / 143; `dalembert run --resume OUT`
    continues, with a result equal to the uninterrupted run's bit for bit.
    """
    import dalembert as dl
    from dalembert.engine import checkpoint as ckpt_mod
    from dalembert.errors import InputError

    if resume_dir is not None:
        given = [f for f, v in (("MODEL", model), ("--method", method_name), ("--h", h), ("--t-final", t_final),
                                ("--param", params), ("--init", inits), ("--out", out),
                                ("--stream", stream), ("--reuse-compiled", reuse_compiled)) if v]
        if given:
            raise click.UsageError(f"--resume continues a run as it was started; drop {', '.join(given)}")
        ck = ckpt_mod.read(resume_dir)
        md = ck["metadata"]
        if "model" not in md:
            raise click.UsageError(f"{ck['path']} is not a checkpoint of `dalembert run` (no model recorded)")
        if "model_ref" in md:           # a model of your own: load it again from its file or module
            mdl = user_model(md["model_ref"], md.get("parameters", {}),
                             [f"{k}={','.join(map(str, np.ravel(md[k])))}" for k in ("q0", "v0") if k in md])
        else:
            mdl = dl.models.get(md["model"], **md.get("parameters", {}))
        outdir = Path(resume_dir)
        _check_outputs(outdir, mdl, animate, animation_format, resuming=True)
        t0 = time.perf_counter()
        done = _complete_result(outdir, md, mdl)
        if done is not None:        # finished, killed before its checkpoint was removed: keep it
            Path(ck["path"]).unlink(missing_ok=True)
            (outdir / PARTIAL_STREAM).unlink(missing_ok=True)
            result = dl.load(done)
            click.echo(f"dalembert: {outdir} holds a complete result ({done.name}, finished at t = "
                       f"{result.t[-1]:.6g}); the checkpoint beside it was stale and is removed: nothing to resume",
                       err=True)
            if (outdir / "summary.json").exists():
                return None
            return _finish(result, mdl, outdir, t0, no_plots, animate, animation_format)
        system = _compiled_system(mdl, md["method"]) if md.get(REUSE_KEY) else mdl.system
        traj = _interruptible(lambda: dl.resume(ck["path"], system, checkpoint=ck["path"],
                                                checkpoint_every=checkpoint_every if checkpoint else math.inf,
                                                keep_checkpoint=True),     # removed by _finish
                              outdir)
        _test_pause()
        return _finish(traj, mdl, outdir, t0, no_plots, animate, animation_format)
    if model is None:
        raise click.UsageError("missing MODEL (`dalembert list` shows them), or --resume DIR")
    mdl = _resolve_model(model, params, inits)
    init = _parse_inits(inits, mdl)
    method = _method_for(mdl, method_name)
    user = ":" in model
    system, reuse = mdl.system, {}
    if reuse_compiled:             # (refused before anything is written)
        if user:
            raise InputError(f"--reuse-compiled: built-in models only ({model} is a model of your own: call "
                             f"its function inside your own program instead)")
        system, reuse = _compiled_system(mdl, method), {REUSE_KEY: True}
    if user and (h is None and math.isnan(mdl.default_h) or t_final is None and math.isnan(mdl.default_t_final)):
        raise click.UsageError(f"MODEL {model} has no default step or final time: pass --h and --t-final")
    if save_every < 1:
        raise click.UsageError(f"--save-every must be ≥ 1; got {save_every}")
    if not (math.isfinite(checkpoint_every) and checkpoint_every >= 0):
        raise click.UsageError(f"--checkpoint-every must be a number of seconds ≥ 0; got {checkpoint_every}")
    if check_every < 0:
        raise click.UsageError(f"--check-every must be ≥ 0 (0: only at the saved nodes); got {check_every}")
    engine = {"check_every": check_every} if check_every else {}
    if on_parasitic == "stop":
        engine["on_parasitic"] = "stop"
    h = mdl.default_h if h is None else h
    T = mdl.default_t_final if t_final is None else t_final
    state = {k: np.asarray(init.get(k, x), float) for k, x in mdl.initial_state.items()}
    outdir = Path(out) if out else Path("runs") / f"{mdl.name}-{method.name}"
    if not method.compiled:     # (the SciPy reference): one call, no chunks to checkpoint or check between
        engine = {}
        for flag, given in (("--checkpoint", checkpoint), ("--stream", stream)):
            if given:
                raise InputError(f"{flag}: {method.name} runs outside the compiled engine, which writes "
                                 f"checkpoints and streams; drop {flag}, or choose a compiled method "
                                 f"(dalembert list --model {mdl.name})")
    _check_outputs(outdir, mdl, animate, animation_format)
    _drop_stale_checkpoint(outdir, mdl)
    if not method.compiled:
        click.echo(f"note: {method.name} runs outside the compiled engine: no checkpoint is written, and an "
                   f"interrupt (Ctrl-C) stops it without a partial result")
    t0 = time.perf_counter()
    if stop_when is not None:
        if stream:
            raise click.UsageError("--stop-when keeps the nodes in memory (the event is located on them): drop --stream")
        engine["events"] = [_stop_event(stop_when)]
    traj = _interruptible(lambda: dl.integrate(
        system, method, h=h, t_final=T, save_every=save_every, project=project,
        metadata={"model": mdl.name, "parameters": mdl.params, **({"model_ref": model} if user else {}), **reuse},
        checkpoint=outdir / "checkpoint.npz" if method.compiled else None, keep_checkpoint=True,
        checkpoint_every=checkpoint_every if checkpoint else math.inf,
        stream=outdir / "trajectory.h5" if stream else None, **mdl.options_for(method), **state, **engine), outdir,
        deferred=method.compiled)
    _test_pause()
    _finish(traj, mdl, outdir, t0, no_plots, animate, animation_format)


#: Result files of a run directory. A new (or resumed) run writes each beside the earlier run's
#: under a temporary name and renames it over the old one only when it is complete; once its
#: summary is written it removes those of the earlier run it did not write (trajectory.npz after a
#: streamed run, trajectory.h5 after an in-memory one), so that no file of an earlier run is left
#: beside the new result. A run that fails before then leaves the earlier result as it was (one
#: whose steps fail, ConvergenceError, replaces it with the nodes before the failure).
RUN_FILES = ("summary.json", "trajectory.npz", "trajectory.h5")
#: The streamed nodes of an interrupted run: removed by a new run, continued by a resumed one.
PARTIAL_STREAM = "trajectory.h5.partial"
#: Most nodes the figures of a run draw (a longer run is drawn from every k-th node).
PLOT_NODES = 200_000


_STOP_FUNCTIONS = ("sin", "cos", "tan", "abs", "sqrt", "exp", "log", "arctan2", "pi")


def _stop_event(expr: str):
    """The terminal event of ``--stop-when LHS > RHS`` (or <, >=, <=): g(t, q, v) = LHS − RHS,
    rising for > (falling for <), as in ``dl.integrate(events=[g])``."""
    import ast

    import jax.numpy as jnp
    try:
        tree = ast.parse(expr, mode="eval").body
    except SyntaxError:
        raise click.UsageError(f"--stop-when: {expr!r} is not an expression") from None
    if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1
            and isinstance(tree.ops[0], (ast.Gt, ast.GtE, ast.Lt, ast.LtE))):
        raise click.UsageError(f"--stop-when takes one comparison, LHS > RHS or LHS < RHS (e.g. 'abs(q[3]) > 1.0'); "
                               f"got {expr!r}")
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(_STOP_FUNCTIONS) - {"t", "q", "v"}
    if names:
        raise click.UsageError(f"--stop-when: unknown names {sorted(names)}; use t, q, v and "
                               f"{', '.join(_STOP_FUNCTIONS)}")
    space = {k: getattr(jnp, k) for k in _STOP_FUNCTIONS}
    lhs = compile(ast.Expression(tree.left), "<stop-when>", "eval")
    rhs = compile(ast.Expression(tree.comparators[0]), "<stop-when>", "eval")

    def stop_when(t, q, v):
        env = dict(space, t=t, q=q, v=v)
        return jnp.asarray(eval(lhs, env) - eval(rhs, env), jnp.float64)   # noqa: S307 - the user's own CLI expression
    stop_when.terminal = True
    stop_when.direction = 1 if isinstance(tree.ops[0], (ast.Gt, ast.GtE)) else -1
    stop_when.__name__ = "stop_when"
    return stop_when


#: Metadata entry of a run made with --reuse-compiled (a resumed run compiles the same way).
REUSE_KEY = "parameters_compiled_as_arguments"


def _compiled_system(mdl, method):
    """The system of the built-in model ``mdl`` built again by its traceable factory and marked so
    that its parameters are arguments of the compiled program
    (:func:`dalembert.engine.programs.parametrised`): a new system object, so that the model's own
    (cached by :func:`dalembert.models.get`, shared with the library) keeps the default path.

    Raises InputError: a model without a traceable factory, one whose factory reads the
    parameters' values, a method outside the compiled engine or one that integrates the model
    through a view."""
    import dalembert as dl
    from dalembert.engine.programs import parametrised
    from dalembert.errors import InputError
    from dalembert.methods.kinds import resolve
    spec = dl.models.spec(mdl.name)
    if spec.system is None:
        have = ", ".join(sorted(n for n, x in dl.models.available().items() if x.system is not None))
        raise InputError(f"--reuse-compiled: {mdl.name} has no traceable factory (models with one: {have}); "
                         f"drop --reuse-compiled")
    method = dl.methods.get(method) if isinstance(method, str) else method
    if not method.compiled:
        raise InputError(f"--reuse-compiled: {method.name} runs outside the compiled engine (nothing is "
                         f"compiled to reuse); drop --reuse-compiled")
    if resolve(mdl.system, method) is not None:
        raise InputError(f"--reuse-compiled: {method.name} integrates {mdl.name} through a view of another "
                         f"system kind, which compiles the parameters in; drop --reuse-compiled or choose "
                         f"another method (dalembert list --model {mdl.name})")
    try:
        return parametrised(spec.system(dict(mdl.params)), spec.system, mdl.params)
    except InputError as exc:
        raise InputError(f"--reuse-compiled: {exc}; drop --reuse-compiled") from None


def _resolve_model(ref: str, params, inits=()):
    """MODEL of the command line: a built-in model's name, or a model of your own,
    ``path/to/file.py:function`` or ``package.module:function`` — the function is called with the
    ``--param`` values as keywords and returns a ``dl.models.Model`` (with its initial state and
    defaults) or a system (then ``--init`` gives every initial-state array, and --h and --t-final
    are required). Returns the Model."""
    import dalembert as dl
    values = _parse_params(params)
    if ":" not in ref:
        return dl.models.get(dl.models.spec(ref).name, **values)
    return user_model(ref, values, inits)


def user_model(ref: str, values: dict, inits=()):
    """The Model of ``file.py:function`` / ``module:function`` (see :func:`_resolve_model`)."""
    import importlib
    import importlib.util

    from dalembert.models.base import Model
    from dalembert.systems.kind import SystemKind
    where, _, attr = ref.rpartition(":")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise click.UsageError(f"MODEL {ref}: no file {where}")
            spec = importlib.util.spec_from_file_location(f"dalembert_user_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except ImportError as exc:
        raise click.UsageError(f"MODEL {ref}: cannot import {where} ({exc})") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise click.UsageError(f"MODEL {ref}: {where} has no function {attr!r}")
    try:
        made = fn(**values)
    except TypeError as exc:
        raise click.UsageError(f"MODEL {ref}: {attr}(**params) failed ({exc}); --param NAME=VALUE passes "
                               f"keyword arguments") from None
    if isinstance(made, Model):
        made.params = dict(made.params or {}, **values)
        return made
    if not isinstance(made, SystemKind):
        raise click.UsageError(f"MODEL {ref}: {attr}() must return a dl.models.Model or a system; got "
                               f"{type(made).__name__}")
    names = list(made.state_names)
    state = {k: np.array(vals) for k, vals in (_init_item(it, names) for it in inits)}
    missing = [k for k in names if k not in state]
    if missing:
        raise click.UsageError(f"MODEL {ref} returns a system: give its initial state, "
                               + " ".join(f"--init {k}=V1,V2,..." for k in missing))
    first = state[names[0]]
    # energy is a first integral of a (q, v) system with linear constraints (no turning table)
    invariants = ({"energy": made.energy} if getattr(made, "is_affine", True) is False
                  and not getattr(made, "timed", getattr(made, "has_force", False)) else {})
    coords = getattr(made, "labels", {}).get("coordinate_names") or tuple(f"{names[0][:-1]}[{i}]" for i in range(first.size))
    return Model(name=made.name, params=dict(values), system=made, q0=first, v0=state[names[1]] if len(names) > 1 else first,
                 coordinates=tuple(coords), source=f"a model of your own ({ref})", initial_state=state,
                 invariants=invariants,
                 default_method="auto", default_h=math.nan, default_t_final=math.nan)


def _method_for(mdl, name):
    """The method ``--method NAME`` names for a model (None or "auto": the model's default),
    refused with the methods that accept the model when it does not."""
    import dalembert as dl
    from dalembert.errors import InputError, UnknownNameError, did_you_mean
    from dalembert.methods.kinds import methods_for, resolve
    from dalembert.systems.kind import kind_name
    default = mdl.default_method
    if default == "auto":
        default = dl.recommend(mdl.system, mdl.state0()).method
    try:
        method = dl.methods.get(default if name in (None, "auto") else name)
    except UnknownNameError:
        fits = methods_for(mdl.system)
        raise UnknownNameError(f"--method: unknown method {name!r}{did_you_mean(name, fits)}; methods for "
                               f"{mdl.name}: {', '.join(fits)}, or auto (its default, {mdl.default_method})") from None
    try:
        resolve(mdl.system, method, mdl.state0())
    except InputError:
        raise InputError(f"--method {method.name} does not integrate {mdl.name} (a {kind_name(mdl.system)} "
                         f"system); methods that do: {', '.join(methods_for(mdl.system, mdl.state0()))} (details: "
                         f"dalembert list --model {mdl.name})") from None
    return method


def _check_outputs(outdir: Path, mdl, animate: bool, animation_format: str, resuming: bool = False):
    """What a run needs after integrating, checked before: a writable output directory, a model
    that can be animated, ffmpeg for MP4. Removes the files of an earlier run in ``outdir``
    (except the checkpoint and the streamed nodes a resumed run continues)."""
    from dalembert._io import LOCK_NAME, check_writable_dir, hold_lock
    from dalembert.errors import InputError
    if animate:
        st = mdl.initial_state
        if not ("R0" in st and np.size(st.get("x0", ())) == 2):
            raise InputError(f"--animate needs a model with a contact point x and an orientation R (e.g. "
                             f"rolling-ball); {mdl.name} has none")
        if animation_format == "mp4":
            from matplotlib import animation
            if not animation.writers.is_available("ffmpeg"):
                raise InputError("--animation-format mp4 needs ffmpeg on the PATH; install it or use gif")
    check_writable_dir(outdir, "--out")
    # one writer per directory, held until the process ends (the OS releases it however it ends)
    _LOCKS.append(hold_lock(outdir / LOCK_NAME, f"--out {outdir}"))
    if not resuming and not (outdir / "checkpoint.npz").exists():   # (a checkpoint's: continued or refused)
        (outdir / PARTIAL_STREAM).unlink(missing_ok=True)


def _drop_stale_checkpoint(outdir: Path, mdl):
    """Remove ``outdir``'s checkpoint when the complete result of its run is beside it (a run
    killed after its result was written and before it removed the checkpoint; ``mdl``: the model
    of this command, whose initial-state names are compared). Any other checkpoint is left to
    :func:`dalembert.integrate`: continued when it is this run's, else refused."""
    from dalembert.engine import checkpoint as ckpt_mod
    from dalembert.errors import DalembertError
    path = outdir / "checkpoint.npz"
    if not path.exists():
        return
    try:
        stale = _complete_result(outdir, ckpt_mod.read(path)["metadata"], mdl) is not None
    except (DalembertError, KeyError, TypeError):
        return
    if stale:
        path.unlink(missing_ok=True)


#: The lock files this process holds (see :func:`dalembert._io.hold_lock`).
_LOCKS: list = []
#: Test hook (the fault-injection tests): seconds to sleep after a run's trajectory is final and
#: before its checkpoint is removed, to make that window hittable by a signal.
PAUSE_AFTER_FINALISE = "DALEMBERT_TEST_PAUSE_AFTER_FINALISE"


def _test_pause():
    seconds = os.environ.get(PAUSE_AFTER_FINALISE)
    if seconds:
        time.sleep(float(seconds))


def _complete_result(outdir: Path, md: dict, mdl):
    """The complete result in ``outdir`` of the run of the checkpoint metadata ``md`` (same model,
    parameters, method, options, h, steps, stride and initial state; every node; not failed or
    interrupted) as a Path, or None."""
    import dalembert as dl
    from dalembert.engine import loop
    from dalembert.errors import InputError
    path = outdir / ("trajectory.h5" if md.get("stream") else "trajectory.npz")
    if not path.exists():
        return None
    try:
        traj = dl.load(path)
    except InputError:
        return None
    rmd = traj.metadata
    same = ("model", "parameters", "method", "options", "h", "n_steps", "save_every", REUSE_KEY,
            *mdl.initial_state)
    if "failed" in rmd or "interrupted" in rmd or any(rmd.get(k) != md.get(k) for k in same):
        return None
    full, rem = loop.save_plan(int(md["n_steps"]), int(md["save_every"]))
    return path if len(traj) == full + (2 if rem else 1) else None


def _interruptible(fn, outdir: Path, deferred: bool = True):
    """Run ``fn`` (an integration) with SIGINT/SIGTERM deferred to the end of a chunk; on an
    interrupt, save the partial trajectory and exit 130 (SIGINT) or 143 (SIGTERM) with one line.
    ``deferred=False`` (a method outside the compiled engine: no chunks): signals act at once."""
    import contextlib

    import dalembert as dl
    from dalembert.engine import interrupts
    from dalembert.errors import ConvergenceError
    try:
        with interrupts.deferred() if deferred else contextlib.nullcontext():
            return fn()
    except dl.RunInterrupted as exc:
        saved = ""
        if exc.trajectory is not None and "stream" in exc.trajectory.metadata:
            saved = f"; the nodes so far are in {outdir / PARTIAL_STREAM}"
        elif exc.trajectory is not None:
            exc.trajectory.metadata["interrupted"] = {"signal": exc.signal, "step": exc.step}
            saved = f"; partial trajectory in {exc.trajectory.save(outdir / 'trajectory.npz')}"
        click.echo(f"dalembert: interrupted ({exc.signal}) after {exc.step:,} steps (t = "
                   f"{exc.trajectory.t[-1]:.6g}){saved}; continue with: dalembert run --resume {outdir}",
                   err=True)
        sys.exit(143 if exc.signal == "SIGTERM" else 130)
    except ConvergenceError as exc:
        # the failed run's nodes replace the earlier result: nothing of that run is left beside them
        streamed = exc.trajectory is not None and "stream" in exc.trajectory.metadata
        for name in ("summary.json", "trajectory.npz" if streamed else "trajectory.h5"):
            (outdir / name).unlink(missing_ok=True)
        if exc.trajectory is not None and not streamed:
            exc.trajectory.metadata["failed"] = {"step": exc.step, "time": exc.time}
            path = exc.trajectory.save(outdir / "trajectory.npz")
            raise ConvergenceError(f"{exc} (saved to {path})", step=exc.step, time=exc.time,
                                   trajectory=exc.trajectory, cause=exc.cause) from None
        raise


def _finish(traj, mdl, outdir, t0, no_plots, animate, animation_format):
    """Write the outputs of a completed run (trajectory, plots, animation, then the summary, all
    atomically) and remove its checkpoint."""
    from dalembert import _terminate, plots
    from dalembert._io import atomic_write_text
    _terminate.phase("writing the results", f"the run's result is in {outdir} (each file is written "
                     f"atomically: complete, or not there); summary.json is written last")
    streamed = "stream" in traj.metadata
    files = [outdir / "trajectory.h5"] if streamed else [traj.save(outdir / "trajectory.npz")]
    view = traj.thinned(PLOT_NODES)             # (traj itself unless it is long or on disk)
    if not no_plots:
        files += plots.run_figures(view, mdl, outdir)
    if animate:
        files.append(_animate(view, mdl, outdir / f"animation.{animation_format}"))
    summary = _summary(traj, mdl, time.perf_counter() - t0, files)
    atomic_write_text(outdir / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False))
    # the earlier run's trajectory in the other format, then the checkpoint, now stale
    (outdir / ("trajectory.npz" if streamed else "trajectory.h5")).unlink(missing_ok=True)
    (outdir / "checkpoint.npz").unlink(missing_ok=True)
    _print_summary(summary, outdir)


def _animate(traj, mdl, path):
    from dalembert.animation import animate_rolling_ball
    from dalembert.errors import InputError
    x, R = traj.extra.get("x"), traj.extra.get("R")
    if x is None or R is None or x.shape[-1] != 2:
        raise InputError(f"--animate needs a trajectory with a contact point x (N, 2) and an orientation R "
                         f"(N, 3, 3), e.g. the rolling-ball model; {mdl.name} has none")
    return animate_rolling_ball(x, R, path, t=traj.t, radius=float(mdl.params.get("r", 1.0)),
                                title=f"{mdl.name} · {traj.metadata.get('method')}")


def _summary(traj, mdl, total_wall, files) -> dict:
    import jax
    md = traj.metadata
    from dalembert.results.trajectory import BLOCK_ROWS
    inv = {}
    args = [getattr(traj, a) for a in mdl.invariant_args]
    for name, f in mdl.invariants.items():
        fv = jax.jit(jax.vmap(f))
        v0 = float(fv(*[np.asarray(a[:1]) for a in args])[0])
        dev = max(float(np.max(np.abs(np.asarray(fv(*[np.asarray(a[i:i + BLOCK_ROWS]) for a in args])) - v0)))
                  for i in range(0, len(traj), BLOCK_ROWS))     # block by block: a streamed run
        inv[name] = {"initial": v0, "max_relative_deviation": dev / max(abs(v0), 1e-300)}
    holonomic = ({"max_holonomic_residual": traj.max_holonomic_residual}    # |φ|, constraint units
                 if "holonomic_residual" in traj.fields() else {})
    return {
        "model": mdl.name, "parameters": mdl.params, "method": md["method"], "h": md["h"],
        "t_final": md["t_final"], "n_steps": md["n_steps"], "save_every": md["save_every"],
        "nodes": len(traj),
        "max_relative_energy_error": traj.max_relative_energy_error,
        "max_energy_change": traj.max_relative_energy_error * max(abs(float(traj.energy[0])), np.finfo(float).tiny),
        "energy_is_invariant": "energy" in mdl.invariants,
        "initial_state": {k: md[k] for k in mdl.initial_state if k in md},   # after --project
        "max_constraint_residual": traj.max_constraint_residual, **holonomic,
        **({"max_energy_balance_residual": traj.max_energy_balance_residual, "work": float(traj.work[-1])}
           if traj.energy_balance_residual is not None else {}),
        **({"resumed_at_step": md["resumed_at_step"]} if "resumed_at_step" in md else {}),
        **({"stopped_at": md["terminated_at"]} if md.get("terminated_at") is not None else {}),
        "invariants": inv,
        "newton": md.get("newton"),
        "integration_wall_time_s": md.get("wall_time_s"), "compile_time_s": md.get("compile_time_s"),
        "steps_per_second": md.get("steps_per_second"), "total_wall_time_s": total_wall,
        "node_velocity": md.get("node_velocity"),
        "warnings": md.get("warnings", []),
        "parasitic_mode": md.get("parasitic_mode"),
        "chart_switches": md.get("chart_switches"),
        "files": [str(f) for f in files],
    }


def _print_summary(s, outdir):
    from rich.table import Table
    title = f"{s['model']} · {s['method']} · h = {s['h']:g} · T = {s['t_final']:g}"
    t = Table(title=title, show_header=False, min_width=len(title) + 2)      # (the title on one line)
    t.add_column(style="bold")
    t.add_column()
    t.add_row("steps", f"{s['n_steps']:,}")
    if "resumed_at_step" in s:
        t.add_row("resumed", f"from the checkpoint at step {s['resumed_at_step']:,}")
    if "stopped_at" in s:
        t.add_row("stopped", f"--stop-when held at t = {s['stopped_at']:.12g}")
    if "max_energy_balance_residual" in s:        # forces act: the balance E − E0 − W, not E
        t.add_row("energy balance", f"max |E − E0 − W| / scale {s['max_energy_balance_residual']:.3e}  "
                                    f"(energy supplied W = {s['work']:.6g}: forces, moving supports, ∂V/∂t)")
    elif s["energy_is_invariant"]:
        t.add_row("max |ΔE|/E", f"{s['max_relative_energy_error']:.3e}")
    else:
        t.add_row("max |E(t) − E(0)|", f"{s['max_energy_change']:.3e}  (energy is not an invariant here)")
    t.add_row("max constraint residual", f"{s['max_constraint_residual']:.3e}")
    if "max_holonomic_residual" in s:
        t.add_row("max |φ(q)| (configuration)", f"{s['max_holonomic_residual']:.3e}  (constraint units)")
    for k, v in s["invariants"].items():
        if k != "energy":
            t.add_row(f"max rel. drift of {k}", f"{v['max_relative_deviation']:.3e}")
    if s["newton"] and s["newton"]["total_iterations"]:
        t.add_row("Newton iterations", f"mean {s['newton']['mean_iterations']:.2f}, max {s['newton']['max_iterations']}")
    if s["steps_per_second"]:
        t.add_row("speed", f"{s['steps_per_second']:,.0f} steps/s "
                  f"(integration {s['integration_wall_time_s']:.3f} s, compile {s['compile_time_s']:.2f} s)")
    if s["chart_switches"]:
        t.add_row("chart switches", f"{s['chart_switches']} (the almost-Poisson reduction's atlas)")
    con = _console()
    con.print(t)
    for w in s["warnings"]:          # below the table, one line each (a terminal wraps them itself)
        con.print(f"[yellow]warning[/yellow]: {w['category']}: {w['message']}", soft_wrap=True, highlight=False)
    names = [Path(f).name for f in s["files"]] + ["summary.json"]
    click.echo(f"files in {outdir}: {', '.join(names)}")


@cli.command()
@click.argument("model")
@click.option("--methods", "methods_", default=None,
              help="Comma-separated method names [default: nh-rattle,gni-euler-a,gni-euler-b for "
                   "(q, v) models, else the model's default method].")
@click.option("--h", "hs", default="0.1,0.05,0.025,0.0125", show_default=True, help="Comma-separated step sizes.")
@click.option("--t-final", "t_final", type=float, default=None, help="Final time (default: the model's).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Model parameter.")
@click.option("--init", "inits", multiple=True, metavar="NAME=V1,V2,...",
              help="Initial state (a model of your own that returns a system needs it).")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Output directory (default runs/convergence-MODEL).")
def convergence(model, methods_, hs, t_final, params, inits, out):
    """Errors against the exact/reference solution, fitted orders, a log-log PNG and a table."""
    import dalembert as dl
    from dalembert import plots

    mdl = _resolve_model(model, params, inits)
    if ":" in model and t_final is None and math.isnan(mdl.default_t_final):
        raise click.UsageError(f"MODEL {model} has no default final time: pass --t-final")
    if methods_ is None:
        methods_ = ",".join(mdl.convergence_methods if mdl.default_method != "auto"
                            else (dl.recommend(mdl.system, mdl.state0()).method,))
    names = [m.strip() for m in methods_.split(",") if m.strip()]
    for name in names:
        dl.methods.get(name)  # unknown names fail before any work
    hlist = _floats(hs, "--h")
    if any(x <= 0 for x in hlist):
        raise click.UsageError("--h: step sizes must be > 0")
    if len(hlist) < 2:
        raise click.UsageError("--h: give at least two step sizes to fit an order")
    res = dl.convergence(mdl, names, hlist, t_final=t_final, initial_state=_parse_inits(inits, mdl))
    outdir = Path(out) if out else Path("runs") / f"convergence-{mdl.name}"
    outdir.mkdir(parents=True, exist_ok=True)
    plots.convergence_figure(res, outdir / "convergence.png")
    (outdir / "convergence.json").write_text(json.dumps(res.as_dict(), indent=2))
    from rich.table import Table
    t = Table(title=f"{mdl.name}: error at T = {res.t_final:g} vs {res.reference}")
    t.add_column("method")
    for h in res.hs:
        t.add_column(f"h={h:g}", justify="right")
    t.add_column(f"order {res.labels[0]}", justify="right")
    t.add_column(f"order {res.labels[1]}", justify="right")
    for name, e in res.errors_q.items():
        t.add_row(name, *[f"{x:.3e}" for x in e], f"{res.orders_q[name]:.2f}", f"{res.orders_v[name]:.2f}")
    con = _console()
    con.print(t)
    con.print(f"wrote {outdir / 'convergence.png'} and {outdir / 'convergence.json'}")


def _parse_vary(items, model, members: int) -> dict:
    """``--vary NAME[i]=START:STOP``: component i of initial-state NAME, evenly from START to STOP
    over the members. Returns {NAME: [(i, values (B,))]}."""
    import re
    out = {}
    for it in items:
        m = re.fullmatch(r"\s*(\w+)\[(\d+)\]\s*=\s*([^:]+):([^:]+)\s*", it)
        if not m:
            raise click.UsageError(f"--vary expects NAME[i]=START:STOP (e.g. v0[2]=-1:1); got {it!r}")
        name, i, a, b = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        if name not in model.initial_state:
            raise click.UsageError(f"--vary: unknown initial-state name {name!r}; valid: "
                                   f"{', '.join(model.initial_state)}")
        size = np.size(model.initial_state[name])
        if i >= size:
            raise click.UsageError(f"--vary {name}[{i}]: {name} of {model.name} has {size} entries")
        lo, hi = _floats(f"{a},{b}", "--vary")
        out.setdefault(name, []).append((i, np.linspace(lo, hi, members)))
    return out


@cli.command()
@click.argument("model")
@click.option("--members", type=int, default=100, show_default=True, help="Number of trajectories B.")
@click.option("--vary", "vary", multiple=True, metavar="NAME[i]=START:STOP",
              help="Initial-state component varied evenly over the members (repeatable), e.g. v0[2]=-1:1.")
@click.option("--method", "method_name", default=None, metavar="NAME",
              help="Method name; auto (the default): the model's default method.")
@click.option("--h", "h", type=float, default=None, help="Step size (default: the model's).")
@click.option("--t-final", "t_final", type=float, default=None, help="Final time (default: the model's).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Model parameter.")
@click.option("--init", "inits", multiple=True, metavar="NAME=V1,V2,...", help="Initial state shared by the members.")
@click.option("--save-every", type=int, default=100, show_default=True, help="Keep every K-th node.")
@click.option("--keep", default="energy,constraint_residual", show_default=True,
              help="Comma-separated node arrays to keep ('all' for every one).")
@click.option("--project", is_flag=True, help="Project each member's v0 onto the constraint space.")
@click.option("--members-per-task", type=int, default=None, help="Members per Dask task (default: about 4 tasks per worker).")
@click.option("--workers", type=int, default=None, help="Workers of the local cluster (default: the CPU count, at most 8).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Use the Dask scheduler at ADDRESS (e.g. a SLURM cluster's) instead of a local cluster.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Output directory (default runs/sweep-MODEL-METHOD); rerun with it to resume.")
def sweep(model, members, vary, method_name, h, t_final, params, inits, save_every, keep, project,
          members_per_task, workers, scheduler, out):
    """Integrate MODEL from B initial states as tasks on a Dask cluster; write sweep.npz and
    summary.json. Each task's result is its own file: rerunning the same command resumes.
    Needs the sweep extra (dask.distributed): pip install 'dalembert[sweep]'."""
    import dalembert as dl
    spec = dl.models.spec(model)
    mdl = dl.models.get(spec.name, **_parse_params(params))
    method = _method_for(mdl, method_name)
    if members < 1:
        raise click.UsageError(f"--members must be ≥ 1; got {members}")
    if save_every < 1:
        raise click.UsageError(f"--save-every must be ≥ 1; got {save_every}")
    base = dict(mdl.initial_state, **_parse_inits(inits, mdl))
    states = {k: np.repeat(np.asarray(v, float)[None], members, axis=0) for k, v in base.items()}
    for name, comps in _parse_vary(vary, mdl, members).items():
        flat = states[name].reshape(members, -1)
        for i, vals in comps:
            flat[:, i] = vals
    outdir = Path(out) if out else Path("runs") / f"sweep-{mdl.name}-{method.name}"
    kept = None if keep.strip() == "all" else tuple(k.strip() for k in keep.split(",") if k.strip())
    t0 = time.perf_counter()
    ens = dl.sweep(mdl.system, method, out=outdir, h=mdl.default_h if h is None else h,
                   t_final=mdl.default_t_final if t_final is None else t_final, save_every=save_every,
                   keep=kept, project=project, members_per_task=members_per_task, workers=workers,
                   client=scheduler, **mdl.options_for(method), **states)
    sw = ens.metadata["sweep"]
    summary = {"model": mdl.name, "parameters": mdl.params, "method": method.name, "members": len(ens),
               "failed": ens.failed.tolist(), "tasks": sw["tasks"], "tasks_run": sw["tasks_run"],
               "workers": sw["workers"], "sweep_wall_time_s": sw["wall_time_s"],
               "total_wall_time_s": time.perf_counter() - t0, "files": [str(outdir / "sweep.npz")]}
    if "energy" in ens.arrays:
        err = np.nanmax(np.abs(ens.relative_energy_error), axis=1)
        summary["max_relative_energy_error"] = {"median": float(np.median(err)), "max": float(np.max(err))}
    from dalembert._io import atomic_write_text
    atomic_write_text(outdir / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False))
    _console().print(f"{len(ens)} members ({len(ens.failed)} failed) in {sw['tasks']} tasks "
                     f"({sw['tasks_run']} run now) on {sw['workers']} workers, {sw['wall_time_s']:.1f} s; "
                     f"wrote {outdir / 'sweep.npz'}")


@cli.command()
@click.argument("experiments", nargs=-1)
@click.option("--quick", is_flag=True, help="Short versions (what CI runs).")
@click.option("--out", "out", type=click.Path(file_okay=False), default="reports/latest", show_default=True,
              help="Output directory for index.html, checks.json and figures.")
@click.option("--list", "list_only", is_flag=True, help="List the experiments and exit.")
def reproduce(experiments, quick, out, list_only):
    """Run the papers' experiments and write a self-contained HTML report with their checks."""
    from dalembert import experiments as ex
    from dalembert.report import write_report
    if list_only:
        for e in ex.available().values():
            click.echo(f"{e.id:32s} {e.title}")
        return
    chosen = [ex.get(x) for x in experiments] if experiments else list(ex.available().values())
    con = _console()
    results = []
    for e in chosen:
        con.print(f"[bold]{e.id}[/bold] — {e.title}{' (quick)' if quick else ''}")
        r = ex.run(e, quick=quick, out=Path(out))
        for c in r.checks:
            mark = "[green]PASS[/green]" if c.passed else "[red]FAIL[/red]"
            con.print(f"  {mark} {c.claim}: measured {c.measured} (expected {c.expected})")
        results.append(r)
    index = write_report(results, Path(out), quick=quick)
    n_fail = sum(not c.passed for r in results for c in r.checks)
    n = sum(len(r.checks) for r in results)
    con.print(f"{n - n_fail}/{n} checks passed; report: {index}")
    if n_fail:
        sys.exit(EXIT_ERROR)


@cli.command()
@click.option("--quick", is_flag=True, help="Few steps (a smoke test, not a measurement).")
@click.option("--models", "models_", default="gearbox,chaotic-quartic", show_default=True)
@click.option("--methods", "methods_", default=None, help="Comma-separated (default: all compiled methods).")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None, help="Also write the table (markdown) here.")
def bench(quick, models_, methods_, out):
    """Steps per second of each method, against a NumPy loop and SciPy's DOP853."""
    import dalembert as dl
    from dalembert import bench as b
    models = [m.strip() for m in models_.split(",") if m.strip()]
    for m in models:
        dl.models.spec(m)
    meths = None
    if methods_:
        meths = [m.strip() for m in methods_.split(",") if m.strip()]
        for m in meths:
            dl.methods.get(m)
    err, t0 = _console(stderr=True), time.perf_counter()

    def progress(message):   # one line per stage on stderr: the table goes to stdout
        err.print(f"[dim]{time.perf_counter() - t0:7.1f} s[/dim]  {message}", highlight=False)

    res = b.run_benchmarks(models=tuple(models), methods=meths, quick=quick, progress_callback=progress)
    table = b.format_table(res)
    click.echo(table)
    if out:
        Path(out).write_text(table + "\n")


# ---------------------------------------------------------------------------------------------
# entry point: one-line errors
# ---------------------------------------------------------------------------------------------

#: The library's argument names in an error message, as the command line's flags.
_FLAG_NAMES = (
    (re.compile(r"pass project=True \(CLI: --project\)"), "pass --project"),
    (re.compile(r"\bproject=True\b"), "--project"),
    (re.compile(r"(?<![\w.-])t_final\b"), "--t-final"),
    (re.compile(r"(?<![\w.-])save_every\b"), "--save-every"),
    (re.compile(r"(?<![\w.(-])h(?= = | must | is | \(|\)|;|,|$)"), "--h"),
    (re.compile(r"(?<![\w.-])(q0|v0|R0|omega0|x0|xdot0|xi0)(?= (must|violates|is|has|of)\b)"), r"--init \1"),
    (re.compile(r"\b(Use|or) (--t-final|--h) = "), r"\1 \2 "),     # a suggestion: as it is typed
)


def flag_names(message: str) -> str:
    """``message`` with the API's argument names (h, t_final, save_every, project=True, q0, ...)
    written as the command line's flags (--h, --t-final, --save-every, --project, --init q0)."""
    for pattern, repl in _FLAG_NAMES:
        message = pattern.sub(repl, message)
    return message


def main(argv=None):
    """Console entry point (``dalembert``)."""
    import signal

    from dalembert import _terminate
    previous = signal.getsignal(signal.SIGTERM)
    _terminate.install()           # SIGTERM outside a run's chunks: one line, exit status 143
    try:
        _main(argv)
    finally:                       # (main called in-process, e.g. by tests: leave it as it was)
        if previous is not None and not _terminate.is_cli_process():
            try:
                signal.signal(signal.SIGTERM, previous)
            except ValueError:     # not the main thread: nothing was installed
                pass


def _main(argv):
    from dalembert import _terminate
    _terminate.phase(f"starting `dalembert {' '.join((argv if argv is not None else sys.argv[1:])[:1])}` "
                     f"(building the model, compiling)")
    debug = bool(os.environ.get("DALEMBERT_DEBUG"))
    if not debug:  # warnings (e.g. ParasiticModeWarning) as one line each, no source line
        import warnings
        warnings.showwarning = lambda message, category, *_a, **_k: click.echo(
            f"dalembert: warning: {category.__name__}: {' '.join(str(message).split())}", err=True)
    try:
        from dalembert.config import backends_started
        from dalembert.engine.xla import configure
        # the CLI opts in to the process-wide settings (when it is the process's first JAX user);
        # the small-loop kernel stays per program where it can (engine.xla.configure)
        fresh = not backends_started()
        configure(small_loops=None if fresh else False, cpu_devices=fresh, compilation_cache=True)
        cli.main(args=argv, prog_name="dalembert", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("dalembert: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if debug:
            raise
        click.echo(f"dalembert: error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        click.echo("dalembert: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the CLI contract is one line, no traceback
        if debug:
            raise
        from dalembert.errors import DalembertError, UnknownNameError
        msg = " ".join(str(exc).split())
        if isinstance(exc, UnknownNameError):
            click.echo(f"dalembert: error: {msg}", err=True)
            sys.exit(EXIT_USAGE)
        if isinstance(exc, DalembertError):
            click.echo(f"dalembert: error: {flag_names(msg)}", err=True)
        elif isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            where = exc.filename or "the output directory"
            click.echo(f"dalembert: error: no space left on the device writing {where}: free space "
                       f"there, or write elsewhere (--out DIR)", err=True)
        else:
            click.echo(f"dalembert: error: {type(exc).__name__}: {msg} (DALEMBERT_DEBUG=1 for the traceback)", err=True)
        sys.exit(EXIT_ERROR)
    sys.exit(0)


if __name__ == "__main__":  # pragma: no cover
    main()
