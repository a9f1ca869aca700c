"""Converters of neural-network ATen ops: convolution, pooling, batch and layer normalization,
matrix products, embedding, dropout (inference) and scaled dot-product attention. Layouts are
PyTorch's: NCHW activations, OIHW weights."""
import math

from .. import _tensorgraph as tg
from ._helpers import cast_to, element_count, norm_axis, pair, refuse_negative_indices, tensor
from ._registry import Unavailable, Unsupported, converter
from ._symbolic import dims, same_shape, tg_dims


def _conv_padding(padding):
    p = pair(padding)
    return (p[0], p[0], p[1], p[1])


@converter("aten::convolution", "aten::_convolution", "aten::conv2d",
           notes="2-D (NCHW, OIHW), stride, padding, dilation, groups, bias; transposed 2-D")
def convolution(ctx, x, w, bias=None, stride=1, padding=0, dilation=1, transposed=False,
                output_padding=0, groups=1, *rest):
    x, w = tensor(x), tensor(w)
    if ctx.op_name == "aten::conv2d":  # conv2d(x, w, bias, stride, padding, dilation, groups)
        groups, transposed, output_padding = transposed if transposed is not False else 1, False, 0
    if x.ndim != 4:
        raise Unsupported(f"{x.ndim - 2}-D convolution (only 2-D)")
    if isinstance(padding, str):
        raise Unsupported(f"padding '{padding}'")
    kw = dict(strides=pair(stride), dilations=pair(dilation), explicit_padding=_conv_padding(padding),
              groups=int(groups), data_layout="nchw", weights_layout="oihw")
    if transposed:
        y = tg.conv_transpose2d(x, w, output_padding=pair(output_padding), **kw)
    else:
        y = tg.conv2d(x, w, **kw)
    if bias is not None:
        y = y + tg.reshape(cast_to(tensor(bias), y.dtype), [1, -1, 1, 1])
    return y


def _pool_args(x, kernel_size, stride, padding, dilation):
    if x.ndim != 4:
        raise Unsupported(f"pooling of a rank-{x.ndim} input (only NCHW)")
    k = pair(kernel_size)
    s = pair(stride) if stride not in (None, []) else k
    return k, s, _conv_padding(padding), pair(dilation)


@converter("aten::max_pool2d_with_indices", "aten::max_pool2d",
           notes="2-D, NCHW; the indices output is computed (flat h*W+w) only when used")
