"""SpMM as a differentiable PyTorch operation. For C = A·B with A's values v:
    dL/dB = Aᵀ·dL/dC                      an SpMM with transpose_a
    dL/dv_e = dot(dL/dC[row_e], B[col_e])  an SDDMM over A's pattern (values 1) of dL/dC and B
and for C = Aᵀ·B, dL/dB = A·dL/dC and dL/dv_e = dot(B[row_e], dL/dC[col_e]). sparsejit.spmm
uses this function whenever B or the Matrix's values require gradients."""

import torch


class SpmmFunction(torch.autograd.Function):
    """SpmmFunction.apply(values, b, matrix, transpose_a, variant, reuse): C = A·B (or Aᵀ·B)
    with A = `matrix` holding `values`, differentiable in `values` and `b`."""

    @staticmethod
    def forward(ctx, values, b, matrix, transpose_a, variant, reuse):
        # Values that take gradients are being trained: they change between calls, in place
        # too, where PyTorch's version counter may not see it (gradcheck writes through .data).
        matrix._bind_values(values, rewritten=values.requires_grad)
        ctx.matrix, ctx.transpose_a, ctx.variant, ctx.reuse = matrix, transpose_a, variant, reuse
        ctx.save_for_backward(b)
        return matrix._spmm(b, transpose_a, variant, reuse)

    @staticmethod
    @torch.autograd.function.once_differentiable  # the backward's products are not differentiated again
    def backward(ctx, grad_c):
        (b,) = ctx.saved_tensors
        m, transpose = ctx.matrix, ctx.transpose_a
        grad_c = grad_c.contiguous()  # autograd may hand an expanded or strided gradient
        grad_values = grad_b = None
        if ctx.needs_input_grad[0]:
            rows_side, cols_side = (b, grad_c) if transpose else (grad_c, b)
            grad_values = m._pattern()._sddmm(rows_side, cols_side, None, ctx.reuse)
        if ctx.needs_input_grad[1]:
            grad_b = m._spmm(grad_c, not transpose, None, ctx.reuse)
        return grad_values, grad_b, None, None, None, None
