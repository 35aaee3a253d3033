/* example.c — the README's C example, kept compiling by `make test`. */
#include <stdio.h>

#include "qkv.h"

int main(void) {
    qkv_params params = {0};                 /* the model's parameters, named */
    qkv_rng rng = qkv_rng_make(42);
    qkv_linear fc;                           /* y = x W^T + b, W is [out, in] */
    qkv_linear_init(&fc, &params, "fc", 2, 3, 1, &rng);
    qkv_optimizer_config sgd = {.kind = QKV_OPT_SGD, .lr = 0.1f};
    qkv_optimizer opt;                       /* or QKV_OPT_ADAMW, .weight_decay */
    qkv_optimizer_init(&opt, &sgd, &params); /* sizes its state for params */

    qkv_tape *tape = qkv_tape_create(42);    /* arena + list of nodes */
    qkv_tensor *x = qkv_tape_tensor(tape, 2, (int[]){4, 2});
    qkv_fill_normal(x->data, x->size, &rng, 0.0f, 1.0f);
    int32_t labels[4] = {0, 1, 2, 1};

    qkv_tensor *loss = qkv_cross_entropy(tape, qkv_linear_forward(tape, &fc, x), labels, -1, NULL);
    qkv_params_zero_grad(&params);
    qkv_backward(tape, loss);                /* walks the tape in reverse */
    qkv_tape_print(tape, stdout);            /* affine, cross_entropy */
    qkv_optimizer_step(&opt, &params, sgd.lr);
    printf("loss %.4f\n", loss->data[0]);
    qkv_tape_reset(tape);                    /* frees every activation at once */

    qkv_tape_free(tape);
    qkv_optimizer_free(&opt);
    qkv_params_free(&params);
    return 0;
}
