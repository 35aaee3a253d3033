/* pieces.h — a data set made in pieces that a stop request can end between.
 *
 * Making a large data set (thousands of point clouds, of images, a BPE
 * vocabulary's merges) can take minutes; a program that answers signals
 * (train/interrupt.h) must see one within a piece. data/ does not know about
 * signals: the caller passes a stop callback (the trainer's qkv_interrupt_poll),
 * asked between two pieces, never before the first or after the last (so a set
 * of one piece asks nothing, and the polls a run makes elsewhere keep their
 * numbers). A piece is a fixed number of items chosen by the data kind so that
 * it takes well under a second (points.h, detect.h, tokenizer.h say how many);
 * the items of a piece may be made in parallel. Cutting the work into pieces
 * changes no bit: every item draws from its own stream.
 */
#ifndef QKV_DATA_PIECES_H
#define QKV_DATA_PIECES_H

/* Nonzero: stop (the value is returned as is). NULL: never stop. */
typedef int (*qkv_data_stop)(void);

/* make(ctx, first, n) for the items [0, count) in pieces of `piece` (>= 1)
 * items, in order, asking stop between two pieces: 0 when every item was made,
 * else stop's nonzero answer (the later pieces are not made). */
int qkv_data_pieces(long count, long piece, void (*make)(void *ctx, long first, long n), void *ctx,
                    qkv_data_stop stop);

/* The pieces qkv_data_pieces cuts count items into: ceil(count / piece). */
long qkv_data_piece_count(long count, long piece);

#endif
