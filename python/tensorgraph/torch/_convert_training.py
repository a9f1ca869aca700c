"""Converters of the backward ATen ops that AOTAutograd's backward graphs hold (the others are
decomposed by PyTorch's own decompositions before conversion, tensorgraph.torch._backend)."""
from .. import _tensorgraph as tg
from ._helpers import cast_to, element_count, norm_axis, pair, tensor
from ._registry import Unsupported, converter
from ._convert_nn import _conv_padding, _pool_args


@converter("aten::convolution_backward",
           notes="2-D, not transposed: grads of input, weight, bias per output_mask")
def convolution_backward(ctx, dy, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding,
                         groups, output_mask):
    dy, x, w = tensor(dy), tensor(x), tensor(w)
    if transposed or x.ndim != 4:
        raise Unsupported("transposed or non-2-D convolution_backward")
    kw = dict(strides=pair(stride), dilations=pair(dilation), explicit_padding=_conv_padding(padding),
              groups=int(groups), data_layout="nchw", weights_layout="oihw")
    dx = tg.conv2d_backward_data(dy, w, list(x.shape), **kw) if output_mask[0] else None
    dw = tg.conv2d_backward_weights(dy, x, list(w.shape), **kw) if output_mask[1] else None
    db = tg.reduce_sum(dy, axes=[0, 2, 3]) if output_mask[2] else None
    return (dx, dw, db)


@converter("aten::threshold_backward", notes="ReLU's backward: grad where self > threshold")
def threshold_backward(ctx, dy, x, threshold):
    dy, x = tensor(dy), tensor(x)
    return tg.select(tg.greater(x, ctx.g.constant(float(threshold), dtype=x.dtype)), dy,
                     ctx.g.constant(0.0, dtype=dy.dtype))


@converter("aten::max_pool2d_with_indices_backward", notes="2-D, NCHW; routed by the forward input")
def max_pool2d_with_indices_backward(ctx, dy, x, kernel_size, stride, padding, dilation, ceil_mode, indices):
    dy, x = tensor(dy), tensor(x)
    k, s, p, d = _pool_args(x, kernel_size, stride, padding, dilation)
    if d != [1, 1]:
        raise Unsupported("dilated max_pool2d backward")
    return tg.max_pool2d_backward(dy, x, kernel_size=k, strides=s, explicit_padding=p, ceil_mode=bool(ceil_mode),
                                  data_layout="nchw")


