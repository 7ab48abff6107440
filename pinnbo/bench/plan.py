"""The grid of a bench: one run per (case, method, seed), each in its own resumable results folder;
checked before anything runs (a folder holding another run, a planted state file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pinnbo.bench.options import (MULTI_OBJECTIVE_REFERENCE, REFERENCE, BenchError, BenchSettings, default_methods,
                                  default_reference)
from pinnbo.errors import HistoryError, UserError, shown
from pinnbo.files import refuse_links_below
from pinnbo.optimizers import AUTO, METHODS
from pinnbo.runner.build import build_optimizer, build_problem
from pinnbo.runner.case import Case, load_case
from pinnbo.runner.folder import check_folder
from pinnbo.runner.state import CHECKPOINT, load_state, run_identity


@dataclass
class RunJob:
    """One (case, method, seed) run; ``case`` is the run's resolved case (picklable)."""

    case: Case
    case_name: str
    method: str
    seed: int
    done_before: int = 0        # evaluations already on disk when the bench started
    complete: bool = False

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.case_name, self.method, self.seed)

    @property
    def folder(self) -> Path:
        return self.case.output_dir

    @property
    def budget(self) -> int:
        return self.case.budget


@dataclass
class CasePlan:
    """One case of the bench: its folder, what the problem is, and its runs."""

    source: Path
    case: Case
    folder: Path
    problem_name: str
    sense: str
    optimum: float | None
    jobs: list[RunJob]
    methods: list[str] = field(default_factory=list)
    reference: str = REFERENCE
    constraints: tuple[str, ...] = ()     # the problem's constraint names (empty: unconstrained)
    # Several objectives: name -> sense, and the hypervolume's reference point in minimised values;
    # the curves are then the hypervolume (sense maximize, optimum the problem's largest, if known).
    objectives: dict = field(default_factory=dict)
    hypervolume_reference: tuple[float, ...] | None = None

    @property
    def constrained(self) -> bool:
        return bool(self.constraints)

    @property
    def budget(self) -> int:
        return self.case.budget

    @property
    def initial_points(self) -> int:
        return self.case.initial_points


def run_folder(case_folder: Path, method: str, seed: int) -> Path:
    return Path(case_folder) / "runs" / method / f"seed{seed}"


def recorded_evaluations(folder: Path) -> int:
    """Complete lines in the run's evaluations.jsonl (0 when there is none)."""
    path = Path(folder) / "evaluations.jsonl"
    if not path.is_file() or path.is_symlink():  # not a log: the run's own checks say what it is
        return 0
    return sum(1 for line in path.read_bytes().split(b"\n")[:-1] if line.strip())


def run_is_complete(folder: Path, budget: int) -> bool:
    """A run is complete when it has ``budget`` evaluations and its summary.json (written last)."""
    return recorded_evaluations(folder) >= budget and (Path(folder) / "summary.json").exists()


def _check_resumable(folder: Path, case: dict, variables) -> None:
    """Refuse, before anything runs, a run folder that holds another run or a state file that is not
    its own (the run loop would too, but only once a worker reached it)."""
    try:
        if check_folder(Path(folder), case, resume=True, overwrite=False, variables=variables):
            load_state(Path(folder) / CHECKPOINT, run_identity(case), recorded=recorded_evaluations(folder))
    except HistoryError as exc:
        raise BenchError(str(exc)) from None


def plan(settings: BenchSettings) -> list[CasePlan]:
    """Load and check every case, build each problem once (heat-plate fields are solved here and
    cached on disk, so workers only load them), and lay out the runs."""
    plans: list[CasePlan] = []
    overrides = {"budget": settings.budget, "initial_points": settings.initial_points, "device": settings.device,
                 "smoke": settings.smoke or None}
    for source in settings.cases:
        try:
            base = load_case(source, overrides)
            problem = build_problem(base)
        except UserError as exc:
            message = str(exc)
            raise BenchError(message if message.startswith("case:") else f"{source}: {message}") from None
        if problem.objective is None:
            raise BenchError(f"{source}: problem {shown(problem.name)} is measured outside pinnbo; a bench needs an "
                             "oracle it can call (give the case `oracle: {command: ...}`)")
        if any(p.case.name == base.name for p in plans):
            raise BenchError(f"cases: two cases are named {shown(base.name)}; each case needs its own folder")
        folder = settings.output / base.name
        constrained = bool(problem.constraints)
        several = bool(problem.objectives)
        if several and problem.reference is None:
            raise BenchError(f"{source}: a bench of several objectives compares hypervolumes, which needs one "
                             "reference point for every run: give the problem's reference (params.reference)")
        reference = settings.reference or (MULTI_OBJECTIVE_REFERENCE if several else default_reference(constrained))
        kinds = tuple(dict.fromkeys(v.kind for v in problem.domain.variables))
        methods = settings.methods if settings.methods is not None else \
            default_methods(constrained, reference, several=several, kinds=kinds)
        if settings.reference is None and reference not in methods and methods:
            # the kind's usual reference cannot take this case's variables: the physics method where
            # it can, otherwise the first one
            reference = "pde-gp" if "pde-gp" in methods and problem.pde is not None else methods[0]
            if settings.methods is None:   # the reference first, as default_methods orders them
                methods = [reference] + [m for m in methods if m != reference]
        if constrained:
            blind = [m for m in methods if m != AUTO and not METHODS[m].handles_constraints]
            if blind:
                able = ", ".join(sorted(m for m, c in METHODS.items() if c.handles_constraints))
                raise BenchError(f"--methods: {shown(blind[0])} ignores constraints and case {shown(base.name)} has "
                                 f"{', '.join(problem.constraint_names)}; use methods among {able} (the default for "
                                 "a constrained case), and bench unconstrained cases separately")
        params = {}
        for method in methods:
            # The case's own method_params were written for its method: kept for that method
            # only; --params overrides on top. Every other method runs with its defaults.
            params[method] = dict(base.method_params) if method == base.method else {}
            params[method].update(settings.params.get(method, {}))
            try:   # a method the problem does not admit (pde-gp and a nonlinear PDE) is refused now
                build_optimizer(base.model_copy(update={"method": method, "method_params": params[method]}), problem)
            except UserError as exc:
                raise BenchError(f"{source}: {method}: {exc}") from None
        jobs = []
        for seed in settings.seeds:
            for method in methods:
                case = base.model_copy(update={"method": method, "method_params": params[method], "seed": seed,
                                               "output": str(run_folder(folder, method, seed))})
                job = RunJob(case, base.name, method, seed)
                refuse_links_below(settings.output, job.folder)
                _check_resumable(job.folder, case.to_dict(), problem.domain.names)
                job.done_before = recorded_evaluations(job.folder)
                job.complete = run_is_complete(job.folder, job.budget)
                jobs.append(job)
        reference_point = None if problem.minimised_reference is None else tuple(problem.minimised_reference)
        plans.append(CasePlan(Path(source), base, folder, problem.name, "maximize" if several else problem.sense,
                              problem.optimum, jobs, methods, reference, problem.constraint_names,
                              dict(problem.objectives), reference_point))
    return plans