def max_pool2d(ctx, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    x = tensor(x)
    k, s, p, d = _pool_args(x, kernel_size, stride, padding, dilation)
    y = tg.max_pool2d(x, kernel_size=k, strides=s, dilations=d, explicit_padding=p, ceil_mode=bool(ceil_mode),
                      data_layout="nchw")
    if ctx.op_name == "aten::max_pool2d":
        return y
    return (y, _LazyIndices(ctx, x, y, k, s, p, d, ceil_mode))


class _LazyIndices(Unavailable):
    """max_pool2d_with_indices' indices, built (int64, flat index h * W + w of each window's first
    maximum, as PyTorch) only when a converted node consumes them."""

    def __init__(self, ctx, x, y, k, s, p, d, ceil_mode):
        super().__init__("max_pool2d indices")
        self.args = (ctx.g, x, k, s, p, d, ceil_mode)
        self.like = y  # the pooled output: the indices' shape
        # Whether max_pool2d_with_indices_backward's converter (routed by the forward input, the
        # indices unread) takes this pooling: then indices that only the backward reads need not
        # be computed (tensorgraph.torch._lower: Runner's zero_outputs).
        self.unread_by_backward = list(d) == [1, 1] and not ceil_mode

    def build(self):
        g, x, k, s, p, d, ceil_mode = self.args
        if ceil_mode:
            raise Unsupported("max_pool2d indices with ceil_mode")
        n, c, h, w = x.shape
        ho = (h + p[0] + p[1] - d[0] * (k[0] - 1) - 1) // s[0] + 1
        wo = (w + p[2] + p[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
        xp = tg.pad(x, [0, 0, p[0], p[2]], [0, 0, p[1], p[3]], value=-math.inf) if any(p) else x
        windows = []
        for i in range(k[0]):
            for j in range(k[1]):
                b0, b1 = i * d[0], j * d[1]
                v = tg.slice(xp, [b0, b1], [b0 + (ho - 1) * s[0] + 1, b1 + (wo - 1) * s[1] + 1],
                             strides=[s[0], s[1]], axes=[2, 3])
                windows.append(tg.expand_dims(v, 4))
        j = tg.cast(tg.argmax(tg.concat(windows, 4), axis=4), tg.int64)  # window position, first max
        oh = tg.cast(tg.iota(g, [n, c, ho, wo], axis=2), tg.int64) * s[0] - p[0]
        ow = tg.cast(tg.iota(g, [n, c, ho, wo], axis=3), tg.int64) * s[1] - p[2]
        # j's window row and column without an integer division (a division is checked for zero
        # divisors on the device, and that check makes the run wait for the device at its end):
        # the row is how many multiples of k[1] j has reached (j < k[0] * k[1]).
        wr = None
        for t in range(1, k[0]):
            reached = tg.cast(tg.greater_equal(j, g.constant(t * k[1], dtype=tg.int64)), tg.int64)
            wr = reached if wr is None else wr + reached
        wc = j if wr is None else j - wr * k[1]
        row = oh if wr is None else oh + wr * d[0]
        col = ow + wc * d[1]
        return row * w + col


@converter("aten::avg_pool2d", notes="2-D, NCHW, ceil_mode, count_include_pad; no divisor_override")
def avg_pool2d(ctx, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    x = tensor(x)
    if divisor_override is not None:
        raise Unsupported("divisor_override")
    k, s, p, _ = _pool_args(x, kernel_size, stride, padding, 1)
    return tg.avg_pool2d(x, kernel_size=k, strides=s, explicit_padding=p, ceil_mode=bool(ceil_mode),
                         count_include_pad=bool(count_include_pad), data_layout="nchw")


@converter("aten::adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d",
           notes="output 1x1 or dividing the input size")
def adaptive_avg_pool2d(ctx, x, output_size):
    x = tensor(x)
    if x.ndim != 4:
        raise Unsupported("adaptive_avg_pool2d of a non-NCHW input")
    oh, ow = pair(output_size)
    h, w = x.shape[2], x.shape[3]
    if (oh, ow) == (1, 1):
        return tg.reduce_mean(x, axes=[2, 3], keep_dims=True)
    if h % oh or w % ow:
        raise Unsupported(f"adaptive pooling {h}x{w} -> {oh}x{ow} (sizes do not divide)")
    k = [h // oh, w // ow]
    return tg.avg_pool2d(x, kernel_size=k, strides=k, data_layout="nchw")


def _empty_like(ctx, i):
    """Output i of the node when PyTorch gives an empty tensor there (inference batch norm's saved
    statistics), else Unavailable."""
    ex = ctx.out[i] if isinstance(ctx.out, (tuple, list)) and len(ctx.out) > i else None
    # dims, not numel() or int(): a symbolic size must not be made concrete (a guard) here.
    try:
        shape = tg_dims(dims(ex.shape)) if ex is not None and hasattr(ex, "shape") else None
    except Unsupported:  # an expression of two symbols: not an empty tensor
        shape = None
    if shape is not None and 0 in shape:
        from ._helpers import tg_dtype
        return tg.fill(ctx.g, shape, 0.0, tg_dtype(ex.dtype))
    return Unavailable(f"output {i} of {ctx.op_name} (not computed by TensorGraph)")


def _bn_train(ctx, x, w, b, eps, rm=None):
    """Batch statistics over all axes but 1: (y, mean [C], invstd [C], biased var [C], count).
    One pass over x: the sums of d = x - s and d * d for a per-channel shift s (the running mean
    when there is one, else 0), which compile's reduction fusion merges into one kernel (a
    two-pass variance reads x twice before the normalization reads it again); the shift keeps
    E[d^2] - E[d]^2 from cancelling when the mean is large against the spread."""
    axes = [a for a in range(x.ndim) if a != 1]
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    xf = cast_to(x, tg.float32) if x.dtype in (tg.float16, tg.bfloat16) else x
    shift = cast_to(tensor(rm), xf.dtype) if isinstance(rm, tg.Tensor) and list(rm.shape) == [x.shape[1]] else None
    d = xf - tg.reshape(shift, shape) if shift is not None else xf
    n = element_count(x, axes, xf.dtype)  # an int, or a scalar tensor for symbolic sizes
    m1 = tg.reduce_sum(d, axes=axes) * (1.0 / n)
    var = tg.relu(tg.reduce_sum(d * d, axes=axes) * (1.0 / n) - m1 * m1)
    mean = m1 + shift if shift is not None else m1
    invstd = tg.rsqrt(var + eps)
    y = (xf - tg.reshape(mean, shape)) * tg.reshape(invstd, shape)
    if w is not None:
        y = y * tg.reshape(cast_to(tensor(w), y.dtype), shape)
    if b is not None:
        y = y + tg.reshape(cast_to(tensor(b), y.dtype), shape)
    return cast_to(y, x.dtype), mean, invstd, var, n


def _unbiased(var, n):
    """The running variance's update term var * n / (n - 1) (n >= 2; var itself for n = 1), for
    a count n that is an int or a scalar tensor (symbolic sizes)."""
    if isinstance(n, int):
        return var * (n / max(n - 1, 1))
    return var * (n / tg.maximum(n - 1.0, n * 0.0 + 1.0))


def _bn_eval(ctx, x, w, b, rm, rv, eps):
    c = x.shape[1]
    shape = [1, c] + [1] * (x.ndim - 2)
    xf = cast_to(x, tg.float32) if x.dtype in (tg.float16, tg.bfloat16) else x
    known = [ctx.value(t) for t in (rm, rv)] + [ctx.value(t) if t is not None else 1.0 for t in (w, b)]
    if all(k is not None for k in known):  # compiled-in statistics: scale and shift computed now
        import torch
        dt = torch.float64 if xf.dtype == tg.float64 else torch.float32
        mean, var, weight, bias = (k.to(dt) if isinstance(k, torch.Tensor) else k for k in known)
        scale = torch.rsqrt(var + eps) * weight
        shift = -mean * scale + (bias if b is not None else 0.0)
        return cast_to(xf * ctx.constant(scale.reshape(shape)) + ctx.constant(shift.reshape(shape)), x.dtype)
    scale = tg.rsqrt(cast_to(tensor(rv), xf.dtype) + eps)
    if w is not None:
        scale = scale * cast_to(tensor(w), xf.dtype)
    shift = -cast_to(tensor(rm), xf.dtype) * scale
    if b is not None:
        shift = shift + cast_to(tensor(b), xf.dtype)
    return cast_to(xf * tg.reshape(scale, shape) + tg.reshape(shift, shape), x.dtype)


@converter("aten::native_batch_norm", "aten::batch_norm", "aten::_native_batch_norm_legit",
           "aten::_native_batch_norm_legit_no_training", "aten::_native_batch_norm_legit_functional",
           notes="inference (running stats) and training (batch stats; the functional form returns "
                 "the updated running stats; the in-place forms stay in PyTorch)")
def batch_norm(ctx, x, w, b, rm, rv, training=False, momentum=0.1, eps=1e-5, *rest):
    x = tensor(x)
    name = ctx.op_name
    if name == "aten::_native_batch_norm_legit" and not isinstance(rv, (tg.Tensor, type(None))):
        # the no-stats overload: (x, w, b, training, momentum, eps)
        raise Unsupported("batch norm without running stats")
    if name == "aten::_native_batch_norm_legit_no_training":
        training, momentum, eps = False, training, momentum
    if name == "aten::batch_norm":  # batch_norm(x, w, b, rm, rv, training, momentum, eps, cudnn_enabled)
        pass
    if not training:
        y = _bn_eval(ctx, x, w, b, rm, rv, float(eps))
        if name == "aten::batch_norm":
            return y
        return (y, _empty_like(ctx, 1), _empty_like(ctx, 2))
    y, mean, invstd, var, n = _bn_train(ctx, x, w, b, float(eps), rm)
    if name == "aten::batch_norm":
        raise Unsupported("training batch_norm updates running stats in place")
    if name == "aten::_native_batch_norm_legit_functional":
        m = float(momentum)
        unbiased = _unbiased(var, n)
        new_rm = cast_to(tensor(rm), tg.float32) * (1 - m) + mean * m
        new_rv = cast_to(tensor(rv), tg.float32) * (1 - m) + unbiased * m
        return (y, mean, invstd, cast_to(new_rm, rm.dtype), cast_to(new_rv, rv.dtype))
    if rm is not None:  # native_batch_norm(training=True) mutates the running stats: PyTorch's job
        raise Unsupported("training batch norm that updates running stats in place")
    return (y, mean, invstd)


@converter("aten::_batch_norm_with_update_functional", "aten::_batch_norm_no_update",
           notes="PyTorch >= 2.3's batch norm: training with updated running stats returned, and "
                 "inference; the reserve output only when empty")
def batch_norm_update(ctx, x, w, b, rm, rv, momentum=0.1, eps=1e-5):
    x = tensor(x)
    if ctx.op_name == "aten::_batch_norm_no_update":
        y = _bn_eval(ctx, x, w, b, rm, rv, float(eps))
        return (y, _empty_like(ctx, 1), _empty_like(ctx, 2), _empty_like(ctx, 3))
    y, mean, invstd, var, n = _bn_train(ctx, x, w, b, float(eps), rm)
    m = float(momentum)
    unbiased = _unbiased(var, n)
    new_rm = cast_to(tensor(rm), tg.float32) * (1 - m) + mean * m
    new_rv = cast_to(tensor(rv), tg.float32) * (1 - m) + unbiased * m
    return (y, mean, invstd, _empty_like(ctx, 3), cast_to(new_rm, rm.dtype), cast_to(new_rv, rv.dtype))


@converter("aten::native_layer_norm", "aten::layer_norm",
           notes="normalized_shape = trailing dims; mean and rstd outputs too")
def layer_norm(ctx, x, normalized_shape, w=None, b=None, eps=1e-5, *rest):
    x = tensor(x)
    k = len(normalized_shape)
    begin = x.ndim - k
    if list(x.shape[begin:]) != list(normalized_shape):
        raise Unsupported(f"normalized_shape {list(normalized_shape)} vs input {list(x.shape)}")
    xf = cast_to(x, tg.float32) if x.dtype in (tg.float16, tg.bfloat16) else x
    wf = None if w is None else cast_to(tensor(w), xf.dtype)
    bf = None if b is None else cast_to(tensor(b), xf.dtype)
    y = cast_to(tg.layer_norm(xf, wf, bf, begin_axis=begin, epsilon=float(eps)), x.dtype)
    if ctx.op_name == "aten::layer_norm":
        return y
    axes = list(range(begin, x.ndim))
    mean = tg.reduce_mean(xf, axes=axes, keep_dims=True)
    rstd = tg.rsqrt(tg.reduce_variance(xf, axes=axes, keep_dims=True) + float(eps))
    return (y, mean, rstd)


@converter("aten::mm", notes="2-D")
def mm(ctx, a, b):
    return tg.matmul(tensor(a), tensor(b))


@converter("aten::bmm", notes="3-D batched")
def bmm(ctx, a, b):
    return tg.matmul(tensor(a), tensor(b))


@converter("aten::addmm", notes="beta * bias + alpha * (a @ b)")
def addmm(ctx, bias, a, b, beta=1, alpha=1):
    y = tg.matmul(tensor(a), tensor(b))
    if alpha != 1:
        y = y * float(alpha)
    if beta == 0:
        return y
    c = cast_to(tensor(bias), y.dtype)
    return y + (c * float(beta) if beta != 1 else c)


@converter("aten::baddbmm", notes="beta * input + alpha * (a @ b), batched")
def baddbmm(ctx, bias, a, b, beta=1, alpha=1):
    return addmm(ctx, bias, a, b, beta, alpha)


def _matmul(a, b, transpose_b=False):
    """PyTorch's matmul: 1-D operands promoted and squeezed, batch dims broadcast."""
    if a.ndim == 1 and b.ndim == 1:
        return tg.reduce_sum(a * b, axes=[0])
    squeeze_a = a.ndim == 1
    if squeeze_a:
        a = tg.expand_dims(a, 0)
    if b.ndim == 1:
        y = tg.reduce_sum(a * b, axes=[a.ndim - 1])
        return tg.squeeze(y, [0]) if squeeze_a else y
    if b.ndim == 2 and a.ndim > 2:  # fold the batch dims of a into its rows
        lead = list(a.shape[:-1])
        y = tg.matmul(tg.reshape(a, [-1, a.shape[-1]]), b, transpose_b=transpose_b)
        y = tg.reshape(y, lead + [y.shape[-1]])
    else:
        if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
            batch = _broadcast_shape(a.shape[:-2], b.shape[:-2])
            a = tg.broadcast_to(a, batch + list(a.shape[-2:]))
            b = tg.broadcast_to(b, batch + list(b.shape[-2:]))
        y = tg.matmul(a, b, transpose_b=transpose_b)
    return tg.squeeze(y, [y.ndim - 2]) if squeeze_a else y


def _broadcast_shape(a, b):
    a, b = list(a), list(b)
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise Unsupported(f"batch dims {a} and {b} do not broadcast")
        out.append(max(x, y))
    return out


@converter("aten::matmul", notes="1-D promotion, batch broadcasting")
def matmul(ctx, a, b):
    return _matmul(tensor(a), tensor(b))


@converter("aten::linear", notes="x @ w.T + b, any leading dims")
def linear(ctx, x, w, b=None):
    x, w = tensor(x), tensor(w)
    y = _matmul(x, w, transpose_b=True)
    return y + cast_to(tensor(b), y.dtype) if b is not None else y


@converter("aten::embedding", notes="gather rows (padding_idx affects only gradients); a negative "
           "index raises, as in PyTorch")
def embedding(ctx, w, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    w = tensor(w)
    return tg.gather(w, refuse_negative_indices(w, tensor(indices), 0), axis=0)


@converter("aten::dropout", "aten::native_dropout", "aten::feature_dropout",
           notes="inference only (train=False or p=0): identity; training dropout stays in PyTorch")
def dropout(ctx, x, p, train):
    x = tensor(x)
    if train and p > 0:
        raise Unsupported("training dropout (random mask)")
    if ctx.op_name == "aten::native_dropout":
        return (x, tg.fill(ctx.g, list(x.shape), 1.0, tg.bool_))
    return x


def _attention(ctx, q, k, v, mask=None, is_causal=False, scale=None):
    q, k, v = tensor(q), tensor(k), tensor(v)
    d = q.shape[-1]
    s = float(scale) if scale is not None else 1.0 / math.sqrt(d)
    scores = _matmul(q, k, transpose_b=True)
    scores = scores * s
    if is_causal:
        lq, lk = q.shape[-2], k.shape[-2]
        rows = tg.iota(ctx.g, [lq, lk], axis=0)
        cols = tg.iota(ctx.g, [lq, lk], axis=1)
        scores = tg.select(tg.less_equal(cols, rows), scores, ctx.g.constant(-math.inf, dtype=scores.dtype))
    if mask is not None:
        mask = tensor(mask)
        if mask.dtype == tg.bool_:
            scores = tg.select(mask, scores, ctx.g.constant(-math.inf, dtype=scores.dtype))
        else:
            scores = scores + cast_to(mask, scores.dtype)
    sf = cast_to(scores, tg.float32)
    lse = tg.log(tg.reduce_sum(tg.exp(sf - tg.reduce_max(sf, axes=[sf.ndim - 1], keep_dims=True)),
                               axes=[sf.ndim - 1])) + tg.reduce_max(sf, axes=[sf.ndim - 1])
    p = cast_to(tg.softmax(sf, axis=sf.ndim - 1), v.dtype)
    return _matmul(p, v), lse


@converter("aten::scaled_dot_product_attention", notes="attn_mask (bool or additive), is_causal, scale; dropout_p = 0")
def sdpa(ctx, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if dropout_p:
        raise Unsupported("attention dropout")
    if enable_gqa:
        raise Unsupported("enable_gqa")
    return _attention(ctx, q, k, v, attn_mask, is_causal, scale)[0]


@converter("aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
           "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_flash_attention_for_cpu",
           notes="output and logsumexp (math formulation); dropout_p = 0; RNG state outputs unavailable")
def sdpa_fused(ctx, q, k, v, *args, **kw):
    name = ctx.op_name
    mask, dropout_p, is_causal = None, 0.0, False
    if name == "aten::_scaled_dot_product_efficient_attention":  # (q,k,v,attn_bias,compute_lse,p,causal)
        mask = args[0] if args else kw.get("attn_bias")
        dropout_p = args[2] if len(args) > 2 else kw.get("dropout_p", 0.0)
        is_causal = args[3] if len(args) > 3 else kw.get("is_causal", False)
    elif name == "aten::_scaled_dot_product_cudnn_attention":  # (q,k,v,attn_bias,compute_lse,p,causal,...)
        mask = args[0] if args else kw.get("attn_bias")
        dropout_p = args[2] if len(args) > 2 else kw.get("dropout_p", 0.0)
        is_causal = args[3] if len(args) > 3 else kw.get("is_causal", False)
    else:  # flash: (q,k,v,dropout_p,is_causal,return_debug_mask); for_cpu: (q,k,v,dropout_p,is_causal,attn_mask)
        dropout_p = args[0] if args else kw.get("dropout_p", 0.0)
        is_causal = args[1] if len(args) > 1 else kw.get("is_causal", False)
        if name.endswith("_for_cpu"):
            mask = kw.get("attn_mask", args[2] if len(args) > 2 else None)
    if dropout_p:
        raise Unsupported("attention dropout")
    out, lse = _attention(ctx, q, k, v, mask, is_causal, kw.get("scale"))
    n = len(ctx.out) if isinstance(ctx.out, (tuple, list)) else 1
    if n > 1 and not same_shape(lse, dims(ctx.out[1].shape)):  # padded or empty logsumexp
        lse = Unavailable(f"{name} logsumexp of shape {list(ctx.out[1].shape)}")
    rest = tuple(Unavailable(f"{name} output {i}") for i in range(2, n))
    return (out, lse) + rest