@converter("aten::avg_pool2d_backward", notes="2-D, NCHW; no divisor_override")
def avg_pool2d_backward(ctx, dy, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if divisor_override is not None:
        raise Unsupported("divisor_override")
    dy, x = tensor(dy), tensor(x)
    k, s, p, _ = _pool_args(x, kernel_size, stride, padding, 1)
    return tg.avg_pool2d_backward(dy, x, kernel_size=k, strides=s, explicit_padding=p, ceil_mode=bool(ceil_mode),
                                  count_include_pad=bool(count_include_pad), data_layout="nchw")


@converter("aten::_adaptive_avg_pool2d_backward", notes="output 1x1")
def adaptive_avg_pool2d_backward(ctx, dy, x):
    dy, x = tensor(dy), tensor(x)
    if list(dy.shape[2:]) != [1, 1]:
        raise Unsupported("adaptive pooling backward to a size other than 1x1")
    return tg.broadcast_to(dy * (1.0 / element_count(x, [2, 3], dy.dtype)), list(x.shape))


@converter("aten::native_batch_norm_backward", notes="training (batch statistics) and inference forms")
def native_batch_norm_backward(ctx, dy, x, w, rm, rv, save_mean, save_invstd, train, eps, output_mask):
    dy, x = tensor(dy), tensor(x)
    axes = [a for a in range(x.ndim) if a != 1]
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    f = tg.float32 if x.dtype in (tg.float16, tg.bfloat16) else x.dtype
    dyf, xf = cast_to(dy, f), cast_to(x, f)
    if train:
        mean, invstd = cast_to(tensor(save_mean), f), cast_to(tensor(save_invstd), f)
    else:
        mean = cast_to(tensor(rm), f)
        invstd = tg.rsqrt(cast_to(tensor(rv), f) + float(eps))
    xhat = (xf - tg.reshape(mean, shape)) * tg.reshape(invstd, shape)
    wf = cast_to(tensor(w), f) if w is not None else None
    scale = tg.reshape(invstd * wf if wf is not None else invstd, shape)
    # Two reductions serve all three gradients: sum(dy) (= db) and sum(dy * xhat) (= dw).
    n = element_count(x, axes, f)  # an int, or a scalar tensor for symbolic sizes
    need_sums = train and output_mask[0]
    g_sum = tg.reduce_sum(dyf, axes=axes) if need_sums or output_mask[2] else None
    gx_sum = tg.reduce_sum(dyf * xhat, axes=axes) if need_sums or output_mask[1] else None
    dx = None
    if output_mask[0]:
        if train:
            dx = (dyf - tg.reshape(g_sum * (1.0 / n), shape) - xhat * tg.reshape(gx_sum * (1.0 / n), shape)) * scale
        else:
            dx = dyf * scale
        dx = cast_to(dx, x.dtype)
    dw = gx_sum if output_mask[1] else None
    db = g_sum if output_mask[2] else None
    if w is not None:
        dw = cast_to(dw, w.dtype) if dw is not None else None
        db = cast_to(db, w.dtype) if db is not None else None
    return (dx, dw, db)


@converter("aten::_softmax_backward_data", notes="y * (dy - sum(dy * y))")
def softmax_backward(ctx, dy, y, dim, input_dtype):
    dy, y = tensor(dy), tensor(y)
    a = norm_axis(dim, y.ndim)
    return cast_to(y * (dy - tg.reduce_sum(dy * y, axes=[a], keep_dims=True)), ctx.out_dtype)


@converter("aten::_log_softmax_backward_data", notes="dy - exp(y) * sum(dy)")
def log_softmax_backward(ctx, dy, y, dim, input_dtype):
    dy, y = tensor(dy), tensor(y)
    a = norm_axis(dim, y.ndim)
    return cast_to(dy - tg.exp(y) * tg.reduce_sum(dy, axes=[a], keep_dims=True), ctx.out_dtype)


@converter("aten::nll_loss_forward", notes="2-D input, no class weights, reduction mean/sum/none; ignore_index")
def nll_loss_forward(ctx, x, target, weight, reduction, ignore_index):
    x, target = tensor(x), tensor(target)
    if weight is not None or x.ndim != 2:
        raise Unsupported("nll_loss with class weights or a non-2-D input")
    idx = tg.expand_dims(cast_to(target, tg.int64), 1)
    valid = tg.not_equal(idx, ctx.g.constant(int(ignore_index), dtype=tg.int64))
    safe = tg.select(valid, idx, ctx.g.constant(0, dtype=tg.int64))
    picked = tg.select(valid, -tg.gather_elements(x, safe, axis=1), ctx.g.constant(0.0, dtype=x.dtype))
    picked = tg.squeeze(picked, [1])
    count = tg.reduce_sum(cast_to(valid, x.dtype), axes=[0, 1])
    if reduction == 0:
        return (picked, count)
    total = tg.reduce_sum(picked, axes=[0])
    return (total / count if reduction == 1 else total, count)


@converter("aten::nll_loss_backward", notes="2-D input, no class weights")
def nll_loss_backward(ctx, dy, x, target, weight, reduction, ignore_index, total_weight):
    dy, x, target = tensor(dy), tensor(x), tensor(target)
    if weight is not None or x.ndim != 2:
        raise Unsupported("nll_loss with class weights or a non-2-D input")
    n, c = x.shape
    idx = tg.expand_dims(cast_to(target, tg.int64), 1)
    valid = cast_to(tg.not_equal(idx, ctx.g.constant(int(ignore_index), dtype=tg.int64)), x.dtype)
    classes = tg.iota(ctx.g, [n, c], axis=1, dtype=tg.int64)
    onehot = cast_to(tg.equal(classes, tg.broadcast_to(idx, [n, c])), x.dtype) * valid
    g = dy if reduction == 0 else tg.reshape(dy, [1])
    if reduction == 0:
        g = tg.expand_dims(g, 1)
    elif reduction == 1:
        g = g / cast_to(tensor(total_weight), x.dtype)
    return -onehot * g


@converter("aten::sigmoid_backward", notes="dy * y * (1 - y)")
def sigmoid_backward(ctx, dy, y):
    dy, y = tensor(dy), tensor(y)
    return dy * y * (1.0 - y)


@converter("aten::tanh_backward", notes="dy * (1 - y^2)")
def tanh_backward(ctx, dy, y):
    dy, y = tensor(dy), tensor(y)
    return dy * (1.0 - y * y)


@converter("aten::hardtanh_backward", notes="dy where min < x < max")
def hardtanh_backward(ctx, dy, x, lo, hi):
    dy, x = tensor(dy), tensor(x)
    inside = tg.logical_and(tg.greater(x, ctx.g.constant(float(lo), dtype=x.dtype)),
                            tg.less(x, ctx.g.constant(float(hi), dtype=x.dtype)))
    return tg.select(inside, dy, ctx.g.constant(0.0, dtype=dy.dtype))



@converter("aten::batch_norm_backward", notes="PyTorch >= 2.3's form of native_batch_norm_backward (reserve unused)")
def batch_norm_backward(ctx, dy, x, w, rm, rv, save_mean, save_invstd, update, eps, output_mask, reserve=None):
    return native_batch_norm_backward(ctx, dy, x, w, rm, rv, save_mean, save_invstd, update, eps, output_mask)
