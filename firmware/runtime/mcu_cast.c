/* Follows TensorFlow Lite's cast.cc: copyCast, one static_cast per element. */
#include "mcu_cast.h"

static int64_t read_integer(int32_t type, const void *input, int32_t i)
{
    switch (type) {
    case MCU_CAST_BOOL:
    case MCU_CAST_UINT8:
        return ((const uint8_t *)input)[i];
    case MCU_CAST_INT8:
        return ((const int8_t *)input)[i];
    case MCU_CAST_INT16:
        return ((const int16_t *)input)[i];
    case MCU_CAST_UINT16:
        return ((const uint16_t *)input)[i];
    case MCU_CAST_INT32:
        return ((const int32_t *)input)[i];
    case MCU_CAST_UINT32:
        return ((const uint32_t *)input)[i];
    default:
        return ((const int64_t *)input)[i];
    }
}

/* Integer source: conversions to integers keep the low bits (two's
 * complement wrap, as static_cast does on every target TFLite runs on); to
 * float32 one rounding from the exact value. */
static void cast_from_integer(const mcu_cast_params *p, const void *input, void *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const int64_t x = read_integer(p->input_type, input, i);
        switch (p->output_type) {
        case MCU_CAST_BOOL:
            ((uint8_t *)output)[i] = (uint8_t)(x != 0);
            break;
        case MCU_CAST_INT8:
            ((int8_t *)output)[i] = (int8_t)(uint8_t)(uint64_t)x;
            break;
        case MCU_CAST_UINT8:
            ((uint8_t *)output)[i] = (uint8_t)(uint64_t)x;
            break;
        case MCU_CAST_INT16:
            ((int16_t *)output)[i] = (int16_t)(uint16_t)(uint64_t)x;
            break;
        case MCU_CAST_UINT16:
            ((uint16_t *)output)[i] = (uint16_t)(uint64_t)x;
            break;
        case MCU_CAST_INT32:
            ((int32_t *)output)[i] = (int32_t)(uint32_t)(uint64_t)x;
            break;
        case MCU_CAST_UINT32:
            ((uint32_t *)output)[i] = (uint32_t)(uint64_t)x;
            break;
        case MCU_CAST_INT64:
            ((int64_t *)output)[i] = x;
            break;
        default:
            ((float *)output)[i] = (float)x;
            break;
        }
    }
}

/* float32 source: to integers truncation toward zero (lowering/cast.py
 * documents that out-of-range values are undefined in the reference too). */
static void cast_from_float(const mcu_cast_params *p, const float *input, void *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const float x = input[i];
        switch (p->output_type) {
        case MCU_CAST_BOOL:
            ((uint8_t *)output)[i] = (uint8_t)(x != 0.0f);
            break;
        case MCU_CAST_INT8:
            ((int8_t *)output)[i] = (int8_t)x;
            break;
        case MCU_CAST_UINT8:
            ((uint8_t *)output)[i] = (uint8_t)x;
            break;
        case MCU_CAST_INT16:
            ((int16_t *)output)[i] = (int16_t)x;
            break;
        case MCU_CAST_UINT16:
            ((uint16_t *)output)[i] = (uint16_t)x;
            break;
        case MCU_CAST_INT32:
            ((int32_t *)output)[i] = (int32_t)x;
            break;
        case MCU_CAST_UINT32:
            ((uint32_t *)output)[i] = (uint32_t)x;
            break;
        case MCU_CAST_INT64:
            ((int64_t *)output)[i] = (int64_t)x;
            break;
        default:
            ((float *)output)[i] = x;
            break;
        }
    }
}

void mcu_cast(const mcu_cast_params *p, const void *input, void *output)
{
    if (p->input_type == MCU_CAST_FLOAT32) {
        cast_from_float(p, (const float *)input, output);
    } else {
        cast_from_integer(p, input, output);
    }
}
