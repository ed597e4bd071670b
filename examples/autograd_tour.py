"""A tour of d2s autograd through the seed examples: prints each value and whether it checks out.

    python examples/autograd_tour.py

Exits with status 1 if any check fails.
"""
import sys

import numpy as np

import d2s
from d2s import func

failures = []


def check(label, got, expected):
    """Print one result line; remember failures for the exit status."""
    if isinstance(got, d2s.Tensor):
        got = got.tolist()
    ok = got == expected if not isinstance(expected, np.ndarray) else np.array_equal(np.asarray(got), expected)
    print(f"  {'ok  ' if ok else 'FAIL'} {label:<34} = {got!r:<28} (expected {expected!r})"
          if not isinstance(expected, np.ndarray) else
          f"  {'ok  ' if ok else 'FAIL'} {label:<34} = {np.asarray(got).tolist()!r}")
    if not ok:
        failures.append(label)


print("1. y = (x + w) * (w + 1) at x=2, w=1")
x = d2s.tensor(2.0, requires_grad=True)
w = d2s.tensor(1.0, requires_grad=True)
a = x + w
b = w + 1
y = a * b
a.retain_grad()
y.backward()
check("w.grad", w.grad.item(), 5.0)
check("x.grad", x.grad.item(), 2.0)
check("a.grad (retained)", a.grad.item(), 2.0)
check("b.grad (not retained)", b.grad, None)
check("is_leaf x, w, a, b, y", [t.is_leaf for t in (x, w, a, b, y)], [True, True, False, False, False])
check("grad_fn names a, b, y", [t.grad_fn.name() for t in (a, b, y)],
      ["AddBackward0", "AddBackward0", "MulBackward0"])
check("y.grad_fn.next_functions", [fn.name() for fn, _ in y.grad_fn.next_functions],
      ["AddBackward0", "AddBackward0"])
check("a.grad_fn.next_functions", [fn.name() for fn, _ in a.grad_fn.next_functions],
      ["AccumulateGrad", "AccumulateGrad"])
x2 = d2s.tensor(2.0, requires_grad=True)
w2 = d2s.tensor(1.0, requires_grad=True)
b2 = w2 + 1
b2.retain_grad()
((x2 + w2) * b2).backward()
check("b.grad after b.retain_grad()", b2.grad.item(), 3.0)

print("2. out = x**2 + x**3 at x=1")
x = d2s.tensor(1.0, requires_grad=True)
out = x ** 2 + x ** 3
out.backward()
check("x.grad", x.grad.item(), 5.0)

print("3. y = x**3 at x=[2, 3]")
x = d2s.tensor([2.0, 3.0], requires_grad=True)
y = x ** 3
(g1,) = d2s.grad(y.sum(), x, create_graph=True)
check("first derivative", g1, [12.0, 27.0])
(g2,) = d2s.grad(g1.sum(), x)
check("second derivative (create_graph)", g2, [12.0, 18.0])

print("4. z = x*y + x.sum() at x=[1, 2], y=[3, 4]")
x = d2s.tensor([1.0, 2.0], requires_grad=True)
y = d2s.tensor([3.0, 4.0], requires_grad=True)
z = x * y + x.sum()
check("z", z, [6.0, 11.0])
z.sum().backward()
check("x.grad", x.grad, [5.0, 6.0])
check("y.grad", y.grad, [1.0, 2.0])

print("5. f(x) = sum(x**2) at x=[1, 2, 3] with d2s.func")


def f(x):
    return d2s.sum(x ** 2)


x = d2s.tensor([1.0, 2.0, 3.0])
value, grad = func.value_and_grad(f)(x)
check("value", value.item(), 14.0)
check("grad", grad, [2.0, 4.0, 6.0])
check("jacfwd", func.jacfwd(f)(x), [2.0, 4.0, 6.0])
check("hessian == 2*I", func.hessian(f)(x).numpy(), 2 * np.eye(3))

print("6. y = x**2; z = y.detach(); w = z**2")
x = d2s.tensor(3.0, requires_grad=True)
y = x ** 2
z = y.detach()
w = z ** 2
try:
    w.backward()
    check("w.backward() raises", "no error", "RuntimeError")
except RuntimeError as e:
    print(f"       w.backward() -> RuntimeError: {e}")
    check("w.backward() raises", "RuntimeError", "RuntimeError")
check("x.grad stays None", x.grad, None)

print()
if failures:
    print(f"{len(failures)} check(s) FAILED: {', '.join(failures)}")
    sys.exit(1)
print("all checks passed")
