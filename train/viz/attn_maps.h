/* attn_maps.h — attention weights as a grid of heatmaps in one PNG.
 *
 * The grid has rows x cols cells, filled row by row from maps[0 .. rows*cols).
 * Each cell shows one map: its title on top ("layer 0 head 1"), the axis title
 * "key position:token" over the key labels along the top (rotated), "query
 * position:token" (rotated) beside the query labels down the left, and a heatmap
 * of weights[i][j] (query i, key j), colored with viridis on the fixed scale 0..1
 * (0 dark purple, 1 yellow), so cells compare directly; signed maps (range > 0,
 * the gradients of `qkv attn --grads`) go blue (-range), white (0), red (+range). The header above the
 * grid carries the caption (two lines at most, split at a newline), a 0..1 color
 * bar and, when given, a warning line in red. Labels are cut to 7 characters
 * (callers label a token with its position, "3:7", so repeated tokens differ).
 *
 * Every cell has the same size, which depends only on the largest token count
 * among the maps; qkv_attn_grid_size gives the image size, except that the image
 * widens when the caption and the color bar need more room than the cells. A map with NULL
 * weights leaves its cell blank. Returns 0 or -1 with qkv_last_error() (bad
 * path, more than QKV_ATTN_MAX_TOKENS tokens).
 */
#ifndef QKV_ATTN_MAPS_H
#define QKV_ATTN_MAPS_H

#define QKV_ATTN_MAX_TOKENS 256

typedef struct qkv_attn_map {
    char title[48];
    const float *weights;               /* [tq, tk] row-major, or NULL */
    int tq, tk;
    const char *const *q_labels;        /* tq labels */
    const char *const *k_labels;        /* tk labels */
    /* Signed values (gradients: `qkv attn --grads`): range > 0 colors -range..range
     * blue, white, red instead of 0..1 viridis (the grid's color bar follows the
     * first map's); the axis titles replace "query/key position:token" when given. */
    float range;
    const char *q_axis, *k_axis;
} qkv_attn_map;

/* Image size of a grid of rows x cols cells of maps with at most `tokens` tokens a side. */
void qkv_attn_grid_size(int rows, int cols, int tokens, int *width, int *height);

/* warning: NULL, or one line drawn in red under the caption (e.g. an input the
 * model was not trained on). */
int qkv_attn_grid_png(const char *path, const char *caption, const char *warning, const qkv_attn_map *maps,
                      int rows, int cols);

#endif
