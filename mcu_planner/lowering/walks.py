"""The facts of kernels that walk an image: their raster walk (overlap.py)
and their window (patches.py), read from the parameter fields the lowerings
in conv.py, pool.py, shape_ops.py (PAD), fully_connected.py and
activations.py choose.  Each of those modules says which of its kernels
walks how (a `RasterOrder` beside the kernel names); this module turns the
walk and the fields into `KernelFacts`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from ..graph import DTYPE_BITS, Graph, Operator, PatchWindow, Window
from ..memory.problem import WindowAccess
from . import CArray, KernelCall, KernelFacts, ParamValue


@dataclass(frozen=True)
class RasterOrder:
    """A kernel's walk, as the plan may assume it: output pixels (batch, row,
    column; the rows of a matrix for FULLY_CONNECTED) in raster order,
    `pixels_per_group` consecutive pixels at a time; a group reads nothing but
    its own pixels' input windows and writes nothing but its own pixels,
    reads and writes interleaved in any order inside the group.  A kernel
    whose loops change must change its order (and the comment beside the
    kernel that says so): the plan puts outputs over inputs by it, and
    tests/test_overlap.py runs every kernel with a walk bit-exact at the
    tightest overlap it allows."""

    pixels_per_group: int = 1
    # Each output channel from the same input channel, pixel by pixel in
    # raster order, each pixel reading its window's values of the channel
    # before writing its own (problem.WindowAccess.channel_wise): a depthwise
    # kernel with depth multiplier 1 whose loops keep channels apart.
    channel_wise: bool = False


PIXEL_BY_PIXEL = RasterOrder()

# mcu_pad's input_dims and output_strides: NHWC padded to its rank of six.
PAD_ROW_DIM = 3


def _ints(call: KernelCall) -> dict[str, int]:
    return {k: v for k, v in call.params.items() if isinstance(v, int)}


def _element_bytes(graph: Graph, tensor: int) -> int:
    return DTYPE_BITS[graph.tensors[tensor].dtype] // 8


def image_window_facts(
    op: Operator,
    graph: Graph,
    call: KernelCall,
    order: RasterOrder | None,
    *,
    pooling: bool = False,
    patchable: bool = True,
    macs: int = 0,
    slower: bool = False,
) -> KernelFacts:
    """A convolution's or pooling's facts from its fields (batches, input_h,
    input_w, input_c / channels, output_*, filter_*, stride_*, pad_* and,
    convolutions only, dilation_*): its walk when `order` is given, its
    window when every read goes through those fields (`patchable`)."""
    p = _ints(call)
    in_bytes, out_bytes = _element_bytes(graph, op.inputs[0]), _element_bytes(graph, op.outputs[0])
    dilation_h, dilation_w = (1, 1) if pooling else (p["dilation_h"], p["dilation_w"])
    window = Window(
        p["input_h"],
        p["output_h"],
        p["filter_h"],
        p["filter_w"],
        p["stride_h"],
        p["stride_w"],
        dilation_h,
        dilation_w,
        p["pad_h"],
        p["pad_w"],
        p["input_w"],
        p["output_w"],
    )
    access = None
    if order is not None and in_bytes and out_bytes:
        channels_in = p["channels"] if pooling else p["input_c"]
        channels_out = p["channels"] if pooling else p["output_c"]
        access = WindowAccess(
            batches=p["batches"],
            input_h=window.input_h,
            input_w=window.input_w,
            input_pixel_bytes=channels_in * in_bytes,
            output_h=window.output_h,
            output_w=window.output_w,
            output_pixel_bytes=channels_out * out_bytes,
            filter_h=window.filter_h,
            filter_w=window.filter_w,
            stride_h=window.stride_h,
            stride_w=window.stride_w,
            pad_h=window.pad_h,
            pad_w=window.pad_w,
            dilation_h=dilation_h,
            dilation_w=dilation_w,
            group=order.pixels_per_group,
            channel_wise=order.channel_wise and channels_in * in_bytes == channels_out * out_bytes,
        )

    return KernelFacts(
        macs=macs,
        access=access,
        raster_walk_is_slower=slower and access is not None,
        window=window if patchable else None,
        for_window=partial(_image_call_for_window, call) if patchable else None,
    )


def rows_facts(op: Operator, graph: Graph, call: KernelCall, order: RasterOrder, macs: int) -> KernelFacts:
    """A FULLY_CONNECTED's facts: one input row (accum_depth values) read,
    then its output row (output_depth values) written, batch row by row."""
    p = _ints(call)
    in_bytes, out_bytes = _element_bytes(graph, op.inputs[0]), _element_bytes(graph, op.outputs[0])
    if not in_bytes or not out_bytes:
        return KernelFacts(macs=macs)
    access = WindowAccess(
        batches=p["batches"],
        input_h=1,
        input_w=1,
        input_pixel_bytes=p["accum_depth"] * in_bytes,
        output_h=1,
        output_w=1,
        output_pixel_bytes=p["output_depth"] * out_bytes,
        group=order.pixels_per_group,
    )
    return KernelFacts(macs=macs, access=access)


def pad_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    """mcu_pad's facts: it writes the output from its first byte to its last,
    so a PAD of NHWC along height and width only is a 1 x 1 window whose
    leading padding is the PAD's (`output_origin`: the output element where
    input element 0 lands); other PADs have no walk and no window."""
    inp, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    element = DTYPE_BITS[inp.dtype] // 8
    if len(inp.shape) != 4 or len(out.shape) != 4 or inp.shape[0] != out.shape[0] or inp.shape[3] != out.shape[3]:
        return KernelFacts()
    batches, in_h, in_w, channels = inp.shape
    _, out_h, out_w, _ = out.shape
    row_elements = out_w * channels
    origin = _ints(call)["output_origin"]
    if row_elements == 0 or channels == 0 or element == 0:
        return KernelFacts()
    access = WindowAccess(
        batches=batches,
        input_h=in_h,
        input_w=in_w,
        input_pixel_bytes=channels * element,
        output_h=out_h,
        output_w=out_w,
        output_pixel_bytes=channels * element,
        pad_h=origin // row_elements,
        pad_w=origin % row_elements // channels,
    )
    dims, strides = call.params["input_dims"], call.params["output_strides"]
    assert isinstance(dims, CArray) and isinstance(strides, CArray)
    row = int(strides.values[PAD_ROW_DIM])
    before = origin % row
    input_h, input_w = int(dims.values[PAD_ROW_DIM]), int(dims.values[PAD_ROW_DIM + 1])
    output_h = _ints(call)["output_elements"] // (row * int(dims.values[PAD_ROW_DIM - 1]))
    window = Window(input_h, output_h, 1, 1, 1, 1, 1, 1, origin // row, before // channels, input_w, row // channels)

    for_window = partial(_pad_call_for_window, call, dims, strides, row, before, channels)
    return KernelFacts(access=access, window=window, for_window=for_window)


def unary_elementwise_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    """An elementwise kernel over `size` values of one input: when those are
    the whole of a 4-D NHWC input of the output's shape, a patch of rows and
    columns is the same kernel over the patch's values."""
    facts = KernelFacts(elementwise=True)
    size = call.params.get("size")
    inp, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if not isinstance(size, int) or size != inp.num_elements or inp.shape != out.shape or len(out.shape) != 4:
        return facts
    _, height, width, _ = out.shape

    window = Window(height, height, 1, 1, 1, 1, 1, 1, 0, 0, width, width)
    return replace(facts, window=window, for_window=partial(_elementwise_call_for_window, call, size, height, width))


