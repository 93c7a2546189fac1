/* The smallest application around a generated model: fill the input, run
 * the model, print the most likely class.  The README's "The C output"
 * section generates the model into out/kws and compiles this file with every
 * .c file there.
 */
#include <stdio.h>
#include <string.h>

#include "tiny_kws_int8.h"

int main(void)
{
    /* A real device writes its features here; silence is the zero point. */
    memset(tiny_kws_int8_input(0), TINY_KWS_INT8_INPUT0_ZERO_POINT, tiny_kws_int8_input_bytes(0));
    if (tiny_kws_int8_invoke() != 0) {
        fprintf(stderr, "invoke failed\n");
        return 1;
    }

    const int8_t *scores = (const int8_t *)tiny_kws_int8_output(0);
    size_t best = 0;
    for (size_t i = 1; i < TINY_KWS_INT8_OUTPUT0_ELEMENTS; ++i)
        if (scores[i] > scores[best]) best = i;
    float probability = TINY_KWS_INT8_OUTPUT0_SCALE * (float)(scores[best] - TINY_KWS_INT8_OUTPUT0_ZERO_POINT);
    printf("class %u, probability %.3f, arena %u bytes\n", (unsigned)best, (double)probability,
           (unsigned)TINY_KWS_INT8_ARENA_SIZE);
    return 0;
}
