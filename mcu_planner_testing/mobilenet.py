"""MobileNet v1 built with random int8 weights, for comparing arenas with
published figures (STM32Cube.AI's model zoo): a uint8 image, QUANTIZE to
int8, conv 3x3/2, 13 depthwise-separable blocks, average pool, a 1x1 conv
to the classes, reshape and softmax.  256 classes by default: TFLite's
reference SOFTMAX aborts on an int8 row of 1,000 (the activation RAM differs
only in the last, small tensors)."""

from __future__ import annotations

from .builder import Int8Net, uint8_quant

# (pointwise filters at alpha 1, depthwise stride) of the 13 blocks.
MOBILENET_V1_BLOCKS = (
    (64, 1),
    (128, 2),
    (128, 1),
    (256, 2),
    (256, 1),
    (512, 2),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (1024, 2),
    (1024, 1),
)


def mobilenet_v1_int8(size: int, alpha: float = 0.25, classes: int = 256, seed: int = 0) -> bytes:
    """MobileNet v1 (`alpha` width) on a size x size x 3 uint8 input."""
    net = Int8Net(seed, description=f"mobilenet_v1_{alpha}_{size} int8, uint8 input (mcu_planner_testing)")
    image = net.typed_input((1, size, size, 3), "uint8", uint8_quant(-1.0, 1.0), name="image")
    net.rms[image] = 0.577  # uniform on [-1, 1]
    x = net.quantize(image, -1.0, 1.0, dtype="int8")
    x = net.conv2d(x, int(32 * alpha), strides=(2, 2), activation="RELU6")
    for filters, stride in MOBILENET_V1_BLOCKS:
        x = net.depthwise_conv2d(x, strides=(stride, stride), activation="RELU6")
        x = net.conv2d(x, int(filters * alpha), kernel=(1, 1), activation="RELU6")
    _, h, w, _ = net.shape(x)
    x = net.average_pool2d(x, pool=(h, w), strides=(h, w))
    x = net.conv2d(x, classes, kernel=(1, 1))
    x = net.reshape(x, (1, classes))
    return net.build(net.softmax(x))