def _image_call_for_window(call: KernelCall, patch: PatchWindow) -> KernelCall:
    """An image kernel's call over one patch: its rows (and columns) only.
    Module level (bound with functools.partial), so that facts pickle."""
    params: dict[str, ParamValue] = {
        **call.params,
        "input_h": patch.in_end - patch.in_first,
        "output_h": patch.out_end - patch.out_first,
        "pad_h": patch.pad_h,
    }
    if patch.columns is not None:
        params.update(
            input_w=patch.columns.in_end - patch.columns.in_first,
            output_w=patch.columns.out_end - patch.columns.out_first,
            pad_w=patch.columns.pad_h,
        )
    return replace(call, params=params)


def _pad_call_for_window(
    call: KernelCall, dims: CArray, strides: CArray, row: int, before: int, channels: int, patch: PatchWindow
) -> KernelCall:
    """mcu_pad's call over one patch (`row`: output row elements, `before`:
    leading padding elements in a row)."""
    values = list(dims.values)
    values[PAD_ROW_DIM] = patch.in_end - patch.in_first
    params: dict[str, ParamValue] = {**call.params, "input_dims": CArray(dims.c_type, tuple(values))}
    patch_row, patch_before = row, before
    if patch.columns is not None:
        values[PAD_ROW_DIM + 1] = patch.columns.in_end - patch.columns.in_first
        patch_row = (patch.columns.out_end - patch.columns.out_first) * channels
        patch_before = patch.columns.pad_h * channels
        row_strides = list(strides.values)
        row_strides[PAD_ROW_DIM] = patch_row
        params["input_dims"] = CArray(dims.c_type, tuple(values))
        params["output_strides"] = CArray(strides.c_type, tuple(row_strides))
    params["output_elements"] = (patch.out_end - patch.out_first) * patch_row
    params["output_origin"] = patch.pad_h * patch_row + patch_before
    return replace(call, params=params)


def _elementwise_call_for_window(
    call: KernelCall, size: int, height: int, width: int, patch: PatchWindow
) -> KernelCall:
    """An elementwise kernel's call over the values of one patch."""
    columns = width if patch.columns is None else patch.columns.out_end - patch.columns.out_first
    pixels = (patch.out_end - patch.out_first) * columns
    return replace(call, params={**call.params, "size": size // (height * width) * pixels})


def values_walk(op: Operator, graph: Graph, call: KernelCall, group: int = 1) -> WindowAccess | None:
    """The walk of a kernel looping once over `size` values of input 0 in
    ascending order, reading value i before writing output value i, `group`
    values at a time (read the group, then write it): a raster walk whose
    pixels are single values.  The output may then start just before the
    input (one value, or where a wider output must end); None when `size`
    is not every value of both."""
    size = call.params.get("size")
    inp, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    in_bytes, out_bytes = _element_bytes(graph, op.inputs[0]), _element_bytes(graph, op.outputs[0])
    if not isinstance(size, int) or size != inp.num_elements or size != out.num_elements or not in_bytes * out_bytes:
        return None
    return WindowAccess(
        batches=1,
        input_h=1,
        input_w=size,
        input_pixel_bytes=in_bytes,
        output_h=1,
        output_w=size,
        output_pixel_bytes=out_bytes,
        group=group,
    )
