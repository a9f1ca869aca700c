"""Parameters and buffers compiled in as constants (inference), guarded against change.

An inference graph that takes a model's parameters and buffers as inputs (AOTAutograd lifts them)
runs faster when they are constants of the TensorGraph graph: batch norm's per-channel scale and
shift, weight casts and transposes are then computed once at compile time, and each call feeds
only the activations (one DLPack handoff each) instead of hundreds of tensors.

A constant holds the value the tensor had when it was compiled, so every call checks each frozen
tensor's address (``data_ptr()``) and version counter (``_version``, which PyTorch bumps on every
in-place write: an optimizer step, ``load_state_dict``, ``copy_`` under ``no_grad``), right after
launching the run (the check's host time then overlaps the device's work; a failed check drops
that run's result and runs again; a graph that writes an input checks before). A change
recompiles with the new values (one INFO log line); after MAX_REFRESHES recompiles of one
graph the tensors are fed each call instead (one WARNING line), as without freezing. The frozen
tensors' storage is held, so it cannot be reused by another tensor at the same address. Not seen:
writes that bypass the version counter (``tensor.data``, optimizers writing raw memory such as
apex/DeepSpeed fused optimizers, parameters re-pointed into a flat buffer). Opt-in for that
reason (``backend(..., freeze=True)``), as Inductor's freezing is.
"""
import logging
import operator

from ._lower import Runner, lower

log = logging.getLogger("tensorgraph.torch")

MAX_REFRESHES = 2


class Guard:
    """Whether tensors still hold the values they had: same addresses and version counters. The
    tensors are `objs` (fixed), or picked from each call's arguments at `positions`."""

    def __init__(self, objs, positions=None):
        import torch
        self.objs = tuple(objs)
        self._ptr = torch.Tensor.data_ptr
        self._ver = operator.attrgetter("_version")
        self.ptrs = tuple(map(self._ptr, self.objs))
        self.versions = tuple(map(self._ver, self.objs))
        if positions is None:
            self._pick = None
        elif len(positions) == 1:
            i = positions[0]
            self._pick = lambda args: (args[i],)
        else:
            self._pick = operator.itemgetter(*positions)

    def holds(self, args=()):
        objs = self.objs if self._pick is None else self._pick(args)
        return tuple(map(self._ptr, objs)) == self.ptrs and tuple(map(self._ver, objs)) == self.versions

    def changed(self, args=()):
        """Indices (into objs) of the tensors whose address or version changed, for the log line."""
        objs = self.objs if self._pick is None else self._pick(args)
        return [k for k, t in enumerate(objs) if self._ptr(t) != self.ptrs[k] or self._ver(t) != self.versions[k]]


class Frozen:
    """A fully converted inference graph whose static inputs (parameters and buffers: the
    predicate `is_static(tensor, position)` on the first call's tensors) are compiled in as constants (module
    docstring). Inputs the graph writes (copy_) or returns stay fed. `low_fed` is the graph
    lowered with every input fed: compiled only if the guard keeps failing."""

    def __init__(self, gm, vals, low_fed, device, precision, budget, is_static):
        self.gm, self.vals, self.low_fed = gm, vals, low_fed
        self.device, self.precision, self.budget = device, precision, budget
        self.is_static = is_static
        self.runner = self.guard = self.held = None
        self.refreshes = 0
        self.frozen_count = 0
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        fed = {n for n, _ in low_fed.feeds}
        kept = {n for n, _ in low_fed.mutations}
        from torch.fx.node import map_arg
        map_arg(low_fed.output, lambda n: kept.add(n) if n.op == "placeholder" else None)
        self.candidates = [i for i, n in enumerate(self.placeholders) if n in fed and n not in kept]

    def __call__(self, *args):
        r = self.runner
        if r is not None:
            if self.guard is None:
                return r(*args)
            if not r.mutations:
                # Launched first, checked while the device runs it: the guard's host time (a
                # data_ptr and a version read per frozen tensor) is off the call's critical
                # path. A failed guard drops that result (computed from the old constants, it
                # wrote no input: no mutations) and runs again with the new values.
                out = r(*args)
                if self.guard.holds(args):
                    return out
            elif self.guard.holds(args):
                return r(*args)
        return self._rebuild(args)(*args)

    def _rebuild(self, args):
        import torch
        if self.runner is not None:
            names = [self.placeholders[self.positions[k]].name for k in self.guard.changed(args)]
            self.refreshes += 1
            if self.refreshes > MAX_REFRESHES:
                log.warning("tensorgraph.torch: %d constant inputs changed again (%s); they are fed each "
                            "call from now on", len(names), ", ".join(names[:5]))
                self.runner = Runner(self.low_fed, self.device, self.precision, self.budget)
                self.guard, self.frozen_count, self.held = None, 0, None
                return self.runner
            log.info("tensorgraph.torch: recompiling with the new values of %d constant inputs (%s)",
                     len(names), ", ".join(names[:5]))
        self.positions = [i for i in self.candidates
                          if isinstance(args[i], torch.Tensor) and not args[i].is_inference()
                          and self.is_static(args[i], i)]  # inference tensors have no version counter
        # The guard's snapshot first: a write racing with the lowering below is then seen.
        guard = Guard([args[i] for i in self.positions], self.positions) if self.positions else None
        frozen = {self.placeholders[i]: args[i].detach() for i in self.positions}
        low = lower(self.gm, self.vals, frozen=frozen)
        if low.unsupported:  # a constant the converters cannot take: feed everything
            self.runner, self.guard, self.frozen_count = Runner(self.low_fed, self.device, self.precision,
                                                                self.budget), None, 0
            self.held = None
            return self.runner
        self.runner = Runner(low, self.device, self.precision, self.budget)
        self.guard = guard
        # The compiled-in tensors' storage stays alive: after `p.data = other`, no new tensor can
        # come at a frozen address, so the guard's data_ptr check sees the rebinding.
        self.held = frozen
        self.frozen_count = len(self.positions)
        return self.runner
