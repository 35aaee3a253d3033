/* checks_position.c — gradient-check cases for qkv_rope (ops_position.c): both pair
 * layouts, a partial rotary fraction (with rounding down to an even count), an
 * offset, explicit positions, per-row positions, p-RoPE's kept share, 2-D, 3-D
 * and 4-D inputs, size-1 dims and d = 2; and for qkv_fire_distance (gradients
 * to c and l_scale, with L above and below the query positions). The other
 * helpers in positions.h make constant tables and have no gradient. */
#include "core/check/gradcheck.h"
#include "core/ops/ops_position.h"
#include "core/check/gradcheck.h"

/* FIRE's distance: in[0] = c [1], in[1] = l_scale [1]; ctx the sizes and l_init. */
typedef struct { int tq, tk; float l_init; } fire_ctx;
static qkv_tensor *fire_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    const fire_ctx *f = ctx;
    return qkv_fire_distance(tape, in[0], in[1], f->tq, f->tk, f->l_init);
}

static qkv_tensor *rope_fn(qkv_tape *tape, qkv_tensor *const *in, const void *ctx) {
    return qkv_rope(tape, in[0], ctx);
}

/* Positions of a KV cache with a gap, for T = 5. */
static const int32_t cache_slots[5] = {12, 13, 14, 20, 3};

/* Per-row positions of 2 batch rows, stride 6 (one spare entry each). */
static const int32_t row_slots[12] = {0, 3, 4, 9, 11, 30, 2, 5, 6, 7, 12, 40};

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
    {.name = "rope [2,3,5,8] p-rope keep 0.75 (3 of 4 pairs)", ONE_INPUT(4, 2, 3, 5, 8), ROPE(.keep_fraction = 0.75f)},
    {.name = "rope [2,5,12] split halves, p-rope keep 0.5, offset 3", ONE_INPUT(3, 2, 5, 12),
     ROPE(.split_halves = 1, .keep_fraction = 0.5f, .offset = 3)},
    {.name = "rope [2,3,5,8] per-row positions", ONE_INPUT(4, 2, 3, 5, 8),
     ROPE(.positions = row_slots, .positions_stride = 6)},
    {.name = "rope [2,5,8] per-row positions, halves, p-rope 0.5", ONE_INPUT(3, 2, 5, 8),
     ROPE(.positions = row_slots, .positions_stride = 6, .split_halves = 1, .keep_fraction = 0.5f)},
    {.name = "fire_distance [6,6] L in reach (l_init 4)", .fn = fire_fn, .n_inputs = 2, .ndim = {1, 1},
     .shape = {{1}, {1}}, .init = {QKV_INIT_POSITIVE, QKV_INIT_POSITIVE}, .ctx = &(const fire_ctx){6, 6, 4.0f}},
    {.name = "fire_distance [2,7] cached queries, l_init 512", .fn = fire_fn, .n_inputs = 2, .ndim = {1, 1},
     .shape = {{1}, {1}}, .init = {QKV_INIT_POSITIVE, QKV_INIT_POSITIVE}, .ctx = &(const fire_ctx){2, 7, 512.0f}},
    {.name = "fire_distance [1,1] size-1", .fn = fire_fn, .n_inputs = 2, .ndim = {1, 1},
     .shape = {{1}, {1}}, .init = {QKV_INIT_POSITIVE, QKV_INIT_POSITIVE}, .ctx = &(const fire_ctx){1, 1, 3.0f}},
};

const qkv_gradcheck_group qkv_checks_position = {"position", cases, (int)(sizeof cases / sizeof cases[0])};
