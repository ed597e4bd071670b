"""The base of ``d2s.optim.lr_scheduler``: ``LRScheduler`` and the helpers every schedule uses."""
import warnings
from weakref import ref

from ..tensor import Tensor
from .optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different "
    "from None, the closed form is used instead of the new chainable form, where available.")


def _clone(v):
    return v.clone() if isinstance(v, Tensor) else v


def _format_param(name, optimizer, param):
    """One value per parameter group (a scalar is repeated)."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(param)} values, param_groups has {len(optimizer.param_groups)}.")
    else:
        param = [param] * len(optimizer.param_groups)
    return [_clone(p) for p in param]


def _group_values(optimizer, key):
    """``group[key]`` of every group (tensors copied, so a caller cannot change the optimizer's)."""
    return [_clone(g[key]) for g in optimizer.param_groups]


def _set_group_value(group, key, value):
    """Set ``group[key]``; a tensor learning rate is filled in place, as PyTorch does."""
    if isinstance(group[key], Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


class LRScheduler:
    """Base class: subclasses implement :meth:`get_lr` (the next rates from the current ones).

    Args:
        optimizer: the optimizer whose ``param_groups[i]['lr']`` the schedule sets.
        last_epoch: the index of the last step taken; -1 (default) starts the schedule. A
            resumed schedule needs ``initial_lr`` in every group (load the optimizer's state
            first).

    Making a scheduler sets the groups' ``lr`` to the schedule's first value (``initial_lr``
    keeps the starting one).
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _clone(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0: load the optimizer's state dict first, or "
                                   "start with last_epoch=-1")
        self.base_lrs = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self):
        """Reset the step count and take the first step (setting the first rates)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self):
        """Every attribute but the optimizer, as PyTorch's schedulers save themselves."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restore attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The rates the last :meth:`step` set, one per parameter group (copies)."""
        return self._last_lr

    def get_lr(self):
        """The next rates (called by :meth:`step`; use :meth:`get_last_lr` to read them)."""
        raise NotImplementedError

    def step(self, epoch=None):
        """Advance the schedule one step and set the groups' ``lr``.

        Args:
            epoch: deprecated (as in PyTorch): jump to this epoch, using the closed form
                where the schedule has one.
        """
        if self._step_count == 1:
            if not getattr(self.optimizer.step, "_wrapped_by_lr_sched", False):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`.", UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                              "You should call them in the opposite order: `optimizer.step()` before "
                              "`lr_scheduler.step()`. Failure to do this will result in skipping the first "
                              "value of the learning rate schedule.", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        values = list(values)
        if len(values) != len(self.optimizer.param_groups):
            # (PyTorch's strict zip raises here too, as "zip() argument 2 is shorter than argument 1")
            raise ValueError(f"{type(self).__name__}.step(): the optimizer has {len(self.optimizer.param_groups)} "
                             f"parameter groups but the schedule gives {len(values)} learning rates: a group added "
                             "with add_param_group after the scheduler was made is not in its schedule; make the "
                             "scheduler after adding every group")
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _warn_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)

    def _current(self):
        return _group_values(self.optimizer, "lr")


_LRScheduler = LRScheduler  # PyTorch's older name


def _track_optimizer_steps(opt):
    """Wrap ``opt.step`` (once) so schedulers can tell whether it ran before their first step."""
    if getattr(opt.step, "_wrapped_by_lr_sched", False):
        return
    opt_ref = ref(opt)
    func = opt.step.__func__

    def wrapper(*args, **kwargs):
        o = opt_ref()
        o._opt_called = True
        return func.__get__(o, o.__class__)(*args, **kwargs)

    wrapper.__doc__, wrapper.__name__ = func.__doc__, func.__name__
    wrapper._wrapped_by_lr_sched = True
    opt.step = wrapper
