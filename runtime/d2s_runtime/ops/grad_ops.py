"""Primitives that gradient rules need when shapes are only known at run time."""
from .registry import ShapeError, TensorType, defop
from .rules import fmt_shape


def _split_like_infer(g, *likes, axis=0):
    a = axis % max(g.ndim, 1)
    for t in likes:
        if t.ndim != g.ndim:
            raise ShapeError(f"split_like: {fmt_shape(t.shape)} and {fmt_shape(g.shape)} differ in rank")
    return tuple(TensorType(g.shape[:a] + (t.shape[a],) + g.shape[a + 1:], g.dtype) for t in likes)


@defop("split_like", _split_like_infer, n_out=None)
def _split_like(xp, g, *likes, axis=0):
    """g cut along ``axis`` into pieces as long as each of ``likes`` (the gradient of concat
    when the sizes are unknown until the program runs); the likes' values are never read."""
    a = axis % g.ndim
    cuts, total = [], 0
    for t in likes[:-1]:
        total += t.shape[a]
        cuts.append(total)
    return tuple(xp.split(g, cuts, axis=a))


def _custom_function_infer(*xs, fn, n_out):
    return tuple(TensorType(t.shape, t.dtype) for t in xs[len(xs) - n_out:])


@defop("custom_function", _custom_function_infer, n_out=None)
def _custom_function(xp, *xs, fn, n_out):
    """The outputs of a custom autograd Function (``d2s.autograd.Function``), passed through:
    the inputs are its tensor arguments, the tensors its backward reads, then its forward's
    outputs (the last ``n_out``), which come back unchanged. Only the gradient differs: the
    class's own ``backward`` (identified by ``fn``) instead of the derivative of the forward."""
    return tuple(xs[len(xs) - n_out:])
