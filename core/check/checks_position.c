/* checks_position.c — gradient-check cases for qkv_rope (ops_position.c): both pair
 * layouts, a partial rotary fraction (with rounding down to an even count), an
 * offset, explicit positions, 2-D, 3-D and 4-D inputs, size-1 dims and d = 2. The
 * other helpers in positions.h make constant tables and have no gradient. */
#include "core/check/gradcheck.h"
#include "core/ops/ops_position.h"
#include "core/check/gradcheck.h"

static qkv_tensor *rope_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    return qkv_rope(tape, in[0], ctx);
}

/* Positions of a KV cache with a gap, for T = 5. */
static const int32_t cache_slots[5] = {12, 13, 14, 20, 3};

#define ROPE(...) .ctx = &(const qkv_rope_opts){__VA_ARGS__}
#define ONE_INPUT(nd, ...) .fn = rope_fn, .n_inputs = 1, .ndim = {nd}, .shape = {{__VA_ARGS__}}

static const qkv_gradcheck_case cases[] = {
    {.name = "rope [2,3,5,8] interleaved", ONE_INPUT(4, 2, 3, 5, 8)},
    {.name = "rope [2,3,5,8] split halves", ONE_INPUT(4, 2, 3, 5, 8), ROPE(.split_halves = 1)},
    {.name = "rope [2,3,5,8] fraction 0.5", ONE_INPUT(4, 2, 3, 5, 8), ROPE(.rotary_fraction = 0.5f)},
    {.name = "rope [2,3,5,8] offset 7", ONE_INPUT(4, 2, 3, 5, 8), ROPE(.offset = 7)},
    {.name = "rope [2,3,5,8] explicit positions", ONE_INPUT(4, 2, 3, 5, 8), ROPE(.positions = cache_slots)},
    {.name = "rope [4,6] 2-D", ONE_INPUT(2, 4, 6)},
    {.name = "rope [3,2] d=2", ONE_INPUT(2, 3, 2), ROPE(.offset = 2)},
    {.name = "rope [2,4,6] split, fraction 0.5 -> 2 dims, base 100", ONE_INPUT(3, 2, 4, 6),
     ROPE(.split_halves = 1, .rotary_fraction = 0.5f, .base = 100.0f)},
    {.name = "rope [1,1,1,4] size-1 dims, offset 3", ONE_INPUT(4, 1, 1, 1, 4), ROPE(.offset = 3)},
    {.name = "rope [2,1,5,10] split, fraction 0.75, positions", ONE_INPUT(4, 2, 1, 5, 10),
     ROPE(.split_halves = 1, .rotary_fraction = 0.75f, .positions = cache_slots)},
};

const qkv_gradcheck_group qkv_checks_position = {"position", cases, (int)(sizeof cases / sizeof cases[0])};
