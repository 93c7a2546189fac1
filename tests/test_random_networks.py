"""Seeded random networks with the topologies real models have, end to end.

Each network is drawn from a fixed seed: a random stem (sometimes RESHAPEs or
an activation straight on the graph input), a chain of random blocks
(convolutions with strides, depthwise, residual ADDs, inception-like channel
CONCATENATIONs, outer-axis and nested CONCATENATIONs that lifetimes can
alias, PAD, pooling, squeeze-excite MULs, standalone activations that may
run in place, ADD/MUL of a tensor with itself, requantizations, TRANSPOSE
and STRIDED_SLICE, side outputs that later ops still read) and one or two
heads (MEAN / pooling, RESHAPE / SQUEEZE / EXPAND_DIMS, FULLY_CONNECTED,
SOFTMAX, heads stacked on an outer or the batch axis).  A few networks take
and give float32 around an int8 body, two are wide (channel counts in the
tens), and one is float32 throughout.

For every network:
- `check_model` generates the C, builds it with and without -DMCU_PLAN_CHECK
  and compares it with TFLite's reference kernels on two random input sets,
  planned by `auto`; and on alternate networks also with a plan that takes
  every in-place pair it can, or with aliasing off;
- every registered planner, with aliasing on and off, gives a plan the
  verifier accepts, and `auto` is never larger than `greedy`.

The networks record which topology features they hold; suite-level tests
assert that the features this file claims are really drawn, that lifetimes
really elided concatenations, and that the in-place plans really share bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planners import load_all
from mcu_planner.memory.planning import plan_auto, run_planner
from mcu_planner.memory.problem import arena_bytes
from mcu_planner.memory.verify import verify
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import Int8Net, ModelBuilder

# Bounds the exact planner (some of these problems it cannot prove optimal
# in seconds); every assertion holds whatever it finds in that time.
OPTIMAL_TIME_LIMIT = 1.0
CHECK_INPUT_SETS = 2

ACTIVATIONS = ("NONE", "RELU", "RELU6")


@dataclass
class RandomNetwork:
    name: str
    model: bytes
    features: set[str] = field(default_factory=set)


class _Generator:
    """One random network; `self.features` names what went into it."""

    def __init__(self, seed: int, width: int = 1):
        self.seed = seed
        # Channel counts are multiplied by `width`: wide networks reach the
        # kernels' unrolled inner loops and their remainders.
        self.width = width
        self.rng = np.random.default_rng(1000 + seed)
        # Layer parameter variants (dilation, pool padding) draw from their own
        # stream, so that adding one does not reshuffle every network.
        self.variant_rng = np.random.default_rng(3000 + seed)
        self.net = Int8Net(seed, description=f"random network {seed}")
        self.features: set[str] = set()
        self.outputs: list[int] = []

    # -- small helpers -------------------------------------------------------

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def channels(self, low: int, high: int) -> int:
        """A channel or unit count in [low, high) times the width, give or take a few."""
        count = int(self.rng.integers(low, high)) * self.width
        return count + int(self.rng.integers(0, self.width)) if self.width > 1 else count

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def shape(self, t: int) -> tuple[int, ...]:
        return self.net.shape(t)

    def share_quantization(self, tensors: list[int]) -> None:
        """Give every tensor the first one's int8 parameters.  Only for
        outputs of ops that requantize (convolutions, FULLY_CONNECTED,
        QUANTIZE), whose output range is free: CONCATENATION needs its inputs
        quantized alike, as the TFLite converter arranges."""
        first = tensors[0]
        for t in tensors[1:]:
            self.net.mb.tensors[t].quant = self.net.quant(first)
            self.net.rms[t] = self.net._rms(first)

    def strides_for(self, t: int) -> tuple[int, int]:
        _, h, w, _ = self.shape(t)
        return (2, 2) if min(h, w) >= 4 and self.chance(0.4) else (1, 1)

    # -- blocks: each takes a (1, H, W, C) tensor and returns one --------------

    def conv(self, x: int) -> int:
        _, h, w, _ = self.shape(x)
        kernel = self.pick([(1, 1), (3, 3), (3, 3)])
        padding = "VALID" if kernel == (3, 3) and min(h, w) >= 5 and self.chance(0.3) else "SAME"
        strides = self.strides_for(x)
        self.features.add(f"conv{kernel[0]}x{kernel[1]}")
        if strides != (1, 1):
            self.features.add("strided")
        filters = self.channels(3, 11)
        dilation = (1, 1)
        if kernel == (3, 3) and strides == (1, 1) and min(h, w) >= 5 and self.variant_rng.random() < 0.4:
            dilation = (2, 2)
            self.features.add("dilated")
        return self.net.conv2d(
            x,
            filters,
            kernel=kernel,
            strides=strides,
            padding=padding,
            activation=self.pick(ACTIVATIONS),
            dilation=dilation,
        )

    def depthwise(self, x: int) -> int:
        strides = self.strides_for(x)
        multiplier = self.pick([1, 1, 2]) if self.shape(x)[3] <= 6 else 1
        self.features.add("depthwise" if multiplier == 1 else "depthwise_multiplier")
        if strides != (1, 1):
            self.features.add("strided")
        return self.net.depthwise_conv2d(
            x, strides=strides, depth_multiplier=multiplier, activation=self.pick(ACTIVATIONS)
        )

    def residual(self, x: int) -> int:
        channels = self.shape(x)[3]
        y = self.net.conv2d(x, channels + self.channels(0, 4), kernel=(1, 1), activation="RELU")
        y = self.net.depthwise_conv2d(y, activation="RELU6")
        y = self.net.conv2d(y, channels, kernel=(1, 1))
        self.features.add("residual_add")
        return self.net.add(x, y, activation=self.pick(ACTIVATIONS))

    def inception(self, x: int) -> int:
        """Parallel branches concatenated on the channel axis."""
        branches = [self.net.conv2d(x, self.channels(2, 7), kernel=(1, 1), activation="RELU")]
        b = self.net.conv2d(x, self.channels(2, 5), kernel=(1, 1), activation="RELU")
        branches.append(self.net.conv2d(b, self.channels(2, 7), kernel=(3, 3), activation="RELU"))
        if self.chance(0.6):
            p = self.net.max_pool2d(x, pool=(3, 3), strides=(1, 1), padding="SAME")
            branches.append(self.net.conv2d(p, self.channels(2, 5), kernel=(1, 1), activation="RELU"))
            self.features.add("max_pool")
        if self.chance(0.4):
            branches.append(self.net.quantize(self.net.depthwise_conv2d(x, activation="RELU"), 0.0, 2.0))
            self.features.add("requantize")
        order = list(self.rng.permutation(len(branches)))
        branches = [branches[i] for i in order]
        self.share_quantization(branches)
        self.features.add("concat_channels")
        return self.net.concatenation(*branches, axis=self.pick([3, -1]))

    def outer_concat(self, x: int) -> int:
        """Branches stacked along H (every dimension before the axis is 1), so
        each branch can be written straight into its slice of the result;
        optionally through RESHAPEs on both sides, as converters emit them."""
        _, h, w, _ = self.shape(x)
        filters = self.channels(2, 7)
        count = int(self.rng.integers(2, 4))
        branches = [
            self.net.conv2d(x, filters, kernel=self.pick([(1, 1), (3, 3)]), activation=self.pick(ACTIVATIONS))
            for _ in range(count)
        ]
        self.share_quantization(branches)
        self.features.add("concat_outer")
        if self.chance(0.3):
            # Not aliasable: a branch that is also a graph output, or read twice.
            if self.chance(0.5):
                self.outputs.append(branches[0])
                self.features.update({"concat_input_is_output", "output_read_later"})
            else:
                branches.append(branches[0])
                count += 1
                self.features.add("concat_repeated_input")
        if self.chance(0.5):
            flat = [self.net.reshape(b, (1, h * w, filters)) for b in branches]
            y = self.net.concatenation(*flat, axis=1)
            self.features.add("reshape_before_concat")
            return self.net.reshape(y, (1, count * h, w, filters))
        return self.net.concatenation(*branches, axis=1)

    def padded_conv(self, x: int) -> int:
        top, left = int(self.rng.integers(0, 3)), int(self.rng.integers(0, 3))
        y = self.net.pad(x, [(0, 0), (top, 1), (left, 1), (0, 0)])
        self.features.add("pad")
        _, h, w, _ = self.shape(y)
        kernel = (3, 3) if min(h, w) >= 3 else (1, 1)
        return self.net.conv2d(y, self.channels(3, 9), kernel=kernel, padding="VALID", activation="RELU")

    def pool(self, x: int) -> int:
        _, h, w, _ = self.shape(x)
        if min(h, w) >= 4 and self.chance(0.6):
            pool, strides, padding = (2, 2), (2, 2), "VALID"
            if self.variant_rng.random() < 0.5:
                # Odd windows over possibly odd sizes: SAME pads unevenly.
                pool, padding = (3, 3), "SAME"
                self.features.add("pool_same_strided")
        else:
            pool, strides, padding = (3, 3), (1, 1), "SAME"
            if min(h, w) >= 4 and self.variant_rng.random() < 0.5:
                strides = (2, 2)
                self.features.add("pool_same_strided")
        if self.chance(0.5):
            self.features.add("max_pool")
            return self.net.max_pool2d(x, pool=pool, strides=strides, padding=padding)
        self.features.add("average_pool")
        return self.net.average_pool2d(x, pool=pool, strides=strides, padding=padding)

    def activation(self, x: int) -> int:
        """Standalone elementwise ops, candidates for running in place."""
        for _ in range(int(self.rng.integers(1, 3))):
            kind = self.pick(["relu", "relu6", "leaky_relu", "hard_swish", "tanh", "logistic"])
            self.features.add(f"activation_{kind}")
            x = getattr(self.net, kind)(x)
        return x

    def squeeze_excite(self, x: int) -> int:
        """MEAN over H, W -> two 1x1 convs -> LOGISTIC, broadcast-multiplied back."""
        channels = self.shape(x)[3]
        s = self.net.mean(x, (1, 2), keep_dims=True)
        s = self.net.conv2d(s, max(2, channels // 2), kernel=(1, 1), activation="RELU")
        s = self.net.logistic(self.net.conv2d(s, channels, kernel=(1, 1)))
        self.features.update({"mean", "mul_broadcast"})
        return self.net.mul(x, s)

    def side_output(self, x: int) -> int:
        """`x` becomes a graph output that later ops still read."""
        self.outputs.append(x)
        self.features.add("output_read_later")
        return x

    def requantize(self, x: int) -> int:
        self.features.add("requantize")
        low, high = self.rng.uniform(-3.0, -0.5), self.rng.uniform(0.5, 3.0)
        return self.net.quantize(x, low, high)

    def self_binary(self, x: int) -> int:
        """ADD or MUL of a tensor with itself: both operands are one buffer."""
        self.features.add("binary_same_operand")
        op = self.pick(["add", "mul"])
        return getattr(self.net, op)(x, x, activation=self.pick(ACTIVATIONS))

    def output_alias(self, x: int) -> int:
        """A RESHAPE of `x` is a graph output while `x` goes on."""
        _, h, w, c = self.shape(x)
        self.outputs.append(self.net.reshape(x, (1, h * w, c)))
        self.features.update({"reshaped_output", "several_outputs"})
        return x

    def nested_concat(self, x: int) -> int:
        """A concatenation of concatenations along H, with a negative axis."""
        _, h, w, _ = self.shape(x)
        filters = self.channels(2, 6)
        parts = [self.net.conv2d(x, filters, kernel=(1, 1), activation="RELU") for _ in range(3)]
        self.share_quantization(parts)
        inner = self.net.concatenation(parts[0], parts[1], axis=1)
        self.features.update({"concat_outer", "concat_nested"})
        return self.net.concatenation(inner, parts[2], axis=-3)

    def transpose_slice(self, x: int) -> int:
        """TRANSPOSE (H <-> W) and a cropping STRIDED_SLICE, as converted
        PyTorch models carry them."""
        _, h, w, c = self.shape(x)
        y = self.net.transpose(x, (0, 2, 1, 3))
        if min(h, w) >= 4:
            y = self.net.strided_slice(y, [0, 1, 1, 0], [1, w - 1, h, c], [1, 1, self.pick([1, 2]), 1])
            self.features.add("strided_slice")
        self.features.add("transpose")
        return y

    BLOCKS = (
        "conv",
        "depthwise",
        "residual",
        "inception",
        "outer_concat",
        "padded_conv",
        "pool",
        "activation",
        "squeeze_excite",
        "side_output",
        "requantize",
        "self_binary",
        "output_alias",
        "nested_concat",
        "transpose_slice",
    )

    # -- heads: each takes the body's output and returns graph outputs --------

    def flatten(self, x: int) -> int:
        """(1, H, W, C) -> (1, features) the way converted models do it."""
        _, h, w, c = self.shape(x)
        way = self.pick(
            ["mean_reshape", "pool_squeeze", "mean_flat", "reshape"]
            if h * w * c <= 512
            else ["mean_reshape", "pool_squeeze", "mean_flat"]
        )
        if way == "mean_reshape":
            self.features.update({"mean", "reshape_head"})
            return self.net.reshape(self.net.mean(x, (1, 2), keep_dims=True), (1, c))
        if way == "pool_squeeze":
            self.features.update({"average_pool", "squeeze"})
            return self.net.squeeze(self.net.average_pool2d(x, pool=(h, w), strides=(1, 1)), (1, 2))
        if way == "mean_flat":
            self.features.add("mean")
            return self.net.mean(x, (1, 2), keep_dims=False)
        self.features.add("reshape_head")
        return self.net.reshape(x, (1, h * w * c))

    def classifier(self, features: int) -> int:
        y = features
        if self.chance(0.4):
            y = self.net.fully_connected(y, self.channels(6, 17), activation="RELU")
        y = self.net.fully_connected(y, self.channels(3, 11))
        self.features.add("fully_connected")
        if self.chance(0.7):
            self.features.add("softmax")
            y = self.net.softmax(y)
        return y

    def head(self, x: int) -> list[int]:
        kind = self.pick(["single", "single", "two_heads", "stacked_heads", "batched_heads"])
        features = self.flatten(x)
        if kind == "single":
            return [self.classifier(features)]
        if kind == "batched_heads":
            # Two feature vectors stacked on the batch axis (axis 0: always
            # contiguous) and classified by one FULLY_CONNECTED.
            other = self.net.fully_connected(features, self.shape(features)[1], activation="RELU")
            self.share_quantization([features, other])
            self.features.update({"concat_batch", "batched_fully_connected"})
            return [self.classifier(self.net.concatenation(features, other, axis=0))]
        if kind == "two_heads":
            self.features.add("several_outputs")
            return [self.classifier(features), self.net.fully_connected(features, self.channels(1, 5))]
        # Two heads of the same width, each EXPAND_DIMS'd to (1, 1, k) and
        # stacked along axis 1: an aliasable concatenation fed by aliases.
        units = self.channels(3, 9)
        heads = [self.net.fully_connected(features, units) for _ in range(2)]
        self.share_quantization(heads)
        stacked = self.net.concatenation(*(self.net.expand_dims(h, 1) for h in heads), axis=1)
        self.features.update({"expand_dims", "concat_outer", "concat_heads"})
        return [self.net.softmax(self.net.reshape(stacked, (1, 2 * units)))]

    # -- whole networks ------------------------------------------------------

    def build(self, required_block: str, float_io: bool, input_is_output: bool) -> RandomNetwork:
        h, w = int(self.rng.integers(6, 13)), int(self.rng.integers(6, 13))
        channels = int(self.rng.integers(1, 5))
        if float_io:
            graph_input = self.net.float_input((1, h, w, channels))
            x = self.net.quantize(graph_input, -1.0, 1.0)
            self.features.add("float_io")
        else:
            graph_input = x = self.net.input((1, h, w, channels))
        if input_is_output:
            self.outputs.append(graph_input)
            self.features.add("input_is_output")
        if not float_io and self.chance(0.25):
            # RESHAPEs straight on the graph input: aliases of a tensor the application writes.
            x = self.net.reshape(self.net.reshape(x, (1, h * w, channels)), (1, h, w, channels))
            self.features.add("reshape_on_input")
        if not float_io and (input_is_output or self.chance(0.3)):
            # An elementwise op straight on the graph input: it may overwrite
            # the input in place, unless the input is also a graph output.
            x = self.activation(x)
            self.features.add("activation_on_input")
        strides = self.strides_for(x)
        self.features.update({"conv3x3"} | ({"strided"} if strides != (1, 1) else set()))
        dilation = (2, 2) if strides == (1, 1) and self.variant_rng.random() < 0.3 else (1, 1)
        if dilation != (1, 1):
            self.features.add("dilated")
        x = self.net.conv2d(
            x, self.channels(4, 9), kernel=(3, 3), strides=strides, activation="RELU", dilation=dilation
        )
        if self.width > 1:
            self.features.add("wide")
        blocks = [self.pick(self.BLOCKS) for _ in range(int(self.rng.integers(2, 5)))]
        blocks.insert(int(self.rng.integers(0, len(blocks) + 1)), required_block)
        for block in blocks:
            x = getattr(self, block)(x)
        outputs = self.head(x)
        if float_io:
            outputs = [self.net.dequantize(t) if self.net.mb.tensors[t].dtype == "int8" else t for t in outputs]
        all_outputs = self.outputs + outputs
        if len(all_outputs) > 1:
            self.features.add("several_outputs")
        name = (
            f"net{self.seed:02d}_{required_block}"
            + ("_float_io" if float_io else "")
            + (f"_x{self.width}" if self.width > 1 else "")
        )
        return RandomNetwork(name, self.net.build(*all_outputs), self.features)


def float32_network(seed: int) -> RandomNetwork:
    """float32 throughout: conv, depthwise, residual ADD, channel CONCATENATION,
    pooling, MEAN, RESHAPE, FULLY_CONNECTED, SOFTMAX."""
    rng = np.random.default_rng(2000 + seed)
    mb = ModelBuilder(f"random float32 network {seed}")

    def const(shape, scale):
        return mb.add_tensor(shape, "float32", data=(rng.standard_normal(shape) * scale).astype(np.float32))

    def int32_const(values):
        values = np.asarray(values, dtype=np.int32)
        return mb.add_tensor(values.shape, "int32", data=values)

    def op(opcode, inputs, shape, options=None):
        y = mb.add_tensor(shape, "float32")
        mb.add_op(opcode, inputs, (y,), options)
        return y

    def conv(x, filters, h, w, c, kernel, activation):
        weights = const((filters, kernel, kernel, c), 1 / math.sqrt(kernel * kernel * c))
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": activation}
        return op("CONV_2D", (x, weights, const((filters,), 0.1)), (1, h, w, filters), options)

    h, w, c = 6, 5, 3
    x = mb.add_tensor((1, h, w, c), "float32", name="input")
    y = conv(x, 6, h, w, c, 3, "RELU")
    dw = op(
        "DEPTHWISE_CONV_2D",
        (y, const((1, 3, 3, 6), 0.3), const((6,), 0.1)),
        (1, h, w, 6),
        {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1, "fused_activation_function": "NONE"},
    )
    y = op("ADD", (y, dw), (1, h, w, 6), {"fused_activation_function": "RELU"})
    a = conv(y, 4, h, w, 6, 1, "RELU6")
    b = op(
        "MAX_POOL_2D",
        (y,),
        (1, h, w, 6),
        {
            "padding": "SAME",
            "stride_h": 1,
            "stride_w": 1,
            "filter_height": 3,
            "filter_width": 3,
            "fused_activation_function": "NONE",
        },
    )
    y = op("CONCATENATION", (a, b), (1, h, w, 10), {"axis": 3, "fused_activation_function": "NONE"})
    pooled = op(
        "AVERAGE_POOL_2D",
        (y,),
        (1, h // 2, w // 2, 10),
        {
            "padding": "VALID",
            "stride_h": 2,
            "stride_w": 2,
            "filter_height": 2,
            "filter_width": 2,
            "fused_activation_function": "NONE",
        },
    )
    mean = op("MEAN", (pooled, int32_const([1, 2])), (1, 10), {"keep_dims": False})
    flat = op(
        "RESHAPE",
        (pooled, int32_const([1, (h // 2) * (w // 2) * 10])),
        (1, (h // 2) * (w // 2) * 10),
        {"new_shape": [1, (h // 2) * (w // 2) * 10]},
    )
    logits = op(
        "FULLY_CONNECTED",
        (flat, const((5, (h // 2) * (w // 2) * 10), 0.1), const((5,), 0.1)),
        (1, 5),
        {"fused_activation_function": "NONE"},
    )
    other = op(
        "FULLY_CONNECTED", (mean, const((5, 10), 0.3), const((5,), 0.1)), (1, 5), {"fused_activation_function": "RELU"}
    )
    # Both heads stacked on the batch axis: an aliasable float concatenation.
    stacked = op("CONCATENATION", (logits, other), (2, 5), {"axis": 0, "fused_activation_function": "NONE"})
    probabilities = op("SOFTMAX", (stacked,), (2, 5), {"beta": 1.0})
    mb.set_io([x], [probabilities, mean])
    features = {
        "float32",
        "conv3x3",
        "conv1x1",
        "depthwise",
        "residual_add",
        "concat_channels",
        "max_pool",
        "average_pool",
        "mean",
        "reshape_head",
        "fully_connected",
        "softmax",
        "several_outputs",
        "concat_batch",
        "output_read_later",
    }
    return RandomNetwork(f"float32_net{seed:02d}", mb.build(), features)


# Which block each int8 network is sure to hold, and how its ends are typed.
NETWORK_RECIPES = [
    # (seed, required block, float input/outputs, graph input also an output, channel width)
    (0, "residual", False, False, 1),
    (1, "inception", False, False, 1),
    (26, "outer_concat", False, False, 1),
    (3, "padded_conv", False, False, 1),
    (4, "squeeze_excite", False, False, 1),
    (5, "activation", False, False, 1),
    (6, "side_output", False, False, 1),
    (7, "outer_concat", True, False, 1),
    (8, "inception", True, False, 1),
    (22, "depthwise", False, True, 1),
    (10, "pool", False, False, 1),
    (11, "self_binary", False, False, 1),
    (12, "output_alias", False, True, 1),
    (13, "nested_concat", False, False, 1),
    (14, "transpose_slice", False, False, 1),
    (15, "inception", False, False, 4),
    (16, "residual", False, False, 3),
]


def make_network(recipe) -> RandomNetwork:
    if recipe == "float32":
        return float32_network(0)
    seed, block, float_io, input_is_output, width = recipe
    return _Generator(seed, width).build(block, float_io, input_is_output)


RECIPES = NETWORK_RECIPES + ["float32"]
_CACHE: dict[str, RandomNetwork] = {}


def network(recipe) -> RandomNetwork:
    key = repr(recipe)
    if key not in _CACHE:
        _CACHE[key] = make_network(recipe)
    return _CACHE[key]


def recipe_id(recipe) -> str:
    if recipe == "float32":
        return "float32"
    seed, block, _, _, width = recipe
    return f"net{seed:02d}_{block}" + (f"_x{width}" if width > 1 else "")


def recipe_seed(recipe) -> int:
    return 0 if recipe == "float32" else recipe[0]


# -- the tests ------------------------------------------------------------------


# (planner, alias): what `mcu-plan` does by default, on every network; and on
# alternate networks (each check compiles twice, so not all three on all) a
# plan that overwrites inputs in place wherever lifetimes allow it (first-fit
# takes every in-place pair it can), or one buffer per tensor, nothing aliased.
DEFAULT_VARIANT = ("auto", True)
IN_PLACE_PLANNER = "first-fit"
EXTRA_VARIANTS = [(IN_PLACE_PLANNER, True), ("greedy", False)]
CHECK_CASES = [(recipe, DEFAULT_VARIANT) for recipe in RECIPES] + [
    (recipe, EXTRA_VARIANTS[i % len(EXTRA_VARIANTS)]) for i, recipe in enumerate(RECIPES)
]


def check_case_id(case) -> str:
    recipe, (planner, alias) = case
    return f"{recipe_id(recipe)}-{planner}-{'alias' if alias else 'no_alias'}"


@pytest.mark.parametrize("case", CHECK_CASES, ids=check_case_id)
def test_generated_c_matches_the_reference(case):
    recipe, (planner, alias) = case
    net = network(recipe)
    report = check_model(
        net.model,
        inputs=CHECK_INPUT_SETS,
        seed=recipe_seed(recipe),
        planner=planner,
        alias=alias,
        time_limit=OPTIMAL_TIME_LIMIT,
        raise_on_mismatch=False,
    )
    assert report.total == CHECK_INPUT_SETS
    assert report.passed, f"{net.name} ({sorted(net.features)}): {report.mismatch_message()}"


@pytest.mark.parametrize("alias", [True, False], ids=["alias", "no_alias"])
@pytest.mark.parametrize("recipe", RECIPES, ids=recipe_id)
def test_every_planner_gives_a_verified_plan(recipe, alias):
    net = network(recipe)
    problem = compute_lifetimes(read_model(net.model), alias=alias).problem
    largest = max(b.size for b in problem.buffers)
    sizes = {}
    for name in load_all():
        plan = run_planner(problem, name, OPTIMAL_TIME_LIMIT)
        # run_planner verifies too; ask the verifier again so a planner that
        # bypassed it cannot pass, and recompute the arena from the offsets.
        assert verify(problem, plan.offsets, plan.arena_bytes) == [], f"{net.name}: {name}"
        assert plan.arena_bytes == arena_bytes(problem, plan.offsets)
        assert plan.arena_bytes >= largest
        sizes[name] = plan.arena_bytes
    auto = plan_auto(problem, OPTIMAL_TIME_LIMIT)
    assert verify(problem, auto.offsets, auto.arena_bytes) == []
    assert auto.arena_bytes <= sizes["greedy"], f"{net.name}: auto {auto.arena_bytes} > greedy {sizes['greedy']}"
    if auto.proven_optimal:
        assert auto.arena_bytes <= min(sizes.values()), f"{net.name}: a proven optimum above {sizes}"


# Features the module docstring claims; each must occur in some network.
CLAIMED_FEATURES = {
    "conv1x1",
    "conv3x3",
    "strided",
    "depthwise",
    "residual_add",
    "concat_channels",
    "concat_outer",
    "reshape_before_concat",
    "expand_dims",
    "squeeze",
    "reshape_head",
    "pad",
    "mean",
    "max_pool",
    "average_pool",
    "fully_connected",
    "softmax",
    "several_outputs",
    "output_read_later",
    "input_is_output",
    "mul_broadcast",
    "requantize",
    "float_io",
    "float32",
    "concat_input_is_output",
    "concat_repeated_input",
    "binary_same_operand",
    "reshaped_output",
    "activation_on_input",
    "concat_nested",
    "concat_batch",
    "batched_fully_connected",
    "transpose",
    "strided_slice",
    "reshape_on_input",
    "depthwise_multiplier",
    "wide",
    "dilated",
    "pool_same_strided",
}


def test_the_networks_cover_the_claimed_topologies():
    drawn = set().union(*(network(r).features for r in RECIPES))
    assert CLAIMED_FEATURES <= drawn, f"never drawn: {sorted(CLAIMED_FEATURES - drawn)}"
    assert any(f.startswith("activation_") for f in drawn)


def test_lifetimes_alias_concatenations_and_allow_in_place_ops():
    """The networks exercise what makes lifetimes non-trivial: some
    CONCATENATION is elided (its inputs written into its slices) and some
    elementwise op may run in place."""
    elided_concats = in_place_steps = plans_in_place = 0
    for recipe in RECIPES:
        graph = read_model(network(recipe).model)
        lifetimes = compute_lifetimes(graph, alias=True)
        elided_concats += sum(graph.operators[i].opcode == "CONCATENATION" for i in lifetimes.elided_ops)
        in_place_steps += sum(bool(step.in_place) for step in lifetimes.problem.steps)
        offsets = run_planner(lifetimes.problem, IN_PLACE_PLANNER).offsets
        plans_in_place += any(len({offsets[b] for b in pair}) == 1 for pair in lifetimes.problem.in_place_pairs())
    assert elided_concats >= 2
    assert in_place_steps >= 2
    # The in-place check variant really runs C whose outputs overwrite inputs.
    assert plans_in_place >= len(RECIPES) // 2
