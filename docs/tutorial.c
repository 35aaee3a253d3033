/* tutorial.c — docs/tutorial.md: a one-layer transformer learns to reverse 6 symbols. */
#include <stdio.h>

#include "qkv.h"

int main(void) {
    qkv_seq_config data = {QKV_TASK_REVERSE, QKV_ARCH_ENCODER, 8, 6, 6};  /* vocab 8, length 6 */
    int tokens = qkv_seq_token_count(&data), dim = 32, steps = 600;
    qkv_rng rng = qkv_rng_make(1);
    qkv_params params = {0};
    qkv_tensor *embed = qkv_params_new(&params, "embed", 2, (int[]){tokens, dim});
    qkv_fill_normal(embed->data, embed->size, &rng, 0.0f, 1.0f);
    qkv_stack_config stack = {.block = {.d_model = dim, .n_heads = 4, .d_ff = 4 * dim, .activation = QKV_ACT_GELU},
                              .n_layers = 1, .positions = QKV_POS_LEARNED, .max_len = 6};
    qkv_encoder encoder;                                   /* positions + 1 block + final norm */
    qkv_encoder_init(&encoder, &params, "enc", &stack, 0, &rng);
    qkv_linear head;                                       /* dim -> one logit per token */
    qkv_linear_init(&head, &params, "head", dim, tokens, 1, &rng);
    qkv_optimizer_config adam = {.kind = QKV_OPT_ADAM, .lr = 3e-3f};
    qkv_optimizer opt;
    qkv_optimizer_init(&opt, &adam, &params);

    qkv_tape *tape = qkv_tape_create(1);
    qkv_seq_batch batch = {0};
    float loss = 0.0f;
    for (int step = 0; step < steps; step++) {
        qkv_seq_make_batch(&data, 7, (uint64_t)step * 32, 32, &batch);   /* examples 32s .. 32s+31 */
        qkv_tensor *x = qkv_embedding(tape, embed, batch.src, 2, (int[]){32, 6});
        qkv_tensor *logits = qkv_linear_forward(tape, &head, qkv_encoder_forward(tape, &encoder, x, NULL));
        qkv_tensor *l = qkv_cross_entropy(tape, logits, batch.tgt_out, QKV_SEQ_IGNORE, NULL);
        qkv_params_zero_grad(&params);
        qkv_backward(tape, l);                             /* gradients of every parameter */
        qkv_optimizer_step(&opt, &params, adam.lr);
        loss = l->data[0];
        qkv_tape_reset(tape);                              /* frees the step's activations */
        if (step % 50 == 0) printf("step %3d  loss %.4f\n", step, loss);
    }
    printf("final loss %.4f\n", loss);
    qkv_seq_batch_free(&batch);
    qkv_tape_free(tape);
    qkv_optimizer_free(&opt);
    qkv_encoder_free(&encoder);
    qkv_params_free(&params);
    return 0;
}
