/* pieces.c — long data-set work in pieces. See pieces.h. */
#include "data/pieces.h"

#include "core/error.h"

long qkv_data_piece_count(long count, long piece) {
    QKV_CHECK(count >= 0 && piece >= 1, "data_piece_count: %ld items in pieces of %ld", count, piece);
    return (count + piece - 1) / piece;
}

int qkv_data_pieces(long count, long piece, void (*make)(void *ctx, long first, long n), void *ctx,
                    qkv_data_stop stop) {
    QKV_CHECK(count >= 0 && piece >= 1 && make, "data_pieces: %ld items in pieces of %ld", count, piece);
    for (long first = 0; first < count; first += piece) {
        int stopped = first > 0 && stop ? stop() : 0;   /* between two pieces only */
        if (stopped) return stopped;
        make(ctx, first, count - first < piece ? count - first : piece);
    }
    return 0;
}
