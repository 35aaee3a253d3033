/* train_flags.c — the flags every train command shares. See train_flags.h. */
#include "cli/train_flags.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "train/dist.h"
#include "train/trainer_fields.h"

int qkv_common_args(qkv_arg *args, qkv_trainer_config *trainer) {
    return qkv_args_from_fields(qkv_trainer_fields, qkv_trainer_n_fields, trainer, args);
}

void qkv_print_final(const char *task, const qkv_train_result *r) {
    printf("final: task=%s steps=%ld loss=%.4f", task, r->steps_done, r->final_loss);
    for (int i = 0; i < r->metrics.n; i++) printf(" %s=%.4f", r->metrics.key[i], r->metrics.value[i]);
    printf(" seconds=%.2f steps_per_s=%.1f", r->seconds, r->steps_per_second);
    if (r->checkpoint_bytes > 0) printf(" checkpoint_mb=%.2f", r->checkpoint_bytes / 1e6);
    putchar('\n');
}

int qkv_train_exit(int rc, const char *task, const qkv_train_result *result) {
    if (rc == 0) {
        if (task) qkv_print_final(task, result);
        return 0;
    }
    if (result->interrupted && qkv_dist_rank() != 0) return 128 + result->interrupted; /* rank 0 says it */
    fprintf(stderr, "qkv: %s\n", qkv_last_error());
    if (result->interrupted) return 128 + result->interrupted;
    return result->nonfinite ? 3 : 2;
}
